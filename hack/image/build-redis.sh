#!/usr/bin/env bash
# Builds the image the chart's bundled Redis runs on the local cluster (redis.bundled.image
# = localhost/punctual-redis:local), and prints the path of its OCI archive on the last line.
# The chart's default, the public redis:<tag>-alpine, is out of reach here (no registry), so this
# one is Debian bookworm's redis-server and redis-cli (what the chart's start command and
# readiness probe call, with sh) on Debian's Essential packages, made with mmdebstrap like the
# operator's base (base.sh) and packed with umoci and skopeo like the node's images
# (hack/build-images.sh). Cached in ~/.cache/punctual/images/ by a hash of this script.
set -euo pipefail
image_dir=$(cd "$(dirname "$0")" && pwd)
"$image_dir/install-tools.sh"
cache=${PUNCTUAL_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/punctual/images}
mkdir -p "$cache"
exec 9>"$cache/.redis.lock"
flock 9
archive=$cache/redis-$(sha256sum "$image_dir/build-redis.sh" | cut -c1-16).oci.tar
if [[ -s "$archive" ]]; then
  echo "$archive"
  exit 0
fi
mirror=${PUNCTUAL_DEBIAN_MIRROR:-http://deb.debian.org}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '[image] making localhost/punctual-redis:local from Debian bookworm'"'"'s packages ...\n' >&2
mmdebstrap --mode=root --variant=essential --format=tar --quiet \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --include=redis-server,redis-tools \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*.log' \
  bookworm "$work/rootfs.tar" \
  "deb $mirror/debian bookworm main" \
  "deb $mirror/debian-security bookworm-security main" >"$work/mmdebstrap.log" 2>&1 \
  || { cat "$work/mmdebstrap.log" >&2; exit 1; }
umoci init --layout "$work/oci"
umoci new --image "$work/oci:local"
umoci unpack --image "$work/oci:local" "$work/bundle" >/dev/null
tar -xf "$work/rootfs.tar" -C "$work/bundle/rootfs"
umoci repack --image "$work/oci:local" "$work/bundle"
umoci config --no-history --image "$work/oci:local" --os linux --architecture amd64 \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.cmd redis-server --config.user 10001:10001
skopeo copy --quiet "oci:$work/oci:local" "oci-archive:$archive.partial:localhost/punctual-redis:local"
mv "$archive.partial" "$archive"
echo "$archive"
