#!/usr/bin/env bash
# The shared library's ABI against the one recorded for its soname (docs/reference/abi.md).
#   abi.sh record LIB HEADERS_DIR ABI_DIR   writes ABI_DIR/<soname>.abi.xz from LIB
#   abi.sh check  LIB HEADERS_DIR ABI_DIR   exits 0 when LIB's ABI is the recorded one; else says
#                                           what changed and what to do, and exits 1
# LIB's debug information may sit beside it as LIB.debug (a split-debug build). Needs abidw and
# abidiff (Debian: abigail-tools) and xz.
set -euo pipefail

usage() { echo "usage: abi.sh record|check LIB HEADERS_DIR ABI_DIR" >&2; exit 2; }
[ $# -eq 4 ] || usage
action="$1" lib="$2" headers="$3" abi_dir="$4"
case "$action" in record | check) ;; *) usage ;; esac
[ -f "$lib" ] || { echo "abi.sh: no library at $lib" >&2; exit 2; }

soname="$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')"
[ -n "$soname" ] || { echo "abi.sh: $lib has no soname" >&2; exit 2; }
recorded="$abi_dir/$soname.abi.xz"
lib_dir="$(cd "$(dirname "$lib")" && pwd)"

# Only what the public headers declare and the library exports; no paths, so that two builds of
# one source in different directories describe the same ABI.
describe=(--exported-interfaces-only --headers-dir "$headers" --drop-private-types
  --no-corpus-path --no-comp-dir-path --short-locs --type-id-style hash)

if [ "$action" = record ]; then
  mkdir -p "$abi_dir"
  abidw "${describe[@]}" --debug-info-dir "$lib_dir" "$lib" | xz -9 >"$recorded.tmp"
  mv "$recorded.tmp" "$recorded"
  echo "abi.sh: recorded the ABI of $soname in $recorded"
  exit 0
fi

if [ ! -f "$recorded" ]; then
  echo "abi.sh: no ABI is recorded for $soname ($recorded is missing)." >&2
  echo "  A new soname starts its record with: make abi-record" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
xz -dc "$recorded" >"$work/recorded.abi"
rc=0
abidiff --headers-dir2 "$headers" --debug-info-dir2 "$lib_dir" \
  "$work/recorded.abi" "$lib" >"$work/report" 2>&1 || rc=$?

# abidiff's exit status is a bit set: 1 error, 2 usage error, 4 an ABI change, 8 an incompatible one.
if [ $((rc & 3)) -ne 0 ]; then
  cat "$work/report" >&2
  echo "abi.sh: abidiff could not compare (exit $rc)" >&2
  exit 2
fi
if [ $((rc & 8)) -ne 0 ]; then
  cat "$work/report"
  echo "abi.sh: an incompatible ABI change under the soname $soname (a symbol removed or changed)." >&2
  echo "  Undo it, or bump the soname (NATSFLEET_SOVERSION), then: make abi-record" >&2
  exit 1
fi
if [ $((rc & 4)) -ne 0 ]; then
  cat "$work/report"
  echo "abi.sh: the ABI of $soname changed (report above), and the change is not recorded." >&2
  echo "  Record it with make abi-record; if a public type's size or layout changed, the next" >&2
  echo "  release bumps the soname (NATSFLEET_SOVERSION, docs/reference/abi.md)." >&2
  exit 1
fi
echo "abi.sh: $soname matches its recorded ABI ($recorded)"
