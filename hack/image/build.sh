#!/usr/bin/env bash
# Builds the operator image from the project's Dockerfile without a Docker daemon (`make image`),
# and prints the path of its OCI archive on the last line. Load it into containerd with
#   ctr -n k8s.io images import "$(make image | tail -1)"      # -> docker.io/library/punctual:<version>
#
# No registry is reachable here, so the base is made from Debian's packages (hack/image/base.sh:
# bookworm, whose python3 is 3.11) and handed to the Dockerfile as PYTHON_IMAGE; `docker build .`
# keeps the public python:3.11-slim-bookworm. buildah builds with chroot isolation (no daemon, no
# user namespaces) and the overlay storage driver: vfs works too (PUNCTUAL_BUILDAH_DRIVER=vfs) but
# copies the whole tree at every step, about 4 minutes a build against half a minute.
#
# Everything lands in ~/.cache/punctual/images/ (outside the clone, so a fresh clone on the same
# machine reuses it), keyed by a hash of the inputs:
#   base-<hash>.tar             the base's root filesystem (hash of base.sh and lib.sh)
#   punctual-<version>-<hash>.oci.tar
#                               the archive (hash of the Dockerfile, .dockerignore, pyproject.toml,
#                               uv.lock, README.md, operator/, base.sh and this script)
#   storage-<driver>/           buildah's store (layer cache: a change to operator/ only rebuilds
#                               the project's layer)
# An archive whose hash is present is reused as is; a lock keeps two runs from racing.
# The host's CA bundle is bind-mounted into the build's RUN steps (and named to pip and uv by
# build arguments) for machines whose egress re-signs TLS; it never enters a layer.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$image_dir/install-tools.sh"
root=$(cd "$image_dir/../.." && pwd)
cache=$image_cache
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

started=$(date +%s)
step() { printf '[image %4ds] %s\n' "$(( $(date +%s) - started ))" "$*" >&2; }
hash_files() { (cd "$root" && sha256sum "$@" | sha256sum | cut -c1-16); }

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml" | head -1)
# The files the operator's stages copy from the build context, in a stable order (the gate's
# sources, also in the context, are the `gate` target's only: build-gate.sh builds that image).
mapfile -t context < <(cd "$root" && find operator -type f -not -path '*/__pycache__/*' \
  -not -name '*.pyc' | LC_ALL=C sort)
input_hash=$(hash_files Dockerfile .dockerignore pyproject.toml uv.lock README.md \
  "${context[@]}" hack/image/base.sh hack/image/lib.sh hack/image/build.sh)
base_hash=$(hash_files hack/image/base.sh hack/image/lib.sh)
archive=$cache/punctual-$version-$input_hash.oci.tar
if [[ -s "$archive" ]]; then
  step "reusing the image built from these inputs"
  echo "$archive"
  exit 0
fi

driver=${PUNCTUAL_BUILDAH_DRIVER:-overlay}
buildah=(buildah --storage-driver "$driver" --root "$cache/storage-$driver" --runroot "$cache/run")
base_ref=localhost/punctual-base:$base_hash
if ! "${buildah[@]}" inspect --type image "$base_ref" >/dev/null 2>&1; then
  base_tar=$cache/base-$base_hash.tar
  if [[ ! -s "$base_tar" ]]; then
    step "making the base from Debian bookworm's packages ..."
    if ! "$image_dir/base.sh" "$base_tar.partial" >"$cache/base.log" 2>&1; then
      cat "$cache/base.log" >&2
      exit 1
    fi
    mv "$base_tar.partial" "$base_tar"
  fi
  step "importing the base as $base_ref"
  container=$("${buildah[@]}" from scratch)
  "${buildah[@]}" add --quiet "$container" "$base_tar" / >/dev/null
  "${buildah[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --cmd python3 "$container"
  "${buildah[@]}" commit --quiet --rm "$container" "$base_ref" >/dev/null
fi

step "building punctual:$version from the Dockerfile ..."
ca=/etc/ssl/certs/ca-certificates.crt
"${buildah[@]}" build --quiet --isolation chroot --pull=never --layers \
  --build-arg "PYTHON_IMAGE=$base_ref" --build-arg "VERSION=$version" \
  --volume "$ca:/run/build-ca.crt:ro" \
  --build-arg PIP_CERT=/run/build-ca.crt --build-arg SSL_CERT_FILE=/run/build-ca.crt \
  --tag "localhost/punctual:$version" --file "$root/Dockerfile" "$root" >/dev/null

step "writing the OCI archive"
# The full reference as the archive's ref.name: `ctr images import` tags the image with it,
# docker.io/library/punctual:<version>, what a pod's `image: punctual:<version>` resolves to.
rm -f "$archive.partial"
"${buildah[@]}" push --quiet "localhost/punctual:$version" \
  "oci-archive:$archive.partial:docker.io/library/punctual:$version"
mv "$archive.partial" "$archive"
step "built in $(( $(date +%s) - started ))s"
echo "$archive"
