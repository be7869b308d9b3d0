#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets in fuzz/ with clang (address + undefined sanitizers)
# in their own build directory and runs each for FUZZ_SECONDS (default 60) on its corpus in
# fuzz/corpus/<target>/, which keeps what the run found new. A crash stops with the input saved
# under build-fuzz/artifacts/<target>/ and a non-zero exit. Usage: scripts/fuzz.sh [target...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FUZZ_BUILD:-$root/build-fuzz}"
seconds="${FUZZ_SECONDS:-60}"
jobs="${JOBS:-$(nproc)}"

# clang and its libFuzzer runtime: needed by this target only, so installed here.
if ! command -v clang++ >/dev/null 2>&1 || ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "fuzz: installing clang and libclang-rt-14-dev"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev
fi

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNATSFLEET_FUZZ=ON -DNATSFLEET_SANITIZE=address,undefined >/dev/null
cmake --build "$build" -j "$jobs" --target natsfleet_fuzzers

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(worker_answer config http_response gateway_request duration_url)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
summary=()
for t in "${targets[@]}"; do
  corpus="$root/fuzz/corpus/$t"
  artifacts="$build/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  log="$build/fuzz-$t.log"
  echo "fuzz: $t for ${seconds}s (log: $log)"
  set +e
  "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -max_len=16384 \
    -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  units=$(ls "$corpus" | wc -l)
  if [ $rc -ne 0 ]; then
    status=1
    summary+=("$t: FAILED (exit $rc), see $log and $artifacts")
    grep -m1 -E "ERROR: |runtime error|deadly signal" "$log" || true
  else
    summary+=("$t: ok, $execs execs in ${seconds}s ($speed/s), corpus $units inputs")
  fi
done
printf '%s\n' "${summary[@]}"
exit $status
