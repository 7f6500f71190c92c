#!/usr/bin/env bash
# Builds the image the chart's bundled Redis runs on the local cluster (redis.bundled.image
# = localhost/punctual-redis:local), and prints the path of its OCI archive on the last line.
# The chart's default, the public redis:<tag>-alpine, is out of reach here (no registry), so this
# one is Debian bookworm's redis-server, redis-sentinel and redis-cli (what the chart's start
# commands and readiness probes call, with sh; redis-sentinel for redis.bundled.sentinel.enabled)
# on Debian's Essential packages. Cached in
# ~/.cache/punctual/images/ by a hash of this script and lib.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$image_dir/install-tools.sh"
mkdir -p "$image_cache"
exec 9>"$image_cache/.redis.lock"
flock 9
archive=$image_cache/redis-$(inputs_hash "$image_dir/build-redis.sh").oci.tar
if [[ -s "$archive" ]]; then
  echo "$archive"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '[image] making localhost/punctual-redis:local from Debian bookworm'"'"'s packages ...\n' >&2
debian_rootfs "$work/rootfs.tar" redis-server,redis-sentinel,redis-tools >"$work/mmdebstrap.log" 2>&1 \
  || { cat "$work/mmdebstrap.log" >&2; exit 1; }
unpack_rootfs() { tar -xf "$work/rootfs.tar" -C "$1"; }
pack_oci "$archive" localhost/punctual-redis:local unpack_rootfs \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.cmd redis-server --config.user 10001:10001
echo "$archive"
