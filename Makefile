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

# Debian packages the core needs; fragments append theirs.
DEPS_PKGS := build-essential cmake ninja-build pkg-config git
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

# The single- and multi-process tests again under ASan+UBSan and under TSan.
test-asan: deps
	cmake -S . -B build-asan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug \
	    -DNERVE_SANITIZE=address -DNERVE_BUILD_BENCH=OFF -DNERVE_BUILD_EXAMPLES=OFF
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ctest $(CTEST_FLAGS) -L 'unit|mp'

test-tsan: deps
	cmake -S . -B build-tsan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug \
	    -DNERVE_SANITIZE=thread -DNERVE_BUILD_BENCH=OFF -DNERVE_BUILD_EXAMPLES=OFF
	cmake --build build-tsan -j$(JOBS)
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	    ctest $(CTEST_FLAGS) -L unit
	@# TSan observes one process: a writer lock that another process held,
	@# or that this one recovered from a dead process (GCC 12's TSan does
	@# not record a lock that returned EOWNERDEAD), looks to it like an
	@# unlock of a free mutex. Its mutex-misuse reports are off for the
	@# multi-process tests; data races are still reported.
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 report_mutex_bugs=0" \
	    ctest $(CTEST_FLAGS) -L mp

# Install into a scratch prefix and build a consumer with find_package(nerve)
# and with pkg-config.
test-install: build
	scripts/test-install.sh $(BUILD)

test: $(TEST_TARGETS)
	@echo "make test: all test targets passed ($(TEST_TARGETS))"

clean:
	rm -rf build build-* .venv
