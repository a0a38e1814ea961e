# Ach's C API on nerve (issue 14; src/ach, docs/ach.md). Its tests run in
# test-core (ctest label `ach`; the C ones also in test-asan/test-tsan via
# their unit/mp labels) and test-install builds a pkg-config consumer.

.PHONY: test-ach bench-ach

# Only the Ach tests, in the regular build.
test-ach: build
	cd $(BUILD) && ctest $(CTEST_FLAGS) -L ach

# The Ach-paper benchmark: Ach API on nerve vs nerve's API vs condvar.
bench-ach: build
	$(BUILD)/src/ach/ach-bench --receivers 1,2,4,8 --duration 10 --rounds 10
