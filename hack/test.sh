#!/usr/bin/env bash
# `make test`: the unit, integration and e2e tests as three phases, each printing its time, so
# the slow or red one is named. Every phase runs even when an earlier one failed (one red test
# should not hide the others); the exit status is the first failing phase's.
set -uo pipefail
cd "$(dirname "$0")/.."
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
phase unit -m 'not cluster'
phase integration -m 'cluster and not e2e'
phase e2e -m e2e
exit "$status"
