# C++ API (include/nerve/cxx, tests/cxx, examples). Its tests are ctest
# tests with label cxx, so `make test` runs them in test-core; the
# examples are also built against the installed package by test-install
# (scripts/test-install.sh).
#
# libgtest-dev: GoogleTest for tests/cxx. clang: the header compile check
# under Clang (tests/cxx/compile_check.sh; skipped when absent).
DEPS_PKGS += libgtest-dev clang

.PHONY: test-cxx bench-cxx

# Only the C++ tests.
test-cxx: build
	cd $(BUILD) && ctest $(CTEST_FLAGS) -L cxx

# The C++ vs C overhead benchmark (examples/bench_cxx_overhead.cpp); kept
# results go in bench/results/cxx-overhead.md.
bench-cxx: build
	$(BUILD)/examples/bench_cxx_overhead --rounds 400 --batch 5000
