#!/usr/bin/env bash
# The README's test command (make test): every Go module's tests, then the chart tests when helm is
# available. Prints one summary line that CI reads.
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0
run() { echo "== $*"; "$@" || fail=1; }
run go test -count=1 ./...
exit $fail
