# Benchmarks that are run by hand, not by `make test` (issue 16): they are
# not in TEST_TARGETS. Results go to bench/results/ with the host.
.PHONY: bench-callgrind bench-pingpong bench-peers cyclic-bench

# put/get instruction counts under callgrind (needs valgrind); compare the
# table before and after a change to the hot path.
bench-callgrind: build
	bench/callgrind.sh --build $(BUILD)

# nerve's ping-pong rows and floors, pinned to CPUs 0 and 1.
bench-pingpong: build
	$(BUILD)/tools/nerve bench --pingpong --cpus 0,1 --lines 1,2,3

# nerve and iceoryx2 side by side (builds bench/peers with cargo; network
# on the first build only); writes bench/results/pingpong-<host>.md.
bench-peers: build
	bench/peers/run.sh --nerve $(BUILD)/tools/nerve

# nerve-cyclic vs cyclictest, 1 kHz SCHED_FIFO, idle and under stress-ng
# (needs root); writes bench/results/cyclic-<host>.md.
# stress-ng: load for `nerve cyclic --load stress`; rt-tests: cyclictest.
CYCLIC_BENCH_SECONDS ?= 30
DEPS_PKGS += stress-ng rt-tests
cyclic-bench: deps
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j$(JOBS) --target nerve-cyclic
	DUR=$(CYCLIC_BENCH_SECONDS) OUT=bench/results/cyclic-$$(hostname).md \
	    tools/cyclic/cyclic-vs-cyclictest.sh $(BUILD)/tools/nerve-cyclic
