#!/usr/bin/env bash
# Compiles every extracted example (extract_examples.py) with one compiler, as a user's build
# would with strict warnings: compile_examples.sh COMPILER UNITS_DIR INCLUDE_DIR PRELUDE_DIR.
# Names each example that does not compile (its header or doc file and line); fails when there
# is none to compile.
set -uo pipefail
compiler="$1" units="$2" include="$3" prelude="$4"
if ! command -v "$compiler" >/dev/null; then
  echo "$compiler is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
shopt -s nullglob
files=("$units"/*.cc)
if [ ${#files[@]} -eq 0 ]; then
  echo "no examples in $units: the extraction found none" >&2
  exit 1
fi
failed=0
for unit in "${files[@]}"; do
  if ! out=$("$compiler" -std=c++20 -fsyntax-only -Wall -Wextra -Werror -pedantic \
      -I"$include" -I"$prelude" "$unit" 2>&1); then
    echo "--- $(sed -n '1s,^// From \([^ ]*\) .*,\1,p' "$unit")"
    echo "$out"
    failed=$((failed + 1))
  fi
done
echo "$compiler: $((${#files[@]} - failed)) of ${#files[@]} examples compile"
[ "$failed" -eq 0 ]
