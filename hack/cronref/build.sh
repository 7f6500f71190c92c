#!/usr/bin/env bash
# Builds cronref (this folder: CronJob's cron library answering next fire times, for the convert
# differential in tests/unit/api), cached outside the clone, and prints its path on the last line
# (hack/build-static-go.sh). Its one dependency, robfig/cron v3 at the version Kubernetes pins,
# comes from the Go module proxy on the first build and from Go's module cache after.
set -euo pipefail
exec "$(dirname "$0")/../build-static-go.sh" "$(dirname "$0")" cronref
