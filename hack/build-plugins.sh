#!/usr/bin/env bash
# Build every plugin in plugins-wasm/ to <outdir>/<name>.wasm (make plugins: bin/plugins).
#
# Reproducible: -trimpath, stripped, no VCS stamping, so the same sources and Go version give the
# same bytes. A plugin is rebuilt only when the hash of its inputs (every .go/go.mod/go.sum file
# of plugins-wasm and pdk, plus `go version`) differs from the one recorded next to the .wasm.
set -euo pipefail
out=${1:?usage: hack/build-plugins.sh <outdir>}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
GO=${GO:-go}

inputs_hash() {
  (
    cd "$root"
    "$GO" version
    find plugins-wasm pdk -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) ! -name '*_test.go' -print0 |
      LC_ALL=C sort -z | xargs -0 sha256sum
  ) | sha256sum | cut -d' ' -f1
}

hash=$(inputs_hash)
status=0
for dir in "$root"/plugins-wasm/*/; do
  name=$(basename "$dir")
  [ "$name" = internal ] && continue
  [ -f "$dir/main.go" ] || continue
  wasm="$out/$name.wasm"
  stamp="$out/.$name.inputs"
  if [ -f "$wasm" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ]; then
    echo "up to date: $wasm"
    continue
  fi
  echo "building $wasm"
  if (cd "$root/plugins-wasm" && GOOS=wasip1 GOARCH=wasm GOFLAGS=-buildvcs=false \
      "$GO" build -buildmode=c-shared -trimpath -ldflags="-s -w" -o "$wasm.tmp" "./$name"); then
    mv "$wasm.tmp" "$wasm"
    echo "$hash" > "$stamp"
  else
    rm -f "$wasm.tmp" "$stamp"
    echo "failed to build plugin $name" >&2
    status=1
  fi
done
exit $status
