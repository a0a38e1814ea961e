# rmw_nerve_cpp (rmw_nerve/): ROS 2 nodes on nerve channels, built against
# the Jazzy wheels' venv of mk/ros2venv.mk and tested through their real
# rclpy and rcl, each node started by `nerve-ros2-exec` (tests/rmw).
#
#   make test-rmw   the venv, the library, the tests (about a minute)

TEST_TARGETS += test-rmw
# nm -D (binutils) lists the rmw functions the tests compare.
DEPS_PKGS += binutils

.PHONY: test-rmw

# mk/ros2venv.mk and mk/tools.mk are read after this file: their names for
# the venv stamps are spelled out here (same defaults).
ROS2_JAZZY_VENV ?= .venv-jazzy

test-rmw: $(ROS2_JAZZY_VENV)/.nerve-ros2 $(VENV)/.nerve-tools-installed build
	@# A build configured before the venv existed skipped the library.
	cmake -S . -B $(BUILD) -DNERVE_ROS2_PREFIX=$(abspath $(ROS2_JAZZY_VENV)) >/dev/null
	cmake --build $(BUILD) -j$(JOBS) --target rmw_nerve_cpp
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH NERVE_CLI=$(abspath $(BUILD))/tools/nerve \
	    NERVE_RMW_LIB=$(abspath $(BUILD))/rmw_nerve/librmw_nerve_cpp.so \
	    NERVE_ROS2_PYTHON=$(abspath $(ROS2_JAZZY_VENV))/bin/python \
	    $(PY) -m pytest -p no:cacheprovider -c tests/python_tools/pytest.ini tests/rmw
