# ROS 2 message types in nerve's C++ and Python APIs (issue 25): the
# generator (python-tools/src/nerve_tools/ros2gen, run at build time by
# cmake/NerveRos2.cmake), the runtime include/nerve/cxx/ros2.hpp, and the
# Python side nerve_tools.ros2.types. See docs/ros2.md (section "ROS 2
# message types").
#
#   make test-ros2-types   ctest -L ros2types (C++ through channels) and
#                          pytest tests/ros2types: byte for byte against
#                          rosbags and rclpy's serialize_message (ROS 2
#                          Jazzy wheels, in the venv of mk/ros2venv.mk)
#   make bench-ros2        the codec against Fast-CDR (bench/ros2)
#
# The build generates the shipped packages with the Python of .venv, which
# needs rosbags (pinned in python-tools/pyproject.toml): the stamp below
# installs just that pin, so `make build` can run before the tools are.

# Set the same way by mk/ros2venv.mk, which is read after this file.
ROS2_JAZZY_VENV ?= .venv-jazzy
ROS2GEN_STAMP := $(VENV)/.nerve-ros2gen
TEST_TARGETS += test-ros2-types

.PHONY: test-ros2-types

$(ROS2GEN_STAMP): python-tools/pyproject.toml mk/ros2types.mk | deps
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $$($(PY) -c \
	    'import tomllib; d = tomllib.load(open("python-tools/pyproject.toml", "rb")); \
	     print(" ".join(r for r in d["project"]["dependencies"] if r.startswith("rosbags")))')
	touch $@

build: $(ROS2GEN_STAMP)
# The fuzz build has the ROS 2 decoder's target too (mk/verify.mk).
test-fuzz: $(ROS2GEN_STAMP)

# (The tools' and the Jazzy venv's stamps are spelled out: mk/tools.mk and
# mk/ros2venv.mk are read after this file.)
test-ros2-types: $(VENV)/.nerve-tools-installed $(ROS2_JAZZY_VENV)/.nerve-ros2 build
	cd $(BUILD) && ctest $(CTEST_FLAGS) -L ros2types
	NERVE_ROS2TYPES_PEER=$(abspath $(BUILD))/tests/ros2types/ros2types_peer \
	    NERVE_ROS2_JAZZY_PY=$(abspath $(ROS2_JAZZY_VENV))/bin/python \
	    $(PY) -m pytest -p no:cacheprovider -c tests/ros2types/pytest.ini tests/ros2types

# nerve's CDR codec against Fast-CDR (libfastcdr-dev; bench/ros2): encode +
# decode of Imu, LaserScan and PointCloud2 (64 KiB to 4 MiB), one run side
# by side; writes bench/results/ros2-cdr-<host>.{md,jsonl}. (bench-ros2, in
# mk/ros2dds.mk, is the latency table.)
DEPS_PKGS += libfastcdr-dev
.PHONY: bench-ros2-cdr
bench-ros2-cdr: build
	bench/ros2/run.sh $(BUILD) bench/results/ros2-cdr-$$(hostname)
