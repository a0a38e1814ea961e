# nerve: the two commands of the quick start are `make demo` and `make test`.
# Both install what they need first (Debian packages through apt-get, Python
# packages into .venv), so they work on a fresh Debian 12 machine as root.
#
# Each layer adds its own targets in mk/<area>.mk: it appends its test
# target to TEST_TARGETS and its Debian packages to DEPS_PKGS.

BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_GEN ?= -G Ninja
CTEST_FLAGS ?= --output-on-failure -j$(JOBS)

# Debian packages the core needs (all that `make demo` installs);
# fragments append theirs to DEPS_PKGS.
CORE_PKGS := build-essential cmake ninja-build pkg-config git
DEPS_PKGS := $(CORE_PKGS)
# Test targets run in this order by `make test`; fragments append theirs.
TEST_TARGETS := test-core test-asan test-tsan test-install

.PHONY: all deps build test demo stress clean $(TEST_TARGETS)

all: build

include $(sort $(wildcard mk/*.mk))

deps:
	@scripts/deps.sh $(DEPS_PKGS)

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j$(JOBS)

# Every ctest test of the regular build (unit, multi-process, CLI, C++ ...).
test-core: build
	cd $(BUILD) && ctest $(CTEST_FLAGS)

# The single- and multi-process tests again under ASan+UBSan and under TSan
# (their builds, build-asan and build-tsan, are presets of CMakePresets.json).
test-asan: deps
	cmake --preset asan
	cmake --build --preset asan -j$(JOBS)
	ctest --preset asan $(CTEST_FLAGS)

test-tsan: deps
	cmake --preset tsan
	cmake --build --preset tsan -j$(JOBS)
	ctest --preset tsan-unit $(CTEST_FLAGS)
	@# TSan observes one process: a writer lock that another process held,
	@# or that this one recovered from a dead process (GCC 12's TSan does
	@# not record a lock that returned EOWNERDEAD), looks to it like an
	@# unlock of a free mutex. Its mutex-misuse reports are off for the
	@# multi-process tests (preset tsan-mp); data races are still reported.
	ctest --preset tsan-mp $(CTEST_FLAGS)

# Install into a scratch prefix and build a consumer with find_package(nerve)
# and with pkg-config.
test-install: build
	scripts/test-install.sh $(BUILD)

# The test targets run one after another, in the order of TEST_TARGETS.
# Beside them, in the background and at the lowest CPU priority, the Rust
# bridge compiles (test-bridge-prebuild in mk/rust.mk: several CPU-minutes
# in release mode) in the time the tests before test-rust leave the CPUs
# idle; test-rust and test-tools then find it built.
# The model checks (test-model-background in mk/verify.mk: minutes of CPU,
# no other process needed) run the same way, and print their lines and
# summary when they end; a failed check fails `make test` at its end.
test: build
	@$(MAKE) --no-print-directory test-bridge-prebuild & prebuild=$$!; \
	    $(MAKE) --no-print-directory test-model-background & model=$$!; \
	    $(MAKE) --no-print-directory $(filter-out test-model,$(TEST_TARGETS)); status=$$?; \
	    wait $$model || status=$$?; wait $$prebuild; exit $$status
	@echo "make test: all test targets passed ($(TEST_TARGETS))"

clean:
	rm -rf build build-* .venv .venv-jazzy .venv-kilted dist
