// CoreDNS with only the plugins the local cluster's real node uses: the cluster's Services and
// Pods by name (kubernetes), nothing forwarded anywhere (no forward plugin: there is no upstream).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
	"github.com/coredns/coredns/coremain"
)

// The order the plugins handle a query in (a subset of CoreDNS's plugin.cfg, in its order).
var directives = []string{"bind", "ready", "health", "errors", "cache", "kubernetes"}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
