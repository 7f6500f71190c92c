#!/usr/bin/env bash
# build-static-go.sh FOLDER NAME: builds the Go program in FOLDER as a static binary (CGO_ENABLED=0:
# it runs in any image, with no libc, as any user, on a read-only root), once per input (the
# folder's files and Go's version), into ~/.cache/punctual/NAME/<stamp>/NAME, outside the clone,
# and prints its path on the last line. A lock keeps two builds of the same input from racing.
# The small Go programs of the harness call it: the gate of warm start (hack/gate) and the cron
# reference of the convert differential (hack/cronref).
set -euo pipefail
source=$(cd "$1" && pwd)
name=$2
stamp=$( (cd "$source" && find . -type f | LC_ALL=C sort | xargs cat; go version) | sha256sum | cut -c1-12)
out=${XDG_CACHE_HOME:-$HOME/.cache}/punctual/$name/$stamp
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
if [[ ! -x "$out/$name" ]]; then
  printf '[%s] building %s ...\n' "$name" "$source" >&2
  (cd "$source" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/$name.partial" .)
  mv "$out/$name.partial" "$out/$name"
fi
echo "$out/$name"
