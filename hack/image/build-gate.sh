#!/usr/bin/env bash
# Builds the gate image of warm start, punctual-gate:<version> (the version of pyproject.toml, like
# the operator's image), without a registry or a Docker daemon, and prints the path of its OCI
# archive on the last line. `make image` builds it beside the operator's.
#
# The image holds the static gate alone, at /gate (hack/gate/build.sh builds it): the same thing
# as the Dockerfile's `gate` stage (FROM scratch), packed here with lib.sh's pack_oci instead of a
# Go builder image, which no registry here serves. The archive names it
# docker.io/library/punctual-gate:<version>, what a pod's `image: punctual-gate:<version>`
# resolves to. Cached in ~/.cache/punctual/images/ by a hash of the gate's sources, the Go
# version, this script and lib.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$image_dir/install-tools.sh"
root=$(cd "$image_dir/../.." && pwd)
mkdir -p "$image_cache"
exec 9>"$image_cache/.gate.lock"
flock 9
gate=$("$root/hack/gate/build.sh" | tail -1)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml" | head -1)
archive=$image_cache/punctual-gate-$version-$(inputs_hash "$gate" "$image_dir/build-gate.sh").oci.tar
if [[ -s "$archive" ]]; then
  echo "$archive"
  exit 0
fi
printf '[image] packing punctual-gate:%s ...\n' "$version" >&2
install_gate() { install -m 0555 "$gate" "$1/gate"; }
# The user only matters for `docker run`: in a pod the operator's init containers set their own.
pack_oci "$archive" "docker.io/library/punctual-gate:$version" install_gate \
  --config.entrypoint /gate --config.user 65532:65532
echo "$archive"
