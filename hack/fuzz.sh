#!/usr/bin/env bash
# make fuzz: every fuzz target of the repository's Go modules run by the fuzzing engine for a
# bounded time (FUZZTIME each, default 3s), not only its seed corpus as go test runs it. The
# targets are found, not listed, so a new one is run without anyone remembering to add it.
# A failing input is written to the package's testdata/fuzz/<Target>/ by go test: commit it with
# the fix, and go test then runs it as a seed for ever.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-3s}

fail=0 n=0 t0=$SECONDS
for mod in . pdk plugins-wasm; do
  # "<package dir> <target>" for every func FuzzX(f *testing.F) in the module (not in nested
  # modules, whose go.mod the -path tests below exclude).
  while read -r dir target; do
    n=$((n + 1))
    echo "== fuzz $mod: $dir $target ($fuzztime)"
    if ! (cd "$mod" && go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$dir" 2>&1 | tail -n 20); then
      fail=1
    fi
  done < <(cd "$mod" && grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
    while read -r file; do
      d=$(dirname "$file")
      # Skip files of nested modules (testdata guests, hack tools).
      sub=$d; nested=0
      while [ "$sub" != "." ]; do [ -f "$sub/go.mod" ] && nested=1 && break; sub=$(dirname "$sub"); done
      [ "$nested" -eq 0 ] || continue
      grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //' | while read -r t; do echo "${d#./} $t"; done
    done | sort)
done
[ "$n" -gt 0 ] || { echo "fuzz: no fuzz target found"; exit 1; }
echo "fuzz: $n targets, ${fuzztime} each, $((SECONDS - t0))s"
exit $fail
