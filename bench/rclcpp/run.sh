#!/usr/bin/env bash
# Runs the rclcpp demo programs built by bench/rclcpp/build.sh on rmw_nerve:
#   1. nerve_rclcpp_listener + nerve_rclcpp_talker (10 std_msgs/String)
#   2. nerve_rclcpp_events_node (rclcpp's EventsExecutor: topic + service)
#   3. rclcpp_components' component_container, loaded with the Talker and
#      Listener components of libnerve_rclcpp_components.so
# Each program runs with the environment `nerve ros2 exec` gives a program
# linked to the wheels' rcl (which links librmw_fastrtps_cpp.so):
# RMW_IMPLEMENTATION=rmw_nerve_cpp and rmw_nerve_cpp in LD_PRELOAD. It runs
# in its own ROS domain (channels ros2-dN.*), removed at the end.
# usage: bench/rclcpp/run.sh [BUILD_DIR]   (BUILD_DIR: /work/rclcpp-build/out)
# env:   NERVE_RMW_LIB (default build/rmw_nerve/librmw_nerve_cpp.so), ROS2_PREFIX
# Exit status: the number of the three parts that failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-/work/rclcpp-build/out}
bin="$out/build"
prefix=$(cd "${ROS2_PREFIX:-$repo/.venv-jazzy}" && pwd)
rmw=${NERVE_RMW_LIB:-$repo/build/rmw_nerve/librmw_nerve_cpp.so}
[ -f "$rmw" ] || { echo "run.sh: no $rmw (cmake --build build --target rmw_nerve_cpp)" >&2; exit 2; }
[ -x "$bin/nerve_rclcpp_talker" ] || { echo "run.sh: nothing built in $bin (build.sh)" >&2; exit 2; }
# rmw_nerve takes any domain number: one drawn at random, as tests/rmw does.
domain=${ROS_DOMAIN_ID:-$(((RANDOM << 15 | RANDOM) % 59000 + 1000))}
logs=$(mktemp -d /tmp/nerve-rclcpp.XXXXXX)
export ROS_DOMAIN_ID=$domain RMW_IMPLEMENTATION=rmw_nerve_cpp LD_PRELOAD=$rmw
# rosidl_typesupport_cpp finds a type's fastrtps library on LD_LIBRARY_PATH;
# component_manager finds components in the ament index of AMENT_PREFIX_PATH.
export LD_LIBRARY_PATH="$bin:$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export AMENT_PREFIX_PATH="$bin/prefix:$prefix"
echo "run.sh: domain $domain, rmw $rmw, logs in $logs"
failed=0
report() {  # NAME RC LOG...
    local name=$1 rc=$2; shift 2
    echo "== $name: exit $rc"
    for f in "$@"; do sed "s|^|   $(basename "$f" .log): |" "$f"; done
    [ "$rc" = 0 ] || failed=$((failed + 1))
}

# 1. talker and listener, two processes
timeout 30 "$bin/nerve_rclcpp_listener" 10 >"$logs/listener.log" 2>&1 &
lpid=$!
sleep 1
timeout 30 "$bin/nerve_rclcpp_talker" 10 >"$logs/talker.log" 2>&1
trc=$?
wait $lpid
lrc=$?
report "talker/listener" $((trc | lrc)) "$logs/talker.log" "$logs/listener.log"

# 2. EventsExecutor
timeout 30 "$bin/nerve_rclcpp_events_node" 10 >"$logs/events_node.log" 2>&1
report "events executor" $? "$logs/events_node.log"

# 3. component container with two components loaded into it
timeout 60 "$bin/component_container" >"$logs/container.log" 2>&1 &
cpid=$!
crc=0
for plugin in nerve_rclcpp_demo::Listener nerve_rclcpp_demo::Talker; do
    timeout 30 "$bin/nerve_rclcpp_load_component" /ComponentManager "$plugin" \
        >>"$logs/load_component.log" 2>&1 || crc=1
done
sleep 2
kill -INT $cpid
wait $cpid
echo "container exit after SIGINT: $?" >>"$logs/load_component.log"
grep -q "heard 'component hello" "$logs/container.log" || crc=1
report "component container" $crc "$logs/load_component.log" "$logs/container.log"

echo "== /dev/shm after the runs, domain $domain (removed now):"
ls /dev/shm | grep -E "^nerve(-bell)?\.ros2-(graph-)?d$domain(\.|$)" | sed 's/^/   /'
rm -f /dev/shm/nerve.ros2-d"$domain".* /dev/shm/nerve-bell.ros2-d"$domain".*
# The graph channel only when no process still has it open.
for g in /dev/shm/nerve.ros2-graph-d"$domain" /dev/shm/nerve-bell.ros2-graph-d"$domain"; do
    [ -e "$g" ] && ! fuser -s "$g" 2>/dev/null && rm -f "$g"
done
exit $failed
