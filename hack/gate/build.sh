#!/usr/bin/env bash
# Builds the gate of warm start (this folder, standard library only) as a static binary, once per
# input, into a cache outside the clone, and prints its path on the last line. The gate image
# (hack/image/build-gate.sh) and the gate's tests (tests/unit/gate) use it. Static (CGO_ENABLED=0):
# it runs in any image, with no libc, as any user, on a read-only root.
set -euo pipefail
gate=$(cd "$(dirname "$0")" && pwd)
stamp=$( (cd "$gate" && find . -type f | LC_ALL=C sort | xargs cat; go version) | sha256sum | cut -c1-12)
out=${XDG_CACHE_HOME:-$HOME/.cache}/punctual/gate/$stamp
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
if [[ ! -x "$out/gate" ]]; then
  printf '[gate] building the gate ...\n' >&2
  (cd "$gate" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/gate.partial" .)
  mv "$out/gate.partial" "$out/gate"
fi
echo "$out/gate"
