#!/bin/sh
# Where one message's cost goes in rcl on rmw_nerve, in counts that do not
# depend on the host's load: system calls per message (strace -c -f), page
# faults and context switches (perf stat's software events, with its CPU
# time, which does depend on the load) and instructions per message
# (valgrind callgrind, collecting only inside rcl_publish, rcl_wait and
# rcl_take, inclusive). Each from two runs of N1
# and N2 messages, the difference divided by N2 - N1, so that start-up and
# shutdown cancel out. Valgrind (3.19) has no futex_waitv, so under it
# nerve's waits fall back to 1 ms polling, whose count depends on time:
# collection stops inside nerve's wait_change (the futex wait both rcl on
# rmw_nerve and the baseline sleep in), so the counts are of the work
# around the sleep; its system calls (strace, the real kernel) are the
# measure of the wait itself.
#
#   usage: bench/rmw/rmw_cost.sh [--build DIR] [--kind KIND] [--rate HZ]
#                                [--syscalls-only] [--baseline]
#     --build DIR  the cmake build with rmw_nerve/rcl_latency (default build,
#                  configured with -DNERVE_BUILD_BENCH=ON)
#     --kind KIND  64B (default) | Imu | PointCloud2-1MiB | Image-1080p
#     --rate HZ    publish rate (default 100)
#     --syscalls-only  strace and perf only (the callgrind runs take minutes)
#     --baseline   the same counts for nerve's C API doing what rcl forces
#                  (bench/rmw/nerve_latency.c: nerve_chan_put, and
#                  nerve_chan_get woken per message), collecting inside
#                  nerve_chan_put and nerve_chan_get
#
# Besides the functions, the callgrind part prints instructions per
# message by library and calls per message of malloc, clock reads, locks
# and system call wrappers (bench/rmw/cg_split.py).
#
# Needs the Jazzy wheel venv (.venv-jazzy, make ros2-venvs), strace,
# perf (optional), valgrind and callgrind_annotate. Results: bench/results/
# 2026-11-29-rmw-cost-breakdown.md, 2026-11-29-rmw-where-the-time-goes.md.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
KIND=64B
RATE=100
CG=1
BASE=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --kind) KIND=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --syscalls-only) CG=0; shift ;;
    --baseline) BASE=1; shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "rmw_cost.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
RCL=$BUILD/rmw_nerve/rcl_latency
LIB=$BUILD/rmw_nerve/librmw_nerve_cpp.so
ROOTS="rcl_publish rcl_wait rcl_take"
[ $BASE = 0 ] || { RCL=$BUILD/bench/nerve_latency; LIB=; ROOTS="nerve_chan_put nerve_chan_get"; }
for f in "$RCL" $LIB; do
    [ -e "$f" ] || { echo "rmw_cost.sh: $f not found (configure with -DNERVE_BUILD_BENCH=ON)" >&2; exit 1; }
done
for tool in strace $([ $CG = 0 ] || echo valgrind callgrind_annotate); do
    command -v $tool >/dev/null || { echo "rmw_cost.sh: $tool not found" >&2; exit 1; }
done
TMP=${RMW_COST_KEEP:-$(mktemp -d)}
export ROS_DOMAIN_ID=$((100 + $$ % 100)) ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
[ $BASE = 1 ] || export RMW_IMPLEMENTATION=rmw_nerve_cpp LD_PRELOAD="$LIB"
# The baseline's channel (made by whichever side comes first; it stays).
export NERVE_LAT_CHAN=ros2-d$ROS_DOMAIN_ID.lat-baseline
# The domain's graph channel outlives the nodes (the topic's is removed
# with its last user): removed at exit.
cleanup() {
    rm -f /dev/shm/nerve.ros2-graph-d$ROS_DOMAIN_ID.* /dev/shm/nerve-bell.ros2-graph-d$ROS_DOMAIN_ID.* \
        /dev/shm/nerve*.$NERVE_LAT_CHAN
    [ -n "${RMW_COST_KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

# run TAG N WRAP...: a subscriber and a publisher of N messages, each
# under WRAP (its output file named after TAG and the role). The
# subscriber starts first (a subscription makes its topic's channel, so
# its waits never poll for one still to come), and the publisher once the
# subscriber said "ready"; rcl's publisher then starts publishing once it
# sees the subscription (the baseline's at once).
run() {
    tag=$1 n=$2
    shift 2
    "$@" "$TMP/$tag-sub" "$RCL" sub "$KIND" "$n" 1 >"$TMP/$tag-sub.json" &
    spid=$!
    i=0
    until grep -q ready "$TMP/$tag-sub.json" 2>/dev/null; do
        i=$((i + 1))
        [ $i -lt 1200 ] || { echo "rmw_cost.sh: no subscriber after 120 s" >&2; exit 1; }
        sleep 0.1
    done
    "$@" "$TMP/$tag-pub" "$RCL" pub "$KIND" "$n" "$RATE" 1 >"$TMP/$tag-pub.json"
    wait $spid
}
st() { out=$1; shift; strace -f -c -o "$out.strace" "$@"; }
# perf's software events (this VM has no hardware counters): CPU time,
# page faults, context switches and migrations of the whole process.
pf() { out=$1; shift; perf stat -x, -e task-clock,page-faults,context-switches,cpu-migrations -o "$out.perf" "$@"; }
cg() {
    out=$1; shift
    valgrind --tool=callgrind --callgrind-out-file="$out.cg" --separate-threads=yes \
        $(for r in $ROOTS wait_change; do printf ' --toggle-collect=%s' $r; done) "$@" 2>/dev/null
}

N1=200 N2=600
run s1 $N1 st
run s2 $N2 st
echo "## $KIND at $RATE Hz: system calls per message (strace -c -f, ($N2 - $N1) messages)"
for role in pub sub; do
    echo
    echo "$role:"
    python3 - "$TMP/s1-$role.strace" "$TMP/s2-$role.strace" $((N2 - N1)) <<'PY'
import sys
def calls(path):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 5 and f[-1] not in ("syscall", "total") and f[3].isdigit():
            out[f[-1]] = int(f[3])
        elif len(f) == 5 and f[-1] not in ("syscall", "total") and f[3].isdigit():
            out[f[-1]] = int(f[3])
    return out
a, b, n = calls(sys.argv[1]), calls(sys.argv[2]), int(sys.argv[3])
rows = sorted(((b.get(k, 0) - a.get(k, 0)) / n, k) for k in set(a) | set(b))
tot = 0.0
for per, k in reversed(rows):
    if per >= 0.05:
        print(f"  {k:<16} {per:6.2f}")
    tot += per
print(f"  {'total':<16} {tot:6.2f}")
PY
done

if command -v perf >/dev/null; then
    run p1 $N1 pf
    run p2 $N2 pf
    echo
    echo "## $KIND at $RATE Hz: software events per message (perf stat, ($N2 - $N1) messages)"
    for role in pub sub; do
        python3 - "$TMP/p1-$role.perf" "$TMP/p2-$role.perf" $((N2 - N1)) "$role" <<'PY'
import sys
def ev(path):
    out = {}
    for line in open(path):
        f = line.strip().split(",")
        if len(f) > 2 and f[0].replace(".", "").isdigit():
            out[f[2]] = float(f[0])
    return out
a, b, n = ev(sys.argv[1]), ev(sys.argv[2]), int(sys.argv[3])
print(f"{sys.argv[4]}: " + ", ".join(
    f"{k} {(b[k] - a.get(k, 0)) / n:.3f}" + (" ms" if k == "task-clock" else "")
    for k in b))
PY
    done
fi

if [ $CG = 0 ]; then
    cat "$TMP/s2-sub.json" "$TMP/s2-pub.json"
    exit 0
fi
run c1 $N1 cg
run c2 $N2 cg
echo
echo "## $KIND at $RATE Hz: instructions per message (callgrind, inclusive, ($N2 - $N1) messages)"
for role in pub sub; do
    echo
    echo "$role:"
    for f in c1 c2; do
        # The main thread's (rmw_nerve's graph thread has its own file).
        mv "$TMP/$f-$role.cg-01" "$TMP/$f-$role.cg"
        callgrind_annotate --inclusive=yes --threshold=100 "$TMP/$f-$role.cg" >"$TMP/$f-$role.txt" 2>/dev/null
    done
    python3 - "$TMP/c1-$role.txt" "$TMP/c2-$role.txt" $((N2 - N1)) <<'PY'
import re, sys
def counts(path):
    out = {}
    for line in open(path):
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*?)(?:\s+\[[^\]]*\])?$", line)
        if not m or not m.group(1)[0].isdigit() or "=>" in line:
            continue
        name = m.group(2)
        head, sep, rest = name.partition(":")
        if sep and ("/" in head or head.startswith("?")):
            name = rest
        name = re.sub(r"\(.*", "", name).strip()
        if name and name not in out:
            out[name] = int(m.group(1).replace(",", ""))
    return out
a, b, n = counts(sys.argv[1]), counts(sys.argv[2]), int(sys.argv[3])
rows = sorted((((b.get(k, 0) - a.get(k, 0)) / n), k) for k in b)
skip = {"main", "(below main)", "__libc_start_main@@GLIBC_2.34", "PROGRAM TOTALS"}
for per, k in reversed(rows[-60:]):
    if per >= 40 and k not in skip and not k.startswith("0x"):
        print(f"  {per:10.0f}  {k[:90]}")
PY
    python3 "$(dirname "$0")/cg_split.py" "$TMP/c1-$role.cg" "$TMP/c2-$role.cg" \
        $((N2 - N1)) $ROOTS
done
cat "$TMP/s2-sub.json" "$TMP/s2-pub.json"
