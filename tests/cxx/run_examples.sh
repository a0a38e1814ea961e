#!/bin/sh
# run_examples.sh BIN_DIR CASE: run the C++ examples briefly, as a test.
#   imu_controller  imu_publisher (2 kHz) feeding controller, which must
#                   publish commands
#   sync_by_time    must pair scans with IMU samples
#   bench           bench_cxx_overhead smoke run (numbers not judged)
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
bench)
    "$bin/bench_cxx_overhead" --rounds 6 --batch 200 --channel "$p-bench" ||
        fail "bench_cxx_overhead failed"
    ;;
*)
    fail "unknown case $case"
    ;;
esac
echo "ok: $case"
