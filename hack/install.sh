#!/usr/bin/env bash
# Installs everything the project needs on a fresh machine, idempotently and quickly when done:
# uv and the locked Python environment, redis-server from Debian's packages, the Go-built
# local control plane (cached outside the clone), the image tools (hack/image/install-tools.sh),
# and for the real node containerd, runc, the CNI plugins, iptables, umoci and skopeo (Debian's
# packages) and its images (hack/image/build-node-images.sh).
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
  node_packages=()
  for need in containerd:containerd runc:runc /usr/lib/cni/bridge:containernetworking-plugins \
      iptables:iptables umoci:umoci skopeo:skopeo; do
    if ! command -v "${need%%:*}" >/dev/null 2>&1; then node_packages+=("${need#*:}"); fi
  done
  if (( ${#node_packages[@]} )); then
    say "installing ${node_packages[*]} from Debian's packages (the real node)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${node_packages[@]}" >/dev/null
    # The package may start a system containerd; each real node runs its own.
    (service containerd stop || true) >/dev/null 2>&1
  fi
  hack/build-control-plane.sh >/dev/null
  hack/image/install-tools.sh
  hack/image/build-node-images.sh >/dev/null
fi
say "ready"
