#!/usr/bin/env bash
# Installs everything the project needs on a fresh machine, idempotently and quickly when done:
# uv and the locked Python environment, redis-server from Debian's packages, the Go-built
# local control plane (cached outside the clone) and the image tools (hack/image/install-tools.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '[install] %s\n' "$*" >&2; }

if ! command -v uv >/dev/null 2>&1; then
  say "installing uv"
  python3 -m pip install --quiet --disable-pip-version-check uv
fi
say "syncing the Python environment from uv.lock"
uv sync --frozen --quiet

if ! command -v redis-server >/dev/null 2>&1; then
  say "installing redis-server from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends redis-server >/dev/null
  # Debian's package starts a system service; the project starts its own servers on free ports.
  (service redis-server stop || true) >/dev/null 2>&1
fi

if [[ "${PUNCTUAL_SKIP_CONTROL_PLANE:-}" != 1 ]]; then
  hack/build-control-plane.sh >/dev/null
  hack/image/install-tools.sh
fi
say "ready"
