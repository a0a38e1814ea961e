# The Rust crates (rust/: nerve-sys declares the C API, nerve is the safe
# API; docs/rust.md). test-rust checks their formatting, runs clippy with
# warnings as errors and their tests (unit, integration, the two-process
# tests against the `nerve` command, the ABI check of nerve-sys against
# include/nerve, and the doc tests) against the library of the CMake build,
# which build.rs finds through NERVE_LIB_DIR. Cargo's output goes to
# $(BUILD)/cargo, so the source tree stays clean. Without a cargo at least
# as new as rust/Cargo.toml's rust-version the target says so and passes.
#
#   make test-rust     the above (part of `make test`), and the Rust bridge
#                      (rust/nerve-bridge, the data path of `nerve bridge`):
#                      built (RUST_PROFILE below), its unit tests run, and the
#                      program installed into the project venv as
#                      nerve-bridge-rs, where `nerve bridge` finds it; the
#                      bridge tests of test-tools then run against it
#   make rust-bridge-install   only the last step
#   make rust-bridge-build     only the build (for the packages)
#   make lint-rust-bridge      clippy over the bridge too (not in `make
#                      test`: it checks zenoh's whole tree again, about
#                      1.5 CPU-minutes)
#   make bench-rust    the Rust API's overhead over the C API
#                      (bench/results/rust-overhead.md)
#   make bench-bridge-peer   the bare Rust Zenoh peer of bench_bridge.py
#                      (nerve-zenoh-peer, feature bench-peer of
#                      rust/nerve-bridge; not built by `make test`), installed
#                      into the venv beside nerve-bridge-rs; bench-bridge
#                      runs it

CARGO ?= cargo
CARGO_ENV = NERVE_LIB_DIR=$(abspath $(BUILD)) NERVE_CLI=$(abspath $(BUILD))/tools/nerve \
    CARGO_TARGET_DIR=$(abspath $(BUILD))/cargo
CARGO_MANIFEST := --manifest-path rust/Cargo.toml
TEST_TARGETS += test-rust

.PHONY: test-rust bench-rust rust-bridge-install lint-rust-bridge bench-bridge-peer

VENV ?= .venv
# The Cargo profile of the Rust bridge: release, except in `make test`,
# whose sub-makes get RUST_PROFILE=$(TEST_RUST_PROFILE) (the Makefile's
# test rule): rust/Cargo.toml's fastbuild, unoptimised, compiles zenoh's
# tree in less than half the CPU time of release, and the tests check
# behaviour, not speed (make test TEST_RUST_PROFILE=release tests the
# release build).
RUST_PROFILE ?= release
TEST_RUST_PROFILE ?= fastbuild
RUST_BRIDGE_BIN = $(abspath $(BUILD))/cargo/$(RUST_PROFILE)/nerve-bridge-rs

test-rust: build
	@if rust/cargo-ok.sh $(CARGO) rust/Cargo.toml; then \
	    set -e; \
	    $(CARGO) fmt $(CARGO_MANIFEST) --all --check; \
	    $(CARGO_ENV) $(CARGO) clippy $(CARGO_MANIFEST) --locked -j$(JOBS) \
	        -p nerve-sys -p nerve --all-targets -- -D warnings; \
	    $(CARGO_ENV) $(CARGO) test $(CARGO_MANIFEST) --locked -j$(JOBS) \
	        -p nerve-sys -p nerve; \
	    $(MAKE) --no-print-directory rust-bridge-install; \
	    $(CARGO_ENV) $(CARGO) test $(CARGO_MANIFEST) --locked --profile $(RUST_PROFILE) \
	        -j$(JOBS) -p nerve-bridge; \
	fi
	tests/shm_clean.sh after

# The Rust bridge's build ($(RUST_BRIDGE_BIN)), when cargo is new
# enough: what rust-bridge-install, make package (the Debian package
# nerve-bridge) and make wheels (the wheel nerve-bridge) take. In `make
# test` test-bridge-prebuild has built it already (cargo only checks).
.PHONY: rust-bridge-build
rust-bridge-build: build
	@if rust/cargo-ok.sh $(CARGO) rust/Cargo.toml; then \
	    $(CARGO_ENV) $(CARGO) build $(CARGO_MANIFEST) --locked --profile $(RUST_PROFILE) \
	        -j$(JOBS) -p nerve-bridge; \
	fi

# The Rust bridge into the venv (beside the Python tools' nerve-bridge, the
# command that runs it), when cargo is new enough; otherwise `nerve bridge`
# says that its data path is missing and how to get it.
rust-bridge-install: rust-bridge-build
	@if rust/cargo-ok.sh $(CARGO) rust/Cargo.toml >/dev/null; then \
	    set -e; \
	    mkdir -p $(VENV)/bin; \
	    install -m 0755 $(RUST_BRIDGE_BIN) $(VENV)/bin/nerve-bridge-rs; \
	    echo "installed $(VENV)/bin/nerve-bridge-rs"; \
	fi

# What `make test` runs beside its test targets: the bridge's build,
# niced, without make's jobserver (cargo would take one job slot from it),
# its output in $(BUILD)/rust-bridge-prebuild.log. It never fails by itself:
# a failed build is compiled again, and reported, by test-rust.
.PHONY: test-bridge-prebuild
test-bridge-prebuild:
	@if rust/cargo-ok.sh $(CARGO) rust/Cargo.toml >/dev/null; then \
	    if env -u MAKEFLAGS -u MFLAGS $(CARGO_ENV) nice -n 19 $(CARGO) build $(CARGO_MANIFEST) \
	        --locked --profile $(RUST_PROFILE) -j$(JOBS) -p nerve-bridge \
	        >$(BUILD)/rust-bridge-prebuild.log 2>&1; then \
	        echo "test-bridge-prebuild: the Rust bridge is built (log: $(BUILD)/rust-bridge-prebuild.log)"; \
	    else \
	        echo "test-bridge-prebuild: the Rust bridge did not build; test-rust builds it again and says why"; \
	    fi; \
	fi

# The same release profile and zenoh features as rust-bridge-install, so
# only nerve-bridge itself is compiled again for the feature.
bench-bridge-peer: rust-bridge-install
	@if rust/cargo-ok.sh $(CARGO) rust/Cargo.toml; then \
	    set -e; \
	    $(CARGO_ENV) $(CARGO) build $(CARGO_MANIFEST) --locked --release -j$(JOBS) \
	        -p nerve-bridge --features bench-peer --bin nerve-zenoh-peer; \
	    install -m 0755 $(abspath $(BUILD))/cargo/release/nerve-zenoh-peer $(VENV)/bin/nerve-zenoh-peer; \
	    echo "installed $(VENV)/bin/nerve-zenoh-peer"; \
	fi

bench-bridge: bench-bridge-peer

lint-rust-bridge: build
	@rust/cargo-ok.sh $(CARGO) rust/Cargo.toml
	$(CARGO_ENV) $(CARGO) clippy $(CARGO_MANIFEST) --locked --release -j$(JOBS) \
	    -p nerve-bridge --all-targets -- -D warnings

bench-rust: build
	@rust/cargo-ok.sh $(CARGO) rust/Cargo.toml
	$(CARGO_ENV) $(CARGO) run $(CARGO_MANIFEST) --locked --release -j$(JOBS) \
	    -p nerve --example bench_overhead -- --rounds 1000 --batch 5000

# The bridge tests (test-tools, test-bridge) run against the Rust data
# path wherever it can be built.
test-tools test-bridge: rust-bridge-install
