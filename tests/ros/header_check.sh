#!/bin/sh
# header_check.sh COMPILER SOURCE_DIR: compile tests/ros/header_check.cpp
# (ros1.hpp with ROS message types) with -std=c++17 -Wall -Wextra
# -Wpedantic -Werror -Wshadow -Wundef, with and without -fno-exceptions.
# Exits 77 (skip) when COMPILER is not installed.
set -u
cxx=$1
src=$2
command -v "$cxx" >/dev/null 2>&1 || { echo "SKIP: $cxx is not installed"; exit 77; }
flags="-std=c++17 -Wall -Wextra -Wpedantic -Werror -Wshadow -Wundef -c -o /dev/null"
for extra in "" -fno-exceptions; do
    # shellcheck disable=SC2086
    $cxx $flags $extra -I"$src/include" "$src/tests/ros/header_check.cpp" ||
        { echo "FAIL: ros1.hpp does not compile with $cxx $extra"; exit 1; }
done
echo "ok: ros1.hpp compiles cleanly with $cxx"
