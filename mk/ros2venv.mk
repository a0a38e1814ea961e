# Real ROS 2 Python nodes without a ROS 2 installation: rclpy and message
# packages of ROS 2 Jazzy and Kilted from their wheels on PyPI, each in a
# virtual environment of its own (they cannot share one: both install the
# `rclpy` package). rclpy's default RMW in these wheels is rmw_fastrtps_cpp.
# test_msgs gives the action tests an action type (Fibonacci).
# Used by the ROS 2 tests (nerve ros2, ROS 2 message types, rmw_nerve).
#
#   make ros2-venvs   create both (about 30 s each on the first run)
#   make ros2-jazzy   create the Jazzy one only (rclpy for ROS 2 Jazzy
#                     nodes, and what rmw_nerve_cpp builds against; the
#                     ROS 2 Quick start of docs/ros2.md names it)

ROS2_JAZZY_VENV ?= .venv-jazzy
ROS2_KILTED_VENV ?= .venv-kilted
ROS2_JAZZY_PKGS := 'ros-jazzy-rclpy[fastrtps]==7.1.6' ros-jazzy-std-msgs==5.3.6 \
    ros-jazzy-sensor-msgs==5.3.6 ros-jazzy-geometry-msgs==5.3.6 \
    ros-jazzy-nav-msgs==5.3.6 ros-jazzy-diagnostic-msgs==5.3.6 \
    ros-jazzy-builtin-interfaces==2.0.3 ros-jazzy-rcl-interfaces==2.0.3 \
    ros-jazzy-test-msgs==2.0.3
ROS2_KILTED_PKGS := 'ros-kilted-rclpy[fastrtps]==9.1.2' ros-kilted-std-msgs==5.5.1 \
    ros-kilted-sensor-msgs==5.5.1 ros-kilted-test-msgs==2.3.0 ros-kilted-nav-msgs==5.5.1

DEPS_PKGS += python3-venv

.PHONY: ros2-venvs ros2-jazzy

$(ROS2_JAZZY_VENV)/.nerve-ros2: mk/ros2venv.mk | deps
	test -x $(ROS2_JAZZY_VENV)/bin/python || python3 -m venv $(ROS2_JAZZY_VENV)
	$(ROS2_JAZZY_VENV)/bin/python -m pip install -q --disable-pip-version-check $(ROS2_JAZZY_PKGS)
	touch $@

$(ROS2_KILTED_VENV)/.nerve-ros2: mk/ros2venv.mk | deps
	test -x $(ROS2_KILTED_VENV)/bin/python || python3 -m venv $(ROS2_KILTED_VENV)
	$(ROS2_KILTED_VENV)/bin/python -m pip install -q --disable-pip-version-check $(ROS2_KILTED_PKGS)
	touch $@

ros2-venvs: $(ROS2_JAZZY_VENV)/.nerve-ros2 $(ROS2_KILTED_VENV)/.nerve-ros2
ros2-jazzy: $(ROS2_JAZZY_VENV)/.nerve-ros2
