#!/usr/bin/env bash
# Builds the gate of warm start (this folder, standard library only) as a static binary, cached
# outside the clone, and prints its path on the last line (hack/build-static-go.sh). The gate
# image (hack/image/build-gate.sh) and the gate's tests (tests/unit/gate) use it.
set -euo pipefail
exec "$(dirname "$0")/../build-static-go.sh" "$(dirname "$0")" gate
