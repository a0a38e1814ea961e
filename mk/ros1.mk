# ROS 1 interop (issue 13): the `nerve ros1` bridge (python-tools), the
# ROS 1 message codec of the C++ API (include/nerve/cxx/ros1.hpp) and the
# fuRom benchmark (bench/ros). Debian 12's ROS 1 (ros_comm 1.15) is the
# real thing the tests run against: a roscore on 127.0.0.1, rostopic,
# rosbag, and roscpp nodes built from the Debian packages.
#
#   make test-ros    the bridge tests (pytest tests/ros, one shared roscore)
#                    and the C++ codec tests (ctest -L ros)
#   make bench-ros   the fuRom table: nerve (blocking, busy poll, lead)
#                    vs roscpp vs nodelets, ROS_BENCH_RUNS times
#                    (writes bench/results/ros-furom-<host>.md)

DEPS_PKGS += ros-core python3-rospy python3-rostopic python3-rosbag \
    libroscpp-dev libsensor-msgs-dev libnav-msgs-dev libnodelet-dev \
    libnodeletlib-dev libnodeletlib-tools python3-nodelet
TEST_TARGETS += test-ros

ROS_BENCH_SECONDS ?= 10
ROS_BENCH_RUNS ?= 2

.PHONY: test-ros bench-ros

# (The tools' stamp is spelled out: mk/tools.mk is read after this file.)
test-ros: $(VENV)/.nerve-tools-installed build
	cd $(BUILD) && ctest $(CTEST_FLAGS) -L ros
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH NERVE_ROS_BIN=$(abspath $(BUILD))/tests/ros \
	    $(PY) -m pytest -p no:cacheprovider -c tests/ros/pytest.ini tests/ros

bench-ros: build
	bench/ros/run.sh $(BUILD) $(ROS_BENCH_SECONDS) bench/results/ros-furom-$$(hostname) $(ROS_BENCH_RUNS)
