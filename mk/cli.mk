# The nerve command and benchmark (tools/, bench/, tests/cli/).
# The cli tests run inside test-core (ctest label `cli`); their driver needs
# python3 (standard library only).
DEPS_PKGS += python3

.PHONY: test-cli bench-smoke

# Only the command's tests, in the regular build.
test-cli: build
	cd $(BUILD) && ctest $(CTEST_FLAGS) -L cli

# A short run of every transport, printed as a table.
bench-smoke: build
	$(BUILD)/tools/nerve bench --transport nerve,pipe,unix,mq,futex,spin,condvar \
	    --duration 0.5
