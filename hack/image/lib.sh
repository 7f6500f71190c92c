# Shared by the image scripts here (sourced, not run): where images are cached, a root filesystem
# made from Debian bookworm's packages, and packing a root filesystem into an OCI archive. No
# registry is reachable on these machines and there is no Docker daemon: Debian's mmdebstrap,
# umoci and skopeo do it all (hack/image/install-tools.sh installs them).

image_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
image_cache=${PUNCTUAL_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/punctual/images}

# The first 16 hex digits of the sha256 of the given files' contents, this library included:
# a change here must rebuild every image made with it.
inputs_hash() { cat "$@" "$image_dir/lib.sh" | sha256sum | cut -c1-16; }

# debian_rootfs OUT.tar PACKAGE,... : bookworm's Essential packages plus PACKAGE,... as a tar.
#   essential   Debian's Essential packages, without apt: nothing installs at run time.
#   merged-usr  /bin, /lib, /sbin as links into /usr, without the usrmerge package (and so
#               without the Perl it pulls in: 70 MB).
# Documentation, manuals and translations are left out; copyright files stay.
debian_rootfs() {
  local out=$1 packages=$2 mirror=${PUNCTUAL_DEBIAN_MIRROR:-http://deb.debian.org}
  mmdebstrap --mode=root --variant=essential --format=tar --quiet \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --include="$packages" \
    --aptopt='Acquire::Check-Valid-Until "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*.log' \
    bookworm "$out" \
    "deb $mirror/debian bookworm main" \
    "deb $mirror/debian bookworm-updates main" \
    "deb $mirror/debian-security bookworm-security main"
}

# pack_oci ARCHIVE REF FILL [umoci config options...]: an image of one layer, written as an OCI
# archive whose ref.name is REF (what `ctr images import` names it). FILL is a command called
# with the empty root filesystem's path, to put the image's files there. The archive appears
# whole or not at all.
pack_oci() {
  local archive=$1 ref=$2 fill=$3 oci_work  # not `work`: FILL may read its caller's
  shift 3
  oci_work=$(mktemp -d)
  umoci init --layout "$oci_work/oci"
  umoci new --image "$oci_work/oci:local"
  umoci unpack --image "$oci_work/oci:local" "$oci_work/bundle" >/dev/null
  "$fill" "$oci_work/bundle/rootfs"
  umoci repack --image "$oci_work/oci:local" "$oci_work/bundle"
  umoci config --no-history --image "$oci_work/oci:local" --os linux --architecture amd64 "$@"
  skopeo copy --quiet "oci:$oci_work/oci:local" "oci-archive:$archive.partial:$ref"
  mv "$archive.partial" "$archive"
  rm -rf "$oci_work"
}
