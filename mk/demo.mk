# make demo: the robot pipeline (demo/demo.c). An IMU process at
# 1 kHz, a controller woken by each sample, an actuator, a 100 Hz planner, a
# logger and a deliberately slow reader; halfway through the logger and
# the planner are killed with SIGKILL. Prints end-to-end latency
# percentiles, each task's timing errors, what was lost, and a summary.
#
#   make demo                  5 s run
#   make demo DEMO_SECONDS=2   short run (CI)

DEMO_SECONDS ?= 5

# The demo needs only the core's packages, not every layer's (ROS, SPIN,
# clang, ...); it also builds the nerve command, so that the README's
# build/tools/nerve exists after it.
demo:
	@scripts/deps.sh $(CORE_PKGS)
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j$(JOBS) --target nerve-demo nerve_cli
	$(BUILD)/demo/nerve-demo --seconds $(DEMO_SECONDS)
