#!/usr/bin/env bash
# `make test`: the unit, integration and e2e tests as three phases, each printing its time, so
# the slow or red one is named; `hack/test.sh integration` (or unit, e2e, several) runs only
# those. Every phase runs even when an earlier one failed (one red test should not hide the
# others); the exit status is the first failing phase's. The integration and e2e phases name
# their slowest tests (--durations), so every CI log says where the time went.
set -uo pipefail
cd "$(dirname "$0")/.."
SLOWEST=30
status=0
phase() {
  local name=$1 begun rc
  shift
  begun=$(date +%s)
  echo "[test] $name ..."
  uv run --frozen pytest "$@"
  rc=$?
  echo "[test] $name took $(( $(date +%s) - begun ))s (exit $rc)"
  if (( status == 0 )); then status=$rc; fi
}
phases=("$@")
if (( ${#phases[@]} == 0 )); then phases=(unit integration e2e); fi
for name in "${phases[@]}"; do
  case $name in
    unit) phase unit -m 'not cluster' ;;
    integration) phase integration -m 'cluster and not e2e' --durations="$SLOWEST" ;;
    e2e) phase e2e -m e2e --durations="$SLOWEST" ;;
    *) echo "hack/test.sh: no phase $name (unit, integration, e2e)" >&2; exit 2 ;;
  esac
done
exit "$status"
