#!/usr/bin/env bash
# make lint: gofmt, go vet (native, and wasip1 for the modules that build plugins) and staticcheck
# over every Go module in the repository. staticcheck is fetched from the Go module proxy by version.
set -euo pipefail
cd "$(dirname "$0")/.."
STATICCHECK=${STATICCHECK:-honnef.co/go/tools/cmd/staticcheck@v0.8.2}
bad=$(git ls-files -co --exclude-standard '*.go' | grep -v '^hack/k8s-tools/' | xargs -r gofmt -l)
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; exit 1; fi
for mod in $(git ls-files -co --exclude-standard 'go.mod' '**/go.mod' | grep -v '^hack/k8s-tools/'); do
  dir=$(dirname "$mod")
  echo "== $dir: go vet, staticcheck"
  (cd "$dir" && GOOS= GOARCH= go vet ./... && go run "$STATICCHECK" ./...)
  if [ "$dir" = . ]; then
    echo "== .: go vet, staticcheck (-tags e2e: the real-parts tier)"
    go vet -tags e2e ./... && go run "$STATICCHECK" -tags e2e ./...
  fi
  case "$dir" in
    pdk|plugins-wasm|*/guests)
      echo "== $dir: go vet (wasip1)"
      (cd "$dir" && GOOS=wasip1 GOARCH=wasm go vet ./...) ;;
  esac
done
echo "lint: ok"
