#!/usr/bin/env bash
# Installs the C toolchain of the C plugin (plugins-c/): Debian's clang and lld, the wasm32
# compiler-rt builtins and wasi-libc. Prints nothing but apt's output; idempotent (apt-get skips
# what is installed). Needs root, as CI runs. The package names are Debian bookworm's; a newer
# release names the builtins libclang-rt-<N>-dev-wasm32 for its clang, which this script picks.
set -euo pipefail
if command -v clang >/dev/null && command -v wasm-ld >/dev/null && [ -e /usr/include/wasm32-wasi/stdlib.h ] \
  && ls /usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
major=$(apt-cache show clang | sed -n 's/^Depends: .*clang-\([0-9][0-9]*\).*/\1/p' | head -n 1)
apt-get install -y -qq --no-install-recommends clang lld wasi-libc "libclang-rt-${major}-dev-wasm32" >/dev/null
