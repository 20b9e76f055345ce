#!/usr/bin/env bash
# gofmt and go vet over every Go module in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(git ls-files -co --exclude-standard '*.go' | grep -v '^hack/k8s-tools/' | xargs -r gofmt -l)
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; exit 1; fi
for mod in $(git ls-files -co --exclude-standard 'go.mod' '**/go.mod' | grep -v '^hack/k8s-tools/'); do
  dir=$(dirname "$mod")
  echo "go vet ($dir)"
  (cd "$dir" && GOOS= GOARCH= go vet ./...)
done
