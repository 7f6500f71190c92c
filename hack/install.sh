#!/usr/bin/env bash
# Installs everything the project needs on a fresh machine, idempotently and quickly when done:
# uv and the locked Python environment, the tests' Node packages (hack/node: BullMQ), every
# program hack/programs.tsv lists (Debian's packages: redis-server, and for the real node
# containerd, runc, the CNI plugins, iptables, nftables, umoci, skopeo and the image tools), the
# Go-built local control plane and the Go-built tools the tests run on the chart (promtool,
# kubeconform: hack/build-go-tools.sh) with the CRDs of the kinds it renders from other projects
# (hack/build-chart-crds.sh) and cert-manager (hack/cert-manager), all cached outside the clone,
# and the real node's images (hack/image/build-node-images.sh). It ends by checking that every
# listed program is there, and fails naming the ones that are not.
# PUNCTUAL_SKIP_CONTROL_PLANE=1 installs only the "base" part (lint and unit tests).
#
# Two steps, both by default: `hack/install.sh packages` (uv, the Python environment, the Node
# packages, Debian's packages) and `hack/install.sh build` (every Go build, the images, then the
# check), so that CI (.ci/run) prints the time of each apart: the builds are most of a cold
# install.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-all}
case $steps in
  all | packages | build) ;;
  *) echo "usage: hack/install.sh [all|packages|build]" >&2; exit 2 ;;
esac
started=$(date +%s)
say() { printf '[install %4ds] %s\n' "$(( $(date +%s) - started ))" "$*" >&2; }

parts=(base)
if [[ "${PUNCTUAL_SKIP_CONTROL_PLANE:-}" != 1 ]]; then parts+=(cluster); fi

# present PROGRAM SOURCE: a name on PATH, an absolute path that is executable, a program of the
# project's Python environment, or a Go-built tool in its cache (the script only prints its path
# once it is built).
present() {
  local program=$1 source=$2
  if [[ $source == uv.lock ]]; then [[ -x .venv/bin/$program ]]
  elif [[ $source == go:* ]]; then hack/build-go-tools.sh "$program" >/dev/null 2>&1
  elif [[ $program == /* ]]; then [[ -x $program ]]
  else command -v "$program" >/dev/null 2>&1
  fi
}

# listed: "program<TAB>source<TAB>used by" for each program of the parts being installed.
listed() {
  local program source part used_by
  while IFS=$'\t' read -r program source part used_by; do
    [[ -z $program || $program == \#* ]] && continue
    [[ " ${parts[*]} " == *" $part "* ]] || continue
    printf '%s\t%s\t%s\n' "$program" "$source" "$used_by"
  done < hack/programs.tsv
}

install_packages() {
  if ! command -v uv >/dev/null 2>&1; then
    say "installing uv"
    python3 -m pip install --quiet --disable-pip-version-check uv
  fi
  say "syncing the Python environment from uv.lock"
  uv sync --frozen --quiet

  # The Node packages of the tests' workers (BullMQ), from hack/node/package-lock.json: npm ci,
  # without install scripts, only when the lock changed since the last install (without npm, a
  # prerequisite, the check at the end names it).
  if command -v npm >/dev/null 2>&1 \
    && ! cmp -s hack/node/package-lock.json hack/node/node_modules/.installed-lock 2>/dev/null; then
    say "installing the Node packages of hack/node from its package-lock.json"
    (cd hack/node && npm ci --ignore-scripts --no-audit --no-fund --silent)
    cp hack/node/package-lock.json hack/node/node_modules/.installed-lock
  fi

  local -a packages=()
  while IFS=$'\t' read -r program source _; do
    if [[ $source == debian:* ]] && ! present "$program" "$source"; then
      packages+=("${source#debian:}")
    fi
  done < <(listed)
  if (( ${#packages[@]} )); then
    mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
    say "installing ${packages[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
    # The packages start system services; the project starts its own servers on free ports, and
    # each real node runs its own containerd.
    for service in redis-server redis-sentinel containerd; do (service "$service" stop || true) >/dev/null 2>&1; done
  fi
}

build() {
  # The small Go programs the unit tests run: built now, so that no test waits for a build or
  # fetches a module (cronref's robfig/cron comes from the Go module proxy).
  say "building the warm-start gate and the cron reference"
  hack/gate/build.sh >/dev/null
  hack/cronref/build.sh >/dev/null

  if [[ " ${parts[*]} " == *" cluster "* ]]; then
    say "building the local control plane"
    hack/build-control-plane.sh >/dev/null
    say "building the Go tools the tests run on the chart"
    hack/build-go-tools.sh >/dev/null
    say "making the Prometheus Operator's and cert-manager's CRDs from their Go modules"
    hack/build-chart-crds.sh >/dev/null
    say "building cert-manager's controllers and cainjector from its Go module"
    hack/cert-manager/build.sh >/dev/null
    say "building the real node's images"
    hack/image/build-node-images.sh >/dev/null
  fi
}

if [[ $steps != build ]]; then install_packages; fi
if [[ $steps == packages ]]; then say "packages installed"; exit 0; fi
build

missing=()
while IFS=$'\t' read -r program source used_by; do
  present "$program" "$source" || missing+=("$program (from $source; $used_by)")
done < <(listed)
if (( ${#missing[@]} )); then
  say "these programs are still missing after the install (hack/programs.tsv):"
  printf '[install]   %s\n' "${missing[@]}" >&2
  exit 1
fi
say "ready"
