# nerve bridge (issue 12): channels across hosts on Eclipse Zenoh
# (docs/bridge.md): the data path nerve-bridge-rs (rust/nerve-bridge, built
# and installed by mk/rust.mk), run by the command of
# python-tools/src/nerve_tools/bridge/. Its tests are in tests/python_tools
# (test_bridge*.py), so test-tools runs them against the installed
# program; the multi-host ones build hosts from network namespaces and
# need root, ip, nsenter/unshare and tc (they skip with the reason
# otherwise).
DEPS_PKGS += iproute2 util-linux
# test_locked_down_robot makes its CA and certificates with openssl.
DEPS_PKGS += openssl
# mk/python.mk (read after this file) sets VENV the same way; the
# prerequisites below are expanded when this file is read.
VENV ?= .venv

.PHONY: test-bridge bench-bridge

# Only the bridge's tests.
# (The tools stamp is spelled out: mk/tools.mk is read after this file.)
test-bridge: $(VENV)/.nerve-tools-installed build
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH NERVE_CLI=$(abspath $(BUILD))/tools/nerve \
	    $(PY) -m pytest -p no:cacheprovider -c tests/python_tools/pytest.ini \
	    tests/python_tools/test_bridge_wire.py tests/python_tools/test_bridge_engine.py \
	    tests/python_tools/test_bridge_peer_doors.py tests/python_tools/test_bridge.py \
	    tests/python_tools/test_limits.py tests/python_tools/test_ros2_zenoh.py

# nerve bridge against bare eclipse-zenoh across a veth pair (needs root,
# about 3 minutes); kept results go in bench/results/bridge-*.md.
BRIDGE_BENCH_OUT ?= bench/results/bridge-$(shell hostname).md
bench-bridge: $(VENV)/.nerve-tools-installed
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) bench/bridge/bench_bridge.py --out $(BRIDGE_BENCH_OUT)
