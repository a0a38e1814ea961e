#!/usr/bin/env bash
# Builds rclcpp 28.1.6 (Jazzy) and rclcpp_components from source against the
# Jazzy wheels' prefix, plus our demo programs (bench/rclcpp/*.cpp), outside
# the repository. No network: SRC must already hold these checkouts (see
# docs/ros2.md, "rclcpp from source on rmw_nerve", for where they come from):
#   SRC/rclcpp                   ros2/rclcpp, tag 28.1.6
#   SRC/libstatistics_collector  ros-tooling/libstatistics_collector, tag 1.7.3
#   SRC/class_loader             ros/class_loader, tag 2.7.0
#   SRC/rcl_interfaces           ros2/rcl_interfaces, tag 2.0.2 (statistics_msgs,
#                                composition_interfaces: the wheels lack both)
# usage: bench/rclcpp/build.sh SRC [BUILD_DIR]   (BUILD_DIR: /work/rclcpp-build/out)
# env:   ROS2_PREFIX (default: the repo's .venv-jazzy), JOBS (default 2),
#        RCLCPP_OPT (default -O0: rclcpp is slow to compile; -O2 as a release)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
src=${1:?usage: $0 SRC [BUILD_DIR]}
src=$(cd "$src" && pwd)
out=${2:-/work/rclcpp-build/out}
prefix=$(cd "${ROS2_PREFIX:-$repo/.venv-jazzy}" && pwd)
for d in rclcpp/rclcpp libstatistics_collector class_loader rcl_interfaces/statistics_msgs \
         rcl_interfaces/composition_interfaces; do
    [ -d "$src/$d" ] || { echo "build.sh: $src/$d is missing" >&2; exit 2; }
done
[ -x "$prefix/bin/python" ] || { echo "build.sh: no $prefix/bin/python (make ros2-venvs)" >&2; exit 2; }
mkdir -p "$out"
gen="$out/rosidl"
# The interface packages rclcpp and rclcpp_components need and the wheels lack.
gen_pkg() {
    local pkg=$1; shift
    [ -f "$gen/$pkg/.done" ] && return 0
    rm -rf "${gen:?}/$pkg"
    AMENT_PREFIX_PATH=$prefix "$prefix/bin/python" "$here/rosidl_gen.py" "$pkg" \
        "$src/rcl_interfaces/$pkg" "$gen/$pkg" "$prefix/share" "$@" >"$out/rosidl-$pkg.log"
    touch "$gen/$pkg/.done"
}
gen_pkg statistics_msgs msg/MetricsMessage.msg msg/StatisticDataPoint.msg msg/StatisticDataType.msg
gen_pkg composition_interfaces srv/ListNodes.srv srv/LoadNode.srv srv/UnloadNode.srv
cmake -S "$here" -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_C_FLAGS=-O1 -DRCLCPP_OPT="${RCLCPP_OPT:--O0}" \
    -DROS2_PREFIX="$prefix" -DRCLCPP_SRC="$src" -DROSIDL_GEN="$gen"
cmake --build "$out/build" -j "${JOBS:-2}"
echo "build.sh: built into $out/build"
