#!/bin/sh
# The Quick starts name make targets that exist (README.md and
# docs/ros2.md: every `make ...` line of their first code block after
# "## Quick start"), and `make ros2-jazzy` makes the Jazzy wheels' venv
# only (rclpy of Jazzy, nothing of Kilted). `make -n` runs nothing.
# usage: test_quickstart.sh SRC_DIR
set -u
src=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
# The targets of the Makefile, from make's database (-p) for a goal that
# does not exist: nothing is run ('make -n test' would run the recipes
# that call $(MAKE), as make -n does).
make -C "$src" -pRrq __nerve_no_such_goal__ >"$dir/db" 2>/dev/null
grep -q '^build:' "$dir/db" || fail "make -p lists no target 'build'"
n=0
for doc in README.md docs/ros2.md; do
    lines=$(sed -n '/^## Quick start/,/^## /p' "$src/$doc" | grep '^make ' | sed 's/#.*//')
    [ -n "$lines" ] || fail "$doc: no make line in its Quick start"
    for t in $(echo "$lines" | sed 's/^make //'); do
        n=$((n + 1))
        grep -q "^$t:" "$dir/db" || fail "$doc: the Quick start names 'make $t', no such target"
    done
done
grep -q 'make ros2-jazzy' "$src/docs/ros2.md" ||
    fail "docs/ros2.md's Quick start does not name make ros2-jazzy"
out=$(make -C "$src" -n ros2-jazzy ROS2_JAZZY_VENV="$dir/j" ROS2_KILTED_VENV="$dir/k" 2>&1) ||
    fail "make -n ros2-jazzy: $out"
echo "$out" | grep -q "$dir/j/bin/python -m pip install .*ros-jazzy-rclpy" ||
    fail "make ros2-jazzy does not install rclpy of Jazzy into its venv: $out"
echo "$out" | grep -q "kilted\|$dir/k" &&
    fail "make ros2-jazzy touches Kilted: $out"
echo "quickstart: $n make targets checked"
[ "$fails" -eq 0 ] || exit 1
