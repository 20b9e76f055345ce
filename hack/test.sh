#!/usr/bin/env bash
# The README's test command (make test): the tests of every Go module in the repository (the host,
# the PDK, the plugins), the chart tests when helm is available, then one closing summary line.
# HELM may name the helm binary; otherwise PATH and the tools cache of hack/k8s-tools.sh are tried.
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp); trap 'rm -f "$log"' EXIT

if [ -z "${HELM:-}" ]; then
  if command -v helm >/dev/null; then HELM=$(command -v helm)
  else
    cached=$(ls -d "$(go env GOPATH)"/openstack-sync-tools/*/bin/helm 2>/dev/null | tail -n 1)
    [ -n "$cached" ] && HELM=$cached
  fi
fi
[ -n "${HELM:-}" ] && export HELM && echo "helm: $HELM"

fail=0
for dir in . pdk plugins-wasm; do
  echo "== go test ($dir)"
  (cd "$dir" && go test -count=1 ./... 2>&1) | tee -a "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || fail=1
done

passed=$(grep -cE '^ok[[:space:]]' "$log")
failed=$(grep -cE '^(FAIL[[:space:]]|--- FAIL|panic:)' "$log")
[ "$fail" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo
echo "packages: $passed passed, $failed failed"
exit $fail
