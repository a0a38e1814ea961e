# Verification: the SPIN model of the protocol, the crash
# torture test and the channel-file fuzzer. docs/verification.md says what
# each one proves.

DEPS_PKGS += spin
TEST_TARGETS += test-model

.PHONY: test-model

# Exhaustive model checks, the broken variants and the witnesses (about
# 3 minutes on an idle 2-core machine, more on a loaded one).
test-model: deps
	model/check.sh -q

# The same checks at the lowest CPU priority, output kept until they end
# (`make test` runs this beside the other test targets instead of
# test-model).
.PHONY: test-model-background
test-model-background:
	@mkdir -p $(BUILD)
	@nice -n 19 model/check.sh -q >$(BUILD)/model.log 2>&1; status=$$?; \
	    echo "== test-model, run in the background (log: $(BUILD)/model.log)"; \
	    cat $(BUILD)/model.log; exit $$status

.PHONY: stress

# The long crash torture (20,000 writer kills; label stress). Not part of
# `make test`: it builds the stress preset of CMakePresets.json
# (NERVE_STRESS=ON, in build-verify).
stress: deps
	cmake --preset stress
	cmake --build --preset stress -j$(JOBS)
	cd build-verify && ctest --output-on-failure -L stress

# Fuzz the channel-file reader for 30 s (FUZZ_SECONDS) with libFuzzer (clang; the
# runtime is in libclang-rt-14-dev on Debian 12), starting from the seed
# corpus. Any crash, hang or sanitizer report fails; the crashing input is
# left in build-fuzz/ (add it to tests/fuzz/corpus/ once fixed).
DEPS_PKGS += clang libclang-rt-14-dev
TEST_TARGETS += test-fuzz
FUZZ_SECONDS ?= 30
FUZZ_ROS2_SECONDS ?= 10
.PHONY: test-fuzz

# make test runs test-fuzz beside its last targets, printing the output
# when it ends (the Makefile's test rule).
.PHONY: test-fuzz-beside
test-fuzz-beside:
	@mkdir -p $(BUILD)
	@nice -n 19 $(MAKE) --no-print-directory test-fuzz >$(BUILD)/fuzz.log 2>&1; status=$$?; \
	    echo "== test-fuzz, run beside the last test targets (log: $(BUILD)/fuzz.log)"; \
	    cat $(BUILD)/fuzz.log; exit $$status

test-fuzz: deps
	cmake --preset fuzz
	cmake --build --preset fuzz -j$(JOBS)
	mkdir -p build-fuzz/corpus
	cd build-fuzz && ./tests/fuzz/nerve_fuzz_chan -max_total_time=$(FUZZ_SECONDS) \
	    -max_len=20480 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    corpus ../tests/fuzz/corpus
	@# The ROS 2 CDR decoder (tests/fuzz/fuzz_ros2.cpp), from its seeds.
	mkdir -p build-fuzz/ros2_corpus
	cd build-fuzz && ./tests/fuzz/nerve_fuzz_ros2 -max_total_time=$(FUZZ_ROS2_SECONDS) \
	    -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    ros2_corpus ../tests/fuzz/ros2_corpus
