#!/bin/sh
# run_examples.sh BIN_DIR CASE: run the C++ examples briefly, as a test.
#   imu_controller  imu_publisher (2 kHz) feeding controller, which must
#                   publish commands
#   sync_by_time    must pair scans with IMU samples
#   bench           bench_cxx_overhead smoke run (numbers not judged)
#   own_only        examples run beside a user's channel of the same name
#                   leave it in place and remove only what they created
#   readme_c        README.md's C example, compiled (SRC_DIR CC INCLUDE
#                   LIB after CASE), run beside a user's channel and alone
# Channel names start with nt-<pid>- (the shm_clean fixture's prefix);
# every channel is removed on exit, whatever happens.
set -u
bin=$1
case=$2
p=nt-$$
cleanup() {
    rm -f /dev/shm/nerve."$p"-* /dev/shm/nerve-bell."$p"-*
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}
case $case in
imu_controller)
    out=$(mktemp)
    # The controller creates the IMU channel if it comes first; it stops
    # after 50 commands or 20 s, whichever is first.
    "$bin/controller" --imu "$p-imu" --cmd "$p-cmd" --count 50 \
        --duration 20 >"$out" 2>&1 &
    ctl=$!
    "$bin/imu_publisher" --channel "$p-imu" --rate 2000 --duration 1 ||
        fail "imu_publisher failed"
    wait $ctl
    rc=$?
    cat "$out"
    grep -q 'published [1-9][0-9]* commands' "$out" ||
        { rm -f "$out"; fail "controller published no command"; }
    rm -f "$out"
    [ $rc -eq 0 ] || fail "controller exited $rc"
    ;;
sync_by_time)
    "$bin/sync_by_time" --imu "$p-simu" --scan "$p-sscan" --duration 0.5 ||
        fail "sync_by_time failed"
    ;;
own_only)
    # The user's IMU channel, left by an earlier run with --keep.
    "$bin/imu_publisher" --channel "$p-imu" --count 3 --rate 1000 --keep \
        >/dev/null || fail "imu_publisher --keep failed"
    [ -e /dev/shm/nerve."$p-imu" ] || fail "--keep removed $p-imu"
    # The documented pair on it: the controller creates the command
    # channel (its own) and finds the IMU channel (the user's).
    "$bin/controller" --imu "$p-imu" --cmd "$p-cmd" --count 5 \
        --duration 20 >/dev/null 2>&1 &
    ctl=$!
    "$bin/imu_publisher" --channel "$p-imu" --rate 2000 --duration 1 \
        >/dev/null || fail "imu_publisher failed"
    wait $ctl || fail "controller exited $?"
    [ -e /dev/shm/nerve."$p-imu" ] ||
        fail "an example removed the user's channel $p-imu"
    [ ! -e /dev/shm/nerve."$p-cmd" ] ||
        fail "controller left the channel it created, $p-cmd"
    # Alone, the publisher removes the channel it created.
    "$bin/imu_publisher" --channel "$p-own" --count 3 --rate 1000 \
        >/dev/null || fail "imu_publisher failed"
    [ ! -e /dev/shm/nerve."$p-own" ] ||
        fail "imu_publisher left the channel it created, $p-own"
    ;;
readme_c)
    src=$3 cc=$4 inc=$5 lib=$6
    dir=$(mktemp -d)
    # The first ```c block of the README, on this test's channel name.
    awk '/^```c$/ {on = 1; next} on && /^```$/ {exit} on' "$src/README.md" |
        sed "s/\"imu\"/\"$p-imu\"/g" >"$dir/readme.c"
    grep -q "$p-imu" "$dir/readme.c" || fail "no C example in README.md"
    "$cc" -std=c11 -Wall -Werror -I"$inc" "$dir/readme.c" "$lib" \
        -Wl,-rpath,"$(dirname "$lib")" -o "$dir/readme" ||
        fail "README's C example does not compile"
    "$bin/imu_publisher" --channel "$p-imu" --count 1 --rate 1000 --keep \
        >/dev/null || fail "imu_publisher --keep failed"
    "$dir/readme" || fail "README's C example failed beside a user's channel"
    [ -e /dev/shm/nerve."$p-imu" ] ||
        fail "README's C example removed the user's channel"
    rm -f /dev/shm/nerve."$p-imu" /dev/shm/nerve-bell."$p-imu"
    "$dir/readme" || fail "README's C example failed alone"
    [ ! -e /dev/shm/nerve."$p-imu" ] ||
        fail "README's C example left the channel it created"
    rm -rf "$dir"
    ;;
bench)
    "$bin/bench_cxx_overhead" --rounds 6 --batch 200 --channel "$p-bench" ||
        fail "bench_cxx_overhead failed"
    ;;
*)
    fail "unknown case $case"
    ;;
esac
echo "ok: $case"
