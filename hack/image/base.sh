#!/usr/bin/env bash
# The recipe of the operator image's base, made here from Debian's packages because no container
# registry is reachable: Debian bookworm (whose python3 is 3.11, like python:3.11-slim-bookworm)
# with only what the Dockerfile's two stages use. Writes the root filesystem as a tar to $1.
#
#   essential     Debian's Essential packages, without apt: nothing installs at run time.
#   merged-usr    /bin, /lib, /sbin as links into /usr, without the usrmerge package (and so
#                 without the Perl it pulls in: 70 MB).
#   passwd        groupadd and useradd for the image's user.
#   python3-venv  `python3 -m venv` with pip in the builder stage (Debian's own python3 refuses
#                 pip installs outside a virtualenv, PEP 668).
#   ca-certificates  for HTTPS targets and Redis over TLS.
# Documentation, manuals and translations are left out; copyright files stay.
set -euo pipefail
out=$1
mirror=${PUNCTUAL_DEBIAN_MIRROR:-http://deb.debian.org}
mmdebstrap --mode=root --variant=essential --format=tar --quiet \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --include=passwd,python3,python3-venv,ca-certificates \
  --aptopt='Acquire::Check-Valid-Until "false"' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*.log' \
  bookworm "$out" \
  "deb $mirror/debian bookworm main" \
  "deb $mirror/debian bookworm-updates main" \
  "deb $mirror/debian-security bookworm-security main"
