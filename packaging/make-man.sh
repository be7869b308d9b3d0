#!/usr/bin/env bash
# The natsfleet(1) man page from the CLI's own help: help2man for the top level, every
# subcommand's --help under COMMANDS, and man-include.txt for the sections help cannot give.
#   make-man.sh NATSFLEET_BINARY VERSION OUTPUT.1.gz
set -euo pipefail
binary="$1" version="$2" out="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cp "$here/man-include.txt" "$work/include.txt"
{
  echo "[commands]"
  for command in run lint audit dead-letters demo version; do
    echo ".SS natsfleet $command"
    echo ".nf"
    # The usage line names the binary by the path it was run from: name it as installed.
    "$binary" "$command" --help | sed -e "s|^Usage: [^ ]*natsfleet|Usage: natsfleet|" \
      -e 's/\\/\\e/g' -e "s/^'/\\\\\\&'/" -e 's/^\./\\\&./'
    echo ".fi"
  done
} >>"$work/include.txt"

# help2man runs `BINARY --help` and, with --version-string, does not need `--version`.
help2man --no-info --section=1 --version-string="$version" --include="$work/include.txt" \
  --name="JetStream consumers that are safe on many replicas and through broker failures" \
  "$binary" >"$work/natsfleet.1"
sed -i "s|$(dirname "$binary")/||g" "$work/natsfleet.1"
gzip -9n <"$work/natsfleet.1" >"$out"
