# ROS 2 message types in nerve's C++ and Python APIs (issue 25): the
# generator (python-tools/src/nerve_tools/ros2gen, run at build time by
# cmake/NerveRos2.cmake), the runtime include/nerve/cxx/ros2.hpp, and the
# Python side nerve_tools.ros2. See docs/ros2.md.
#
#   make test-ros2   ctest -L ros2 (C++ through channels) and pytest
#                    tests/ros2: byte for byte against rosbags and against
#                    rclpy's serialize_message (ROS 2 Jazzy wheels, in the
#                    venv of mk/ros2venv.mk)
#
# The build generates the shipped packages with the Python of .venv, which
# needs rosbags (pinned in python-tools/pyproject.toml): the stamp below
# installs just that pin, so `make build` can run before the tools are.

ROS2GEN_STAMP := $(VENV)/.nerve-ros2gen
TEST_TARGETS += test-ros2

.PHONY: test-ros2

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
test-ros2: $(VENV)/.nerve-tools-installed .venv-jazzy/.nerve-ros2 build
	cd $(BUILD) && ctest $(CTEST_FLAGS) -L ros2
	NERVE_ROS2_PEER=$(abspath $(BUILD))/tests/ros2/ros2_peer \
	    NERVE_ROS2_JAZZY_PY=$(CURDIR)/.venv-jazzy/bin/python \
	    $(PY) -m pytest -p no:cacheprovider -c tests/ros2/pytest.ini tests/ros2

# nerve's CDR codec against Fast-CDR (libfastcdr-dev; bench/ros2): encode +
# decode of Imu, LaserScan and PointCloud2 (64 KiB to 4 MiB), one run side
# by side; writes bench/results/ros2-cdr-<host>.{md,jsonl}.
DEPS_PKGS += libfastcdr-dev
.PHONY: bench-ros2
bench-ros2: build
	bench/ros2/run.sh $(BUILD) bench/results/ros2-cdr-$$(hostname)
