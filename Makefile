# natsfleet: every target does its own set-up (packages, configure, build), so `make demo` and
# `make test` work on a fresh Debian 12 machine.
BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
WERROR     ?= $(or $(NATSFLEET_WERROR),OFF)

.PHONY: all deps deps-demo configure build test demo package image abi-record bench chaos asan tsan fuzz \
  format format-check clean

all: build

deps:
	@bash scripts/install-deps.sh

deps-demo:
	@bash scripts/install-deps.sh demo

CMAKE_CONFIGURE = cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
  -DNATSFLEET_WERROR=$(WERROR)

configure: deps
	@$(CMAKE_CONFIGURE) -DNATSFLEET_TESTS=ON >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: deps format-check build
	@cd $(BUILD) && ctest --output-on-failure -j 2 --timeout 300

# Only what the demo runs: the natsfleet binary (no tests, no browser).
demo: deps-demo
	@$(CMAKE_CONFIGURE) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target natsfleet_cli
	@$(BUILD)/natsfleet demo

# The Debian packages natsfleet, libnatsfleet0.1 and libnatsfleet-dev in $(BUILD)/ (README:
# "Installing").
package: build
	@cd $(BUILD) && cpack -G DEB

# The container image: an OCI archive, $(BUILD)/natsfleet-image.tar, from the package on a
# Debian 12 base, made with Debian's tools only (docs/how-to/kubernetes.md: loading it).
image: package
	@bash scripts/make-image.sh $(BUILD) $(BUILD)/natsfleet-image.tar

# Records the shared library's ABI for its soname in packaging/abi/ (docs/reference/abi.md); the
# suite's Abi tests compare the built library with it.
abi-record: build
	@bash scripts/abi.sh record $(BUILD)/lib/libnatsfleet.so include/natsfleet packaging/abi

bench: build
	@$(BUILD)/bench/natsfleet-bench
	@$(BUILD)/bench/natsfleet-daemon-bench
	@$(BUILD)/bench/natsfleet-relay-bench

# natsfleet under random faults (tests/chaos): `make chaos SECONDS=60 SEED=7` for a short or
# replayed run; KEYS=1000 runs per-key ordered work over that many keys; BROKER=2.10 or
# BROKER=2.15 runs it on that nats-server, fetched by the build, in place of Debian 12's 2.9
# (the run prints the line that replays it). Each run writes its history, summary.json and timeline.png under
# chaos-runs/.
SECONDS ?= 300
SEED    ?=
KEYS    ?=
BROKER  ?=
BROKER_BIN = $(abspath $(BUILD))/nats-server-$(BROKER)/usr/bin
chaos: build
	@$(if $(BROKER),test -x $(BROKER_BIN)/nats-server || \
	  { echo "make chaos: no nats-server $(BROKER) in $(BROKER_BIN)" >&2; exit 2; })
	@$(if $(BROKER),PATH=$(BROKER_BIN):$$PATH) $(BUILD)/tests/chaos/natsfleet-chaos run \
	  --seconds $(SECONDS) $(if $(SEED),--seed $(SEED)) $(if $(KEYS),--keys $(KEYS))

# Integration tests under AddressSanitizer + UBSan, and under ThreadSanitizer.
asan: deps
	@cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DNATSFLEET_SANITIZE=address,undefined >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ctest --output-on-failure -j 2 --timeout 600

tsan: deps
	@cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DNATSFLEET_SANITIZE=thread >/dev/null
	@cmake --build build-tsan -j $(JOBS)
	@cd build-tsan && ctest --output-on-failure -j 2 --timeout 600

# libFuzzer targets (fuzz/README.md) in build-fuzz, each run FUZZ_SECONDS (default 60) on its
# corpus in fuzz/corpus/. Installs clang itself, so `make test` does not need it.
FUZZ_SECONDS ?= 60
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) bash scripts/fuzz.sh

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

format-check:
	@git ls-files '*.h' '*.cc' | xargs -r clang-format --dry-run --Werror

clean:
	@rm -rf $(BUILD) build-asan build-tsan build-fuzz
