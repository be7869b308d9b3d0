#!/usr/bin/env bash
# Installs every Debian 12 package that natsfleet's build, tests, benchmarks and demo need.
# Idempotent: when everything is already present it changes nothing and returns at once.
# Node.js and npm come from Debian only when the machine has none (it may have a newer Node); the
# browser test's npm packages are installed exactly as tests/browser/package-lock.json pins them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

packages=(
  build-essential cmake ninja-build pkg-config git
  libnats-dev nats-server libssl-dev
  libboost-dev libtomlplusplus-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format clang-tidy openssl curl procps python3 python3-prometheus-client gnuplot-nox
  chromium
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# playwright-core for tests/browser; skipped while node_modules matches the lock file.
browser="$root/tests/browser"
lock_sum="$(sha256sum "$browser/package-lock.json" | cut -d' ' -f1)"
stamp="$browser/node_modules/.natsfleet-lock-sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  echo "install-deps: npm ci in tests/browser"
  npm ci --prefix "$browser" --no-audit --no-fund --loglevel=error >/dev/null
  echo "$lock_sum" >"$stamp"
fi
