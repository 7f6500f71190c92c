#!/usr/bin/env bash
# Installs the tools `make image` and the image tests use, from Debian's packages, when missing:
# mmdebstrap (the base), buildah (the Dockerfile, daemonless), skopeo (OCI archives), umoci
# (unpacking an image into a runtime bundle) and runc (running that bundle). Idempotent.
set -euo pipefail
packages=(mmdebstrap buildah skopeo umoci runc)
missing=()
for package in "${packages[@]}"; do
  command -v "$package" >/dev/null 2>&1 || missing+=("$package")
done
if (( ${#missing[@]} )); then
  printf '[install] installing %s from Debian'"'"'s packages\n' "${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
