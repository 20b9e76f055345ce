#!/usr/bin/env bash
# Build the benchmark's native test host and a native build of every plugin into <outdir>
# (docs/benchmarks.md, "The native limit"): the same plugin sources and pdk dispatcher, compiled
# for the host machine with the openstack_sync_native tag and served over pipes (pdk.ServeNative).
set -euo pipefail
out=${1:?usage: hack/build-native-plugins.sh <outdir>}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
GO=${GO:-go}
(cd "$root" && "$GO" build -trimpath -o "$out/openstack-sync-native" ./host/cmd/openstack-sync-native)
overlay=$(mktemp)
trap 'rm -f "$overlay"' EXIT
for dir in "$root"/plugins-wasm/*/; do
  name=$(basename "$dir")
  [ "$name" = internal ] && continue
  [ -f "$dir/main.go" ] || continue
  printf '{"Replace":{"%s":"%s"}}' "${dir}zz_native_main.go" "$root/hack/native-main.go.in" > "$overlay"
  (cd "$root/plugins-wasm" && "$GO" build -trimpath -tags openstack_sync_native -overlay "$overlay" -o "$out/$name" "./$name")
  echo "built $out/$name"
done
