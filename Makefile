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

# $(call locked,NAME,COMMANDS): COMMANDS under the lock file
# $(BUILD)/.lock-NAME (flock, util-linux), so that the tree they build is
# never built by two makes at once (test-trees-background and a test
# target).
locked = mkdir -p $(BUILD) && flock $(BUILD)/.lock-$(1) sh -ec '$(2)'

# Every ctest test of the regular build (unit, multi-process, CLI, C++ ...).
test-core: build
	cd $(BUILD) && ctest $(CTEST_FLAGS)

# The single- and multi-process tests again under ASan+UBSan and under TSan
# (their builds, build-asan and build-tsan, are presets of CMakePresets.json).
ASAN_TREE = cmake --preset asan && cmake --build --preset asan -j$(JOBS)
TSAN_TREE = cmake --preset tsan && cmake --build --preset tsan -j$(JOBS)
test-asan: deps
	$(call locked,asan,$(ASAN_TREE))
	ctest --preset asan $(CTEST_FLAGS)

test-tsan: deps
	$(call locked,tsan,$(TSAN_TREE))
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

# The test targets run one after another: first those that mostly wait
# (for processes to start, discover each other and exchange messages: the
# rmw, ROS and DDS suites), then those that need build trees of their own
# (sanitizers, packages), then those that need the Rust bridge. Beside them:
#   - test-trees-background compiles the sanitizer and package trees at
#     normal priority while the first targets leave the CPUs idle, each
#     tree under the lock its test target takes too (`locked` above); a
#     tree that fails to build there is built again, and its error shown,
#     by its test target;
#   - at the lowest CPU priority, the Rust bridge compiles
#     (test-bridge-prebuild in mk/rust.mk: about 6 CPU-minutes, unoptimised:
#     every sub-make of make test gets RUST_PROFILE=$(TEST_RUST_PROFILE)),
#     and the model checks run (test-model-background in
#     mk/verify.mk), printing their lines and summary when they end; a
#     failed check fails `make test` at its end;
#   - beside the last targets, also at the lowest priority, the fuzzers
#     (test-fuzz-beside in mk/verify.mk: they run for a fixed time, so a
#     busy CPU costs them runs, not the tests time).
LATE_TARGETS := test-asan test-tsan test-package test-wheels
LAST_TARGETS := test-rust test-tools
TEST_ORDER = $(filter-out test-model test-fuzz $(LATE_TARGETS) $(LAST_TARGETS),$(TEST_TARGETS)) \
    $(filter $(LATE_TARGETS),$(TEST_TARGETS))
TEST_LAST = $(filter $(LAST_TARGETS),$(TEST_TARGETS))
TEST_MAKE = $(MAKE) --no-print-directory RUST_PROFILE=$(TEST_RUST_PROFILE)
test: build
	@$(TEST_MAKE) test-bridge-prebuild & prebuild=$$!; \
	    $(TEST_MAKE) test-model-background & model=$$!; \
	    $(TEST_MAKE) test-trees-background & trees=$$!; \
	    $(TEST_MAKE) $(TEST_ORDER); status=$$?; \
	    if [ $$status = 0 ]; then \
	        $(TEST_MAKE) test-fuzz-beside & fuzz=$$!; \
	        $(TEST_MAKE) $(TEST_LAST); status=$$?; \
	        wait $$fuzz || status=$$?; \
	    fi; \
	    wait $$trees; wait $$model || status=$$?; wait $$prebuild; exit $$status
	@echo "make test: all test targets passed ($(TEST_TARGETS))"

# The trees test-asan, test-tsan and test-package build (their targets
# only take the lock and find them built); output in
# $(BUILD)/trees-background.log.
.PHONY: test-trees-background
test-trees-background:
	@if $(MAKE) --no-print-directory trees-asan-tsan package-tree \
	    >$(BUILD)/trees-background.log 2>&1; then \
	    echo "test-trees-background: the sanitizer and package trees are built (log: $(BUILD)/trees-background.log)"; \
	else \
	    echo "test-trees-background: a tree did not build; its test target builds it again and says why"; \
	fi
.PHONY: trees-asan-tsan
trees-asan-tsan:
	$(call locked,asan,$(ASAN_TREE))
	$(call locked,tsan,$(TSAN_TREE))

clean:
	rm -rf build build-* .venv .venv-jazzy .venv-kilted dist
