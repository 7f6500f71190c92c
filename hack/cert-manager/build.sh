#!/usr/bin/env bash
# Builds cert-manager's controllers and CA injector (this folder: cert-manager's packages wired
# as its own commands wire them; main.go says why), cached outside the clone, and prints its path
# on the last line (hack/build-static-go.sh). cert-manager and its dependencies come from the Go
# module proxy on the first build and from Go's module cache after.
set -euo pipefail
exec "$(dirname "$0")/../build-static-go.sh" "$(dirname "$0")" cert-manager
