#!/usr/bin/env bash
# Installs the Debian 12 packages natsfleet needs: with `demo`, only what building the natsfleet
# binary and running its demo take (make demo); with no argument, everything the tests,
# benchmarks and packages need too (make test).
# Idempotent: when everything is already present it changes nothing and returns at once.
# Node.js and npm come from Debian only when the machine has none (it may have a newer Node); the
# browser test's npm packages are installed exactly as tests/browser/package-lock.json pins them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

set_name="${1:-all}"
case "$set_name" in demo | all) ;; *) echo "usage: install-deps.sh [demo]" >&2; exit 2 ;; esac

packages=(
  g++ make cmake ninja-build pkg-config
  libnats-dev nats-server libssl-dev
  libboost-dev libtomlplusplus-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
)
if [ "$set_name" = all ]; then
  packages+=(
    build-essential git libgtest-dev libgmock-dev libbenchmark-dev
    clang clang-format clang-tidy openssl curl procps python3 python3-prometheus-client python3-yaml gnuplot-nox
    chromium help2man lintian dpkg-dev systemd prometheus bash-completion zsh
    mmdebstrap umoci gpg libdpkg-perl libdistro-info-perl arch-test mount
    golang-go golang-github-nats-io-go-nats-dev abigail-tools xz-utils binutils
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "$set_name" = all ]; then
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages ($set_name) present"
else
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ "$set_name" = all ] || exit 0

# playwright-core for tests/browser; skipped while node_modules matches the lock file.
browser="$root/tests/browser"
lock_sum="$(sha256sum "$browser/package-lock.json" | cut -d' ' -f1)"
stamp="$browser/node_modules/.natsfleet-lock-sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  echo "install-deps: npm ci in tests/browser"
  npm ci --prefix "$browser" --no-audit --no-fund --loglevel=error >/dev/null
  echo "$lock_sum" >"$stamp"
fi
