#!/usr/bin/env bash
# Build every C plugin in plugins-c/<name>/*.c to <outdir>/<name>.wasm with clang, lld and
# wasi-libc (hack/c-toolchain.sh installs them): a WASI reactor with the ABI header of
# plugins-c/include. No debug information, so no build path ends up in the module.
set -euo pipefail
out=${1:?usage: hack/build-c-plugins.sh <outdir>}
root=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-clang}
command -v "$CC" >/dev/null || { echo "build-c-plugins: $CC not found; run hack/c-toolchain.sh" >&2; exit 1; }
mkdir -p "$out"
for dir in "$root"/plugins-c/*/; do
  name=$(basename "$dir")
  [ "$name" = include ] && continue
  wasm="$out/$name.wasm"
  echo "building $wasm"
  (cd "$root/plugins-c" && "$CC" --target=wasm32-wasi --sysroot="${WASI_SYSROOT:-/usr}" -mexec-model=reactor \
    -O2 -Wall -Wextra -Werror -Iinclude -Wl,--strip-debug -o "$wasm.tmp" "$name"/*.c)
  mv "$wasm.tmp" "$wasm"
done
