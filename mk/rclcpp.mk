# rclcpp from its source on rmw_nerve (issue 35, item 6): not part of
# `make test` (no registry ships rclcpp, and building it takes ~30 min on 2
# cores). See docs/ros2.md, "rclcpp from source on rmw_nerve".
#
#   make rclcpp-demo RCLCPP_SRC=DIR   build rclcpp 28.1.6 + rclcpp_components
#                                     from the checkouts in DIR against
#                                     .venv-jazzy (bench/rclcpp/build.sh),
#                                     then run the demos (bench/rclcpp/run.sh)
#   RCLCPP_BUILD=DIR                  where it builds (/work/rclcpp-build/out)

# Set the same way by mk/ros2venv.mk, which is read after this file.
ROS2_JAZZY_VENV ?= .venv-jazzy
RCLCPP_BUILD ?= /work/rclcpp-build/out

.PHONY: rclcpp-demo

rclcpp-demo: $(ROS2_JAZZY_VENV)/.nerve-ros2 build
	@test -n "$(RCLCPP_SRC)" || { echo "make rclcpp-demo: set RCLCPP_SRC (see docs/ros2.md)"; exit 2; }
	ROS2_PREFIX=$(ROS2_JAZZY_VENV) bench/rclcpp/build.sh $(RCLCPP_SRC) $(RCLCPP_BUILD)
	ROS2_PREFIX=$(ROS2_JAZZY_VENV) NERVE_RMW_LIB=$(abspath $(BUILD))/rmw_nerve/librmw_nerve_cpp.so \
	    bench/rclcpp/run.sh $(RCLCPP_BUILD)
