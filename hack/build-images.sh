#!/usr/bin/env bash
# Builds the real node's images without a registry or a Docker daemon, once per input:
#   localhost/punctual-pause:local     the pod sandbox (hack/images/pause)
#   localhost/punctual-workload:local  what the examples and tests run (hack/images/workload)
# Each is a static Go program in an otherwise empty image, packed with umoci and written as an
# OCI archive by skopeo (Debian's packages, hack/install.sh). Prints the folder holding
# pause.tar and workload.tar on its last line; reused when present.
# The other images built here (the operator's, `make image`, and the bundled Redis's for the
# chart on the real node) are in hack/image/; docs/image.md lists all four.
set -euo pipefail
hack=$(cd "$(dirname "$0")" && pwd)
stamp=$( (cd "$hack/images" && find . -type f | LC_ALL=C sort | xargs cat; go version; cat "$hack/build-images.sh") | sha256sum | cut -c1-12)
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
  (cd "$hack/images" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/$name" "./$name")
  umoci init --layout "$work/oci"
  umoci new --image "$work/oci:local"
  umoci unpack --image "$work/oci:local" "$work/bundle" >/dev/null
  install -m 0755 "$work/$name" "$work/bundle/rootfs/$name"
  umoci repack --image "$work/oci:local" "$work/bundle"
  umoci config --no-history --image "$work/oci:local" --os linux --architecture amd64 \
    --config.entrypoint "/$name" --config.user "$user"
  skopeo copy --quiet "oci:$work/oci:local" "oci-archive:$out/$name.tar.partial:localhost/punctual-$name:local"
  mv "$out/$name.tar.partial" "$out/$name.tar"
}

image pause 65535:65535
image workload 65534:65534
echo "$out"
