#!/usr/bin/env bash
# make lint: gofmt, go vet (native, and wasip1 for the modules that build plugins), staticcheck and
# "go mod tidy would change nothing" over every Go module in the repository, then a check that the
# documentation names no path, make target or command flag that no longer exists (hack/docrefs),
# and that every edit of make mutate still applies (hack/mutate -check).
# staticcheck is fetched from the Go module proxy by version.
set -euo pipefail
cd "$(dirname "$0")/.."
STATICCHECK=${STATICCHECK:-honnef.co/go/tools/cmd/staticcheck@v0.8.2}
APIDIFF=${APIDIFF:-golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4}
bad=$(git ls-files -co --exclude-standard '*.go' | grep -v '^hack/k8s-tools/' | xargs -r gofmt -l)
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; exit 1; fi
for mod in $(git ls-files -co --exclude-standard 'go.mod' '**/go.mod' | grep -v '^hack/k8s-tools/'); do
  dir=$(dirname "$mod")
  echo "== $dir: go mod tidy -diff"
  if ! (cd "$dir" && go mod tidy -diff); then
    echo "$dir: go.mod or go.sum is not tidy; run (cd $dir && go mod tidy)"; exit 1
  fi
  echo "== $dir: go vet, staticcheck"
  (cd "$dir" && GOOS= GOARCH= go vet ./... && go run "$STATICCHECK" ./...)
  if [ "$dir" = . ]; then
    echo "== .: go vet, staticcheck (-tags e2e: the real-parts tier)"
    go vet -tags e2e ./... && go run "$STATICCHECK" -tags e2e ./...
    # Hooks run on Linux, but plugin authors run the host's author commands (run, plugin) on
    # their own machines.
    echo "== .: the host builds for macOS and Windows"
    for os in darwin windows; do GOOS=$os GOARCH=amd64 go build -o /dev/null ./host/cmd/openstack-sync; done
  fi
  case "$dir" in
    pdk|plugins-wasm|*/guests)
      echo "== $dir: go vet (wasip1)"
      (cd "$dir" && GOOS=wasip1 GOARCH=wasm go vet ./...) ;;
  esac
done
# The PDK is a public API: third parties build plugins against it. Its recorded API is the pdk/
# folder at the commit pdk/API_BASELINE names; an incompatible change fails until the baseline is
# moved on purpose (docs/contributing.md, "The PDK's API").
echo "== pdk: API compatibility with pdk/API_BASELINE"
base=$(tr -d "[:space:]" < pdk/API_BASELINE)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
git archive "$base" pdk | tar -x -C "$work"
(cd "$work/pdk" && go run "$APIDIFF" -m -w "$work/base.api" github.com/openstack-sync/openstack-sync/pdk)
changes=$(cd pdk && go run "$APIDIFF" -m -incompatible "$work/base.api" github.com/openstack-sync/openstack-sync/pdk 2>&1 |
  grep -v '^Ignoring internal package' || true)
if [ -n "$changes" ]; then
  echo "pdk: incompatible API changes since $base:"; echo "$changes"
  echo "If they are deliberate, record the new API: git rev-parse HEAD > pdk/API_BASELINE (after committing them)"
  exit 1
fi
echo "== docs: stale references"
go run ./hack/docrefs
# make mutate takes half an hour, so it is not run here; an edit that no longer applies to the code
# it breaks fails now instead of the next time someone runs it (docs/reliability.md).
echo "== mutate: every edit of make mutate still applies"
go run ./hack/mutate -check
echo "lint: ok"
