#!/bin/sh
# nerve's ROS 2 CDR codec against Fast-CDR in one run (bench_ros2_cdr.cpp
# says what is measured). Writes OUT_PREFIX.jsonl (one line per case and
# implementation) and OUT_PREFIX.md (the host, the command, the table).
#
#   bench/ros2/run.sh BUILD_DIR [OUT_PREFIX]
#
# OUT_PREFIX defaults to bench/results/ros2-cdr-<hostname>.
set -eu
BUILD=${1:?usage: run.sh BUILD_DIR [OUT_PREFIX]}
OUT=${2:-bench/results/ros2-cdr-$(hostname)}
B=$BUILD/bench/ros2/bench_ros2_cdr
[ -x "$B" ] || { echo "run.sh: $B not built (needs libfastcdr-dev and rosbags)" >&2; exit 1; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$B" >"$tmp"
grep '^{' "$tmp" >"$OUT.jsonl"
gov=$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo "n/a (no cpufreq)")
{
    echo "# ROS 2 CDR: nerve vs Fast-CDR 1.0.26"
    echo
    echo "Encode + decode per message, one thread, one run side by side, on a shared"
    echo "development VM (other jobs were running: compare the ratios, not the times)."
    echo "Host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs,"
    echo "kernel $(uname -r), governor $gov, isolated CPUs: $(grep . /sys/devices/system/cpu/isolated 2>/dev/null || echo none)."
    echo "Compiler: $(c++ --version | head -n1); build type $(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt")."
    echo "Fast-CDR: Debian libfastcdr-dev $(dpkg-query -W -f '${Version}' libfastcdr-dev 2>/dev/null || echo '?')."
    echo "Command: \`bench/ros2/run.sh $BUILD $OUT\` (make bench-ros2-cdr)."
    echo
    echo "Both write the same bytes for every case (checked before timing)."
    echo "p50 over batches of per-op times; p99 and max are in $(basename "$OUT").jsonl."
    grep -v '^{' "$tmp"
} >"$OUT.md"
cat "$OUT.md"
