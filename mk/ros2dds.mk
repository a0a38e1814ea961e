# ROS 2 over DDS (issue 24): `nerve ros2` (python-tools/src/nerve_tools/
# ros2/cli.py for the set-up, tools/ros2/ for the data path on Cyclone DDS),
# tested against real ROS 2 nodes: rclpy of ROS 2 Jazzy and Kilted from
# their wheels (mk/ros2venv.mk) on rmw_fastrtps_cpp, and peers written on
# Cyclone DDS's C API and Fast DDS's C++ API (tests/ros2, built by CMake
# when the libraries are found). All DDS traffic stays on 127.0.0.1.
#
#   make test-ros2   the bridge tests (pytest tests/ros2, about a minute)

DEPS_PKGS += cyclonedds-dev cyclonedds-tools libfastrtps-dev libfastcdr-dev
TEST_TARGETS += test-ros2

# Set the same way by mk/python.mk and mk/ros2venv.mk, which are read
# after this file; the prerequisites below are expanded when it is read.
VENV ?= .venv
ROS2_JAZZY_VENV ?= .venv-jazzy
ROS2_KILTED_VENV ?= .venv-kilted

.PHONY: test-ros2

test-ros2: $(VENV)/.nerve-tools-installed build $(ROS2_JAZZY_VENV)/.nerve-ros2 \
    $(ROS2_KILTED_VENV)/.nerve-ros2
	PATH=$(abspath $(BUILD))/tools:$(CURDIR)/$(VENV)/bin:$$PATH \
	    NERVE_ROS2_BIN=$(abspath $(BUILD))/tests/ros2 \
	    $(PY) -m pytest -p no:cacheprovider -c tests/ros2/pytest.ini tests/ros2

# The ROS 2 latency table (about 8 minutes): nerve, Cyclone DDS over UDP and
# over iceoryx shared memory, Fast DDS over UDP, SHM and data sharing, nerve
# -> nerve ros2 -> either, the bridge's legs, rclpy on rmw_fastrtps
# (bench/ros2/run.py). Debian's iceoryx (iox-roudi, started by run.py) is a
# dependency of the benchmark only, installed here, not by make deps.
BENCH_ROS2_PKGS := iceoryx
ROS2_BENCH_OUT ?= bench/results/ros2-latency-$(shell hostname).md
.PHONY: bench-ros2
bench-ros2: $(VENV)/.nerve-tools-installed build $(ROS2_JAZZY_VENV)/.nerve-ros2
	@scripts/deps.sh $(BENCH_ROS2_PKGS)
	$(PY) bench/ros2/run.py --build $(BUILD) --out $(ROS2_BENCH_OUT)
