# Verification: the SPIN model of the protocol, the crash
# torture test and the channel-file fuzzer. docs/verification.md says what
# each one proves.

DEPS_PKGS += spin
TEST_TARGETS += test-model

.PHONY: test-model

# Exhaustive model checks, the broken variants and the witnesses (~1 min).
test-model: deps
	model/check.sh -q

.PHONY: stress
STRESS_BUILD ?= build-verify

# The long crash torture (20,000 writer kills; label stress). Not part of
# `make test`: it configures its own build with NERVE_STRESS=ON.
stress: deps
	cmake -S . -B $(STRESS_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DNERVE_STRESS=ON -DNERVE_BUILD_BENCH=OFF -DNERVE_BUILD_EXAMPLES=OFF
	cmake --build $(STRESS_BUILD) -j$(JOBS) --target stress_torture_short
	cd $(STRESS_BUILD) && ctest --output-on-failure -L stress

# Fuzz the channel-file reader for a minute with libFuzzer (clang; the
# runtime is in libclang-rt-14-dev on Debian 12), starting from the seed
# corpus. Any crash, hang or sanitizer report fails; the crashing input is
# left in build-fuzz/ (add it to tests/fuzz/corpus/ once fixed).
DEPS_PKGS += clang libclang-rt-14-dev
TEST_TARGETS += test-fuzz
FUZZ_SECONDS ?= 60
.PHONY: test-fuzz

test-fuzz: deps
	cmake --preset fuzz
	cmake --build --preset fuzz -j$(JOBS)
	mkdir -p build-fuzz/corpus
	cd build-fuzz && ./tests/fuzz/nerve_fuzz_chan -max_total_time=$(FUZZ_SECONDS) \
	    -max_len=20480 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    corpus ../tests/fuzz/corpus
