#!/usr/bin/env bash
# Fetches a newer nats-server than Debian 12's own (2.9) from a later Debian suite and unpacks it
# into DEST: SERIES 2.10 is Debian 13 (trixie)'s package, 2.15 Debian sid (unstable)'s; both run
# on Debian 12. The package ships DEST/usr/sbin/nats-server; the script adds the symlink
# DEST/usr/bin/nats-server to it, so either path works. Usage: fetch-nats-server.sh [SERIES] DEST
# (SERIES 2.10 when left out).
# Nothing on the system changes: apt runs with a private configuration (scripts/apt/apt.conf via
# APT_CONFIG, which keeps /etc/apt out, and scripts/apt/<suite>.sources) and private state and
# cache under DEST/.apt; the suite's signature is checked against
# /usr/share/keyrings/debian-archive-keyring.gpg (Debian 12's debian-archive-keyring carries the
# keys trixie and sid are signed with); the .deb is unpacked with `dpkg -x`, never installed.
# Idempotent: returns at once when the pinned version is already there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
series=2.10
if [ $# -eq 2 ]; then
  series="$1"
  shift
fi
case "$series" in
  2.10)
    suite=trixie
    version="${NATS_SERVER_210:-2.10.27-1+b2}"  # the version trixie main ships
    pin_var=NATS_SERVER_210
    valid_opts=()
    ;;
  2.15)
    suite=sid
    version="${NATS_SERVER_215:-2.15.1-1}"  # the version sid main ships
    pin_var=NATS_SERVER_215
    # sid's Release file is valid for a week after it is signed (trixie's, a release's, has no
    # end). Accept one up to 180 days old, as from a mirror that lags: the signature is checked
    # all the same, and with the version pinned an old index can offer no other package.
    valid_opts=(-o Acquire::Min-ValidTime=15552000)
    ;;
  *)
    echo "usage: $0 [2.10|2.15] DEST-DIR" >&2
    exit 2
    ;;
esac

[ $# -eq 1 ] || { echo "usage: $0 [2.10|2.15] DEST-DIR" >&2; exit 2; }
mkdir -p "$1"
dest="$(cd "$1" && pwd)"
bin="$dest/usr/bin/nats-server"
want="v${version%%-*}"  # 2.10.27-1+b2 -> v2.10.27

if [ -x "$bin" ] && have="$("$bin" --version 2>/dev/null)" && [ "${have##* }" = "$want" ]; then
  echo "fetch-nats-server: $bin already present ($have)"
  touch "$bin"  # newer than this script, so the build does not ask again
  exit 0
fi

fail() {
  echo "fetch-nats-server: cannot fetch nats-server $version from Debian $suite: $1" >&2
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
  -q -o Dir::Etc::SourceList="$root/scripts/apt/$suite.sources" -o Dir::Etc::SourceParts=/dev/null
  -o Dir::State="$work/state" -o Dir::State::status="$work/state/status" -o Dir::Cache="$work/cache" "${valid_opts[@]}"
)

SECONDS=0
apt-get "${apt_opts[@]}" --error-on=any update >"$work/log" 2>&1 ||
  fail "apt-get update failed (network, or the $suite signature did not verify against $keyring)"
available="$(apt-cache "${apt_opts[@]}" madison nats-server 2>/dev/null | awk -F' *[|] *' '{print $2}' | paste -sd' ')"
(cd "$work/debs" && apt-get "${apt_opts[@]}" download "nats-server=$version") >>"$work/log" 2>&1 ||
  fail "apt-get download failed ($suite has: ${available:-nothing}); update $pin_var in $0"
deb="$(ls "$work"/debs/nats-server_*.deb)"

rm -rf "$dest/etc" "$dest/usr"  # a previous version's unpacked files
dpkg -x "$deb" "$dest"
touch "$dest/usr/sbin/nats-server"  # newer than this script, for the build that asked for it
mkdir -p "$dest/usr/bin" && ln -sfn ../sbin/nats-server "$bin"
rm -rf "$work/state" "$work/cache"  # ~20 MB of package lists; the .deb stays in $work/debs
have="$("$bin" --version)" || fail "$bin does not run"
echo "fetch-nats-server: fetched nats-server $version ($(du -k "$deb" | cut -f1) KiB) from $suite in ${SECONDS}s into $dest ($have)"
