# rmw_nerve_cpp (rmw_nerve/): ROS 2 nodes on nerve channels, built against
# the Jazzy and the Kilted wheels' venvs of mk/ros2venv.mk and tested
# through their real rclpy and rcl, each node started by `nerve-ros2-exec`
# (tests/rmw).
#
#   make test-rmw   the venvs, the libraries, the tests (under a minute)

TEST_TARGETS += test-rmw
# nm -D (binutils) lists the rmw functions the tests compare.
DEPS_PKGS += binutils

.PHONY: test-rmw

RMW_SIGNAL_TRIES_JAZZY ?= 25
RMW_SIGNAL_TRIES_KILTED ?= 4

# mk/ros2venv.mk and mk/tools.mk are read after this file: their names for
# the venv stamps are spelled out here (same defaults).
ROS2_JAZZY_VENV ?= .venv-jazzy
ROS2_KILTED_VENV ?= .venv-kilted
RMW_TEST = PATH=$(CURDIR)/$(VENV)/bin:$(abspath $(BUILD))/tools:$$PATH NERVE_CLI=$(abspath $(BUILD))/tools/nerve \
    $(PY) -m pytest -p no:cacheprovider -c tests/python_tools/pytest.ini tests/rmw

test-rmw: $(ROS2_JAZZY_VENV)/.nerve-ros2 $(ROS2_KILTED_VENV)/.nerve-ros2 \
          $(VENV)/.nerve-tools-installed build
	@# A build configured before the venvs existed skipped the libraries.
	cmake -S . -B $(BUILD) -DNERVE_ROS2_PREFIX=$(abspath $(ROS2_JAZZY_VENV)) \
	    -DNERVE_ROS2_KILTED_PREFIX=$(abspath $(ROS2_KILTED_VENV)) >/dev/null
	cmake --build $(BUILD) -j$(JOBS) --target rmw_nerve_cpp rmw_nerve_cpp_kilted \
	    rmw_rcl_loan rmw_rcl_loan_kilted rmw_rcl_listen rmw_rcl_listen_kilted \
	    rmw_rcl_loan_cpp rmw_rcl_loan_cpp_kilted rmw_rcl_grow rmw_rcl_grow_kilted \
	    nerve_crash_shared
	@echo "== rmw_nerve_cpp on ROS 2 Jazzy"
	NERVE_RMW_LIB=$(abspath $(BUILD))/rmw_nerve/librmw_nerve_cpp.so \
	    NERVE_ROS2_PYTHON=$(abspath $(ROS2_JAZZY_VENV))/bin/python \
	    NERVE_RMW_SIGNAL_TRIES=$(RMW_SIGNAL_TRIES_JAZZY) NERVE_TEST_LIFE_STARTS=10 \
	    NERVE_TEST_LIFE_C_STARTS=200 NERVE_TEST_LARGE_SECONDS=10 $(RMW_TEST)
	@echo "== rmw_nerve_cpp on ROS 2 Kilted"
	@# Kilted runs every test of Jazzy's at a smaller scale (CI time; the
	@# code is the same, built against Kilted's headers): the signal tests'
	@# tries per kind of node 25 on Jazzy, 4 on Kilted (each try starts a
	@# node, about 0.8 s; the tests' default is 50: make test-rmw
	@# RMW_SIGNAL_TRIES_JAZZY=50 RMW_SIGNAL_TRIES_KILTED=50). The leftovers
	@# tests: the rcl-in-C node's starts (milliseconds each) 200 on Jazzy,
	@# 20 on Kilted; the rclpy node's (about a second each) 10 on Jazzy, 4
	@# on Kilted (200 is each test's default, for a run by hand).
	NERVE_RMW_LIB=$(abspath $(BUILD))/rmw_nerve/kilted/librmw_nerve_cpp.so \
	    NERVE_ROS2_PYTHON=$(abspath $(ROS2_KILTED_VENV))/bin/python \
	    NERVE_RMW_SIGNAL_TRIES=$(RMW_SIGNAL_TRIES_KILTED) NERVE_TEST_LIFE_STARTS=4 \
	    NERVE_TEST_LIFE_C_STARTS=20 \
	    $(RMW_TEST)

# A benchmark, not a test: 20 rclpy nodes restarted at random (half by
# kill -9) for SOAK_MINUTES (10), printing /dev/shm bytes and each node's
# RSS, descriptors and threads every 30 s, and a flat/not-flat verdict.
SOAK_MINUTES ?= 10
.PHONY: soak-rmw
soak-rmw: $(ROS2_JAZZY_VENV)/.nerve-ros2 $(VENV)/.nerve-tools-installed build
	cmake -S . -B $(BUILD) -DNERVE_ROS2_PREFIX=$(abspath $(ROS2_JAZZY_VENV)) >/dev/null
	cmake --build $(BUILD) -j$(JOBS) --target rmw_nerve_cpp
	NERVE_RMW_LIB=$(abspath $(BUILD))/rmw_nerve/librmw_nerve_cpp.so \
	    NERVE_ROS2_PYTHON=$(abspath $(ROS2_JAZZY_VENV))/bin/python \
	    PATH=$(CURDIR)/$(VENV)/bin:$$PATH \
	    $(PY) bench/rmw/soak.py --minutes $(SOAK_MINUTES)
