# The Python package (python/): installed into the project's virtual
# environment .venv and tested with pytest (tests/python), plus its
# benchmarks (python/bench). Offline re-runs reinstall nothing unless the
# package's sources changed: pinned dependencies are installed once (a stamp
# remembers the pins), and the package is rebuilt incrementally, without
# build isolation, from python/build/.

VENV ?= .venv
PY := $(VENV)/bin/python
PY_DEPS_STAMP := $(VENV)/.nerve-py-deps
PY_PKG_STAMP := $(VENV)/.nerve-py-installed
# Everything the extension and the package are built from.
PY_SOURCES := $(wildcard python/pyproject.toml python/CMakeLists.txt \
    python/src/*.cpp python/src/*.h python/src/nerve/*.py python/src/nerve/*.pyi \
    CMakeLists.txt include/nerve/*.h src/*.c src/*.h src/platform/linux/*.c)

DEPS_PKGS += python3 python3-venv python3-dev
TEST_TARGETS += test-python

.PHONY: python-install bench-python

# The pins live in python/pyproject.toml only (build-system.requires and the
# "test" extra); Debian 12's Python 3.11 reads them with tomllib.
$(PY_DEPS_STAMP): python/pyproject.toml mk/python.mk | deps
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $$($(PY) -c \
	    'import tomllib; d = tomllib.load(open("python/pyproject.toml", "rb")); \
	     print(" ".join(d["build-system"]["requires"] + d["project"]["optional-dependencies"]["test"]))')
	touch $@

$(PY_PKG_STAMP): $(PY_DEPS_STAMP) $(PY_SOURCES)
	$(PY) -m pip install -q --disable-pip-version-check --no-build-isolation \
	    --no-deps --no-index ./python
	touch $@

python-install: $(PY_PKG_STAMP)

# The interop tests drive the `nerve` command of the regular build.
test-python: $(PY_PKG_STAMP) build
	NERVE_CLI=$(abspath $(BUILD))/tools/nerve $(PY) -m pytest -p no:cacheprovider \
	    -c tests/python/pytest.ini tests/python

bench-python: $(PY_PKG_STAMP)
	$(PY) python/bench/bench_python.py --out bench/results
