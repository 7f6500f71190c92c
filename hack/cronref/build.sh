#!/usr/bin/env bash
# Builds cronref (this folder: CronJob's cron library answering next fire times, for the convert
# differential in tests/unit/api) once per input, into a cache outside the clone, and prints its
# path on the last line. Its one dependency, robfig/cron v3 at the version Kubernetes pins, comes
# from the Go module proxy on the first build and from Go's module cache after.
set -euo pipefail
source=$(cd "$(dirname "$0")" && pwd)
stamp=$( (cd "$source" && find . -type f | LC_ALL=C sort | xargs cat; go version) | sha256sum | cut -c1-12)
out=${XDG_CACHE_HOME:-$HOME/.cache}/punctual/cronref/$stamp
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
if [[ ! -x "$out/cronref" ]]; then
  printf '[cronref] building the cron reference ...\n' >&2
  (cd "$source" && CGO_ENABLED=0 go build -trimpath -o "$out/cronref.partial" .)
  mv "$out/cronref.partial" "$out/cronref"
fi
echo "$out/cronref"
