# Verification (issue 5): the SPIN model of the protocol, the crash
# torture test and the channel-file fuzzer. docs/verification.md says what
# each one proves.

DEPS_PKGS += spin
TEST_TARGETS += test-model

.PHONY: test-model

# Exhaustive model checks, the broken variants and the witnesses (~1 min).
test-model: deps
	model/check.sh -q
