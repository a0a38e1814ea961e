# The integrator's verbs (python-tools: nerve echo, pub, hz, bw, delay, who,
# graph; the C command's ls patterns/--watch), shell completion and man
# pages. Tested through the built `nerve` command with the tools' virtual
# environment on the PATH (tests/cli/test_toolbox.py, golden files in
# tests/cli/golden/); tools-install is mk/tools.mk's target (this file is
# included before it, so its variables are not used in prerequisites).
# graphviz renders `nerve graph -o x.svg`; zsh and bash
# load the completion scripts in the tests.
DEPS_PKGS += graphviz zsh

TEST_TARGETS += test-toolbox

.PHONY: test-toolbox

test-toolbox: tools-install build
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH NERVE_CLI=$(abspath $(BUILD))/tools/nerve \
	    $(PY) -m pytest -p no:cacheprovider -c tests/python_tools/pytest.ini \
	    tests/cli/test_toolbox.py tests/cli/test_escapes.py
