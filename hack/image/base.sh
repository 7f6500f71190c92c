#!/usr/bin/env bash
# The recipe of the operator image's base, made here from Debian's packages because no container
# registry is reachable: Debian bookworm (whose python3 is 3.11, like python:3.11-slim-bookworm)
# with only what the Dockerfile's two stages use (see lib.sh for what the rest leaves out).
# Writes the root filesystem as a tar to $1.
#
#   passwd        groupadd and useradd for the image's user.
#   python3-venv  `python3 -m venv` with pip in the builder stage (Debian's own python3 refuses
#                 pip installs outside a virtualenv, PEP 668).
#   ca-certificates  for HTTPS targets and Redis over TLS.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
debian_rootfs "$1" passwd,python3,python3-venv,ca-certificates
