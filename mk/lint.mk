# Static checks, run by `make test` as the target `lint` (a few seconds):
#
#   lint-sync      scripts/check-sync-tags: every SYNC(tag) and step label
#                  (W1, R2-R3, ...) of the channel protocol is named on both
#                  sides, the code (src/) and the SPIN model (model/*.pml);
#                  and the checker's own self-test
#   lint-docs      scripts/check-doc-paths: every path that README.md,
#                  CONTRIBUTING.md and docs/ cite exists; and its self-test;
#                  scripts/check-cmake-sources: every C source and test of
#                  src/ and tests/, and every source of tools/ros2/ and
#                  rmw_nerve/src/, is in the list CMake builds it from
#   lint-length    scripts/check-function-length: no function over 80
#                  lines in the C, C++, Python and Rust files git lists
#                  (product, tests, benchmarks, examples), except those it
#                  lists with the reason each stays long; and its self-test
#   lint-cppcheck  cppcheck over src/ and tools/ (warning, portability and
#                  performance checks; a false positive is suppressed inline
#                  with `cppcheck-suppress ID ; reason`)
#   lint-ruff      ruff over the Python code (rules and exclusions in
#                  ruff.toml; the pinned version is python-tools'
#                  pyproject.toml extra "lint", installed into .venv)
#   format-check   clang-format --dry-run --Werror over every C and C++ file
#                  in git (.clang-format). Enforced once the tree has been
#                  formatted: `make format` formats every such file and
#                  writes the stamp .clang-format-enforced; commit both, and
#                  from then on format-check fails on unformatted code.
#                  Without the stamp it says that it is skipped, and why.
#
#   make format    format the C and C++ files in place (see above)

DEPS_PKGS += cppcheck clang-format git python3-venv
TEST_TARGETS += lint

VENV ?= .venv
LINT_STAMP := $(VENV)/.nerve-lint-deps
FORMAT_STAMP := .clang-format-enforced
# Every C and C++ source of the project that git knows (no generated files).
FORMAT_FILES = $(shell git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
CLANG_FORMAT ?= clang-format
CPPCHECK_FLAGS := --enable=warning,portability,performance --std=c11 \
    --platform=unix64 -Iinclude -Isrc -D_GNU_SOURCE -D__GNUC__=12 \
    -D__BYTE_ORDER__=1234 -D__ORDER_LITTLE_ENDIAN__=1234 \
    --inline-suppr --error-exitcode=1 --quiet -j$(JOBS)
RUFF_PATHS := python python-tools tests bench tools/man scripts/check-sync-tags \
    scripts/check-doc-paths scripts/check-function-length

.PHONY: lint lint-sync lint-docs lint-length lint-cppcheck lint-ruff format-check format

lint: lint-sync lint-docs lint-length lint-cppcheck lint-ruff format-check
	@echo "lint: all static checks passed"

lint-sync:
	scripts/check-sync-tags
	scripts/check-sync-tags --self-test

lint-docs:
	scripts/check-doc-paths
	scripts/check-doc-paths --self-test
	scripts/check-cmake-sources

lint-length:
	scripts/check-function-length
	scripts/check-function-length --self-test

lint-cppcheck: deps
	cppcheck $(CPPCHECK_FLAGS) src tools

# The pin lives in python-tools/pyproject.toml only (extra "lint").
$(LINT_STAMP): python-tools/pyproject.toml mk/lint.mk | deps
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $$($(PY) -c \
	    'import tomllib; d = tomllib.load(open("python-tools/pyproject.toml", "rb")); \
	     print(" ".join(d["project"]["optional-dependencies"]["lint"]))')
	touch $@

lint-ruff: $(LINT_STAMP)
	$(VENV)/bin/ruff check --no-cache $(RUFF_PATHS)

format-check: deps
	@if [ -f $(FORMAT_STAMP) ]; then \
	    echo "$(CLANG_FORMAT) --dry-run --Werror (C and C++ files in git)"; \
	    $(CLANG_FORMAT) --style=file --dry-run --Werror $(FORMAT_FILES); \
	else \
	    echo "format-check: skipped: the tree has not been formatted yet" \
	         "($(FORMAT_STAMP) is absent); run 'make format' once and" \
	         "commit the result to enforce .clang-format"; \
	fi

format: deps
	$(CLANG_FORMAT) --style=file -i $(FORMAT_FILES)
	@echo "# Written by 'make format' (mk/lint.mk): the C and C++ files of" > $(FORMAT_STAMP)
	@echo "# this tree follow .clang-format, so 'make lint' enforces it." >> $(FORMAT_STAMP)
	@echo "make format: formatted; commit the files and $(FORMAT_STAMP)"
