#!/usr/bin/env bash
# Fetches Debian 13 (trixie)'s nats-server 2.10 package and unpacks it into DEST (Debian 12's own
# nats-server is 2.9). The package ships DEST/usr/sbin/nats-server; the script adds the symlink
# DEST/usr/bin/nats-server to it, so either path works. Usage: fetch-nats-server.sh DEST
# Nothing on the system changes: apt runs with a private configuration (scripts/apt/apt.conf via
# APT_CONFIG, which keeps /etc/apt out, and scripts/apt/trixie.sources) and private state and cache
# under DEST/.apt; trixie's signature is checked against /usr/share/keyrings/debian-archive-keyring.gpg
# (Debian 12's debian-archive-keyring already carries the trixie keys); the .deb is unpacked with
# `dpkg -x`, never installed. Idempotent: returns at once when the pinned version is already there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

NATS_SERVER_210="${NATS_SERVER_210:-2.10.27-1+b2}"  # the version trixie main ships
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

[ $# -eq 1 ] || { echo "usage: $0 DEST-DIR" >&2; exit 2; }
mkdir -p "$1"
dest="$(cd "$1" && pwd)"
bin="$dest/usr/bin/nats-server"
want="v${NATS_SERVER_210%%-*}"  # 2.10.27-1+b2 -> v2.10.27

if [ -x "$bin" ] && have="$("$bin" --version 2>/dev/null)" && [ "${have##* }" = "$want" ]; then
  echo "fetch-nats-server: $bin already present ($have)"
  exit 0
fi

fail() {
  echo "fetch-nats-server: cannot fetch nats-server $NATS_SERVER_210 from Debian trixie: $1" >&2
  [ -s "$work/log" ] && sed 's/^/  | /' "$work/log" | tail -n 15 >&2
  exit 1
}

work="$dest/.apt"
# DEST is wiped below, so only accept one that holds no files (a build tool may have made its
# empty usr/bin) or one this script made before.
if [ ! -d "$work" ] && [ -n "$(find "$dest" -mindepth 1 ! -type d -print -quit)" ]; then
  echo "fetch-nats-server: $dest is not empty and was not made by this script; give an empty or new directory" >&2
  exit 2
fi
rm -rf "$work"
mkdir -p "$work/state/lists/partial" "$work/cache/archives/partial" "$work/debs"
: >"$work/state/status"
[ -r "$keyring" ] || fail "$keyring is missing (package debian-archive-keyring)"
# apt downloads as the unprivileged _apt user when run as root; let it write our own directory.
if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then chown _apt "$work/debs"; fi

export APT_CONFIG="$root/scripts/apt/apt.conf"
apt_opts=(
  -q -o Dir::Etc::SourceList="$root/scripts/apt/trixie.sources" -o Dir::Etc::SourceParts=/dev/null
  -o Dir::State="$work/state" -o Dir::State::status="$work/state/status" -o Dir::Cache="$work/cache"
)

SECONDS=0
apt-get "${apt_opts[@]}" --error-on=any update >"$work/log" 2>&1 ||
  fail "apt-get update failed (network, or the trixie signature did not verify against $keyring)"
available="$(apt-cache "${apt_opts[@]}" madison nats-server 2>/dev/null | awk -F' *[|] *' '{print $2}' | paste -sd' ')"
(cd "$work/debs" && apt-get "${apt_opts[@]}" download "nats-server=$NATS_SERVER_210") >>"$work/log" 2>&1 ||
  fail "apt-get download failed (trixie has: ${available:-nothing}); update NATS_SERVER_210 in $0"
deb="$(ls "$work"/debs/nats-server_*.deb)"

rm -rf "$dest/etc" "$dest/usr"  # a previous version's unpacked files
dpkg -x "$deb" "$dest"
touch "$dest/usr/sbin/nats-server"  # newer than this script, for the build that asked for it
mkdir -p "$dest/usr/bin" && ln -sfn ../sbin/nats-server "$bin"
rm -rf "$work/state" "$work/cache"  # ~20 MB of package lists; the .deb stays in $work/debs
have="$("$bin" --version)" || fail "$bin does not run"
echo "fetch-nats-server: fetched nats-server $NATS_SERVER_210 ($(du -k "$deb" | cut -f1) KiB) from trixie in ${SECONDS}s into $dest ($have)"
