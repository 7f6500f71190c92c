// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 through this wrapper
// module because the etcd repository's own main module carries relative replace directives.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
