#!/usr/bin/env bash
# scripts/abi.sh on a library of its own, built three ways: the recorded build passes, a field
# added to a public struct or a function added is refused until recorded, a function removed is
# refused as incompatible.
set -euo pipefail
abi_sh="$1" cxx="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/include"

build() {  # build EXTRA_FIELD EXTRA_FUNCTION
  cat >"$work/include/shape.h" <<HEADER
#pragma once
struct Shape { int width; $1 };
__attribute__((visibility("default"))) int area(const Shape* s);
$2
HEADER
  printf '#include "shape.h"\nint area(const Shape* s) { return s->width; }\n' >"$work/shape.cc"
  [ -z "$2" ] || printf 'int perimeter(const Shape* s) { return 4 * s->width; }\n' >>"$work/shape.cc"
  "$cxx" -g -O0 -shared -fPIC -fvisibility=hidden -Wl,-soname,libshape.so.1 \
    -I"$work/include" "$work/shape.cc" -o "$work/libshape.so.1"
}
expect() {  # expect STATUS PHRASE
  local rc=0
  "$abi_sh" check "$work/libshape.so.1" "$work/include" "$work/abi" >"$work/out" 2>&1 || rc=$?
  if [ "$rc" -ne "$1" ] || ! grep -q "$2" "$work/out"; then
    echo "expected exit $1 and \"$2\"; got exit $rc:"; cat "$work/out"; exit 1
  fi
}

build "" ""
expect 1 "no ABI is recorded for libshape.so.1"
"$abi_sh" record "$work/libshape.so.1" "$work/include" "$work/abi" >/dev/null
expect 0 "matches its recorded ABI"

build "int height;" ""
expect 1 "the ABI of libshape.so.1 changed"
grep -q "size changed from 32 to 64" "$work/out" || { cat "$work/out"; exit 1; }

build "" '__attribute__((visibility("default"))) int perimeter(const Shape* s);'
expect 1 "the ABI of libshape.so.1 changed"
grep -q "1 Added function" "$work/out" || { cat "$work/out"; exit 1; }
"$abi_sh" record "$work/libshape.so.1" "$work/include" "$work/abi" >/dev/null
expect 0 "matches its recorded ABI"
build "" ""
expect 1 "an incompatible ABI change under the soname libshape.so.1"
echo "abi_check_test: passed"
