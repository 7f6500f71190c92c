#!/usr/bin/env bash
# Builds the real node's images without a registry or a Docker daemon, once per input:
#   localhost/punctual-pause:local     the pod sandbox (hack/image/node/pause)
#   localhost/punctual-workload:local  what the examples and tests run (hack/image/node/workload)
# Each is a static Go program in an otherwise empty image (lib.sh's pack_oci). Prints the folder
# holding pause.tar and workload.tar on its last line; reused when present.
# The other images built here are the operator's and its gate's (`make image`: build.sh and
# build-gate.sh) and the bundled Redis's for the chart on the real node (build-redis.sh);
# docs/image.md lists all five.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
node=$image_dir/node
stamp=$( (cd "$node" && find . -type f | LC_ALL=C sort | xargs cat; go version; cat "$image_dir/build-node-images.sh" "$image_dir/lib.sh") | sha256sum | cut -c1-12)
out=${XDG_CACHE_HOME:-$HOME/.cache}/punctual/node-images/$stamp
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9

image() {  # image NAME USER
  local name=$1 user=$2 work
  if [[ -f "$out/$name.tar" ]]; then return; fi
  printf '[images] building localhost/punctual-%s:local ...\n' "$name" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  (cd "$node" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/$name" "./$name")
  install_program() { install -m 0755 "$work/$name" "$1/$name"; }
  pack_oci "$out/$name.tar" "localhost/punctual-$name:local" install_program \
    --config.entrypoint "/$name" --config.user "$user"
}

image pause 65535:65535
image workload 65534:65534
echo "$out"
