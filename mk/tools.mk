# The Python tools (python-tools/: nerve record, play, top, foxglove, plot),
# installed into the project's virtual environment on top of the core
# package of mk/python.mk, and tested with pytest (tests/python_tools).
# As there, pinned dependencies are installed once (a stamp remembers the
# pins) and the pure-Python package is reinstalled only when it changed.
# The tests run the console scripts from .venv/bin, and the `nerve` command
# of the regular build finds them there as its verbs through the PATH.

TOOLS_DEPS_STAMP := $(VENV)/.nerve-tools-deps
TOOLS_PKG_STAMP := $(VENV)/.nerve-tools-installed
TOOLS_SOURCES := $(wildcard python-tools/pyproject.toml python-tools/README.md \
    python-tools/src/nerve_tools/*.py python-tools/src/nerve_tools/*/*.py \
    python-tools/src/nerve_tools/py.typed)

TEST_TARGETS += test-tools
# nerve foxglove makes a certificate for its loopback hop with openssl.
DEPS_PKGS += openssl
# Its browser test opens the WebSocket from headless Chromium.
DEPS_PKGS += chromium

.PHONY: tools-install

# The pins live in python-tools/pyproject.toml only: the build backend, the
# dependencies (less `nerve`, which is ./python) and the "test" extra.
$(TOOLS_DEPS_STAMP): python-tools/pyproject.toml mk/tools.mk $(PY_DEPS_STAMP)
	$(PY) -m pip install -q --disable-pip-version-check $$($(PY) -c \
	    'import tomllib; d = tomllib.load(open("python-tools/pyproject.toml", "rb")); \
	     p = d["project"]; \
	     print(" ".join(d["build-system"]["requires"] + \
	         [r for r in p["dependencies"] if not r.startswith("nerve")] + \
	         p["optional-dependencies"]["test"]))')
	touch $@

$(TOOLS_PKG_STAMP): $(TOOLS_DEPS_STAMP) $(PY_PKG_STAMP) $(TOOLS_SOURCES)
	$(PY) -m pip install -q --disable-pip-version-check --no-build-isolation \
	    --no-deps --no-index ./python-tools
	touch $@

tools-install: $(TOOLS_PKG_STAMP)

test-tools: $(TOOLS_PKG_STAMP) build
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH NERVE_CLI=$(abspath $(BUILD))/tools/nerve \
	    $(PY) -m pytest -p no:cacheprovider -c tests/python_tools/pytest.ini \
	    tests/python_tools

# python/bench/bench_python.py writes its host record with nerve_tools.host
# (the Python writer of the record nerve bench writes in C).
bench-python: $(TOOLS_PKG_STAMP)
