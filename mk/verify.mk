# Verification (issue 5): the SPIN model of the protocol, the crash
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
