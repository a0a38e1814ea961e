# The Rust crates (rust/: nerve-sys declares the C API, nerve is the safe
# API; docs/rust.md). test-rust checks their formatting, runs clippy with
# warnings as errors and their tests (unit, integration, the two-process
# tests against the `nerve` command, the ABI check of nerve-sys against
# include/nerve, and the doc tests) against the library of the CMake build,
# which build.rs finds through NERVE_LIB_DIR. Cargo's output goes to
# $(BUILD)/cargo, so the source tree stays clean. Without a cargo at least
# as new as rust/Cargo.toml's rust-version the target says so and passes.
#
#   make test-rust     the above (part of `make test`)
#   make bench-rust    the Rust API's overhead over the C API
#                      (bench/results/rust-overhead.md)

CARGO ?= cargo
CARGO_ENV = NERVE_LIB_DIR=$(abspath $(BUILD)) NERVE_CLI=$(abspath $(BUILD))/tools/nerve \
    CARGO_TARGET_DIR=$(abspath $(BUILD))/cargo
CARGO_MANIFEST := --manifest-path rust/Cargo.toml
TEST_TARGETS += test-rust

.PHONY: test-rust bench-rust

test-rust: build
	@if rust/cargo-ok.sh $(CARGO) rust/Cargo.toml; then \
	    set -e; \
	    $(CARGO) fmt $(CARGO_MANIFEST) --all --check; \
	    $(CARGO_ENV) $(CARGO) clippy $(CARGO_MANIFEST) --locked -j$(JOBS) \
	        -p nerve-sys -p nerve --all-targets -- -D warnings; \
	    $(CARGO_ENV) $(CARGO) test $(CARGO_MANIFEST) --locked -j$(JOBS) \
	        -p nerve-sys -p nerve; \
	fi
	tests/shm_clean.sh after

bench-rust: build
	@rust/cargo-ok.sh $(CARGO) rust/Cargo.toml
	$(CARGO_ENV) $(CARGO) run $(CARGO_MANIFEST) --locked --release -j$(JOBS) \
	    -p nerve --example bench_overhead -- --rounds 1000 --batch 5000
