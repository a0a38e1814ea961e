#!/bin/sh
# Where one message's cost goes in rcl on rmw_nerve, in counts that do not
# depend on the host's load: system calls per message (strace -c -f, two
# runs of N1 and N2 messages, difference / (N2 - N1), so start-up and
# shutdown cancel out) and instructions per message (valgrind callgrind,
# collecting only inside rcl_publish, rcl_wait and rcl_take; inclusive
# counts of their main callees divided by the messages taken).
#
#   usage: bench/rmw/rmw_cost.sh [--build DIR] [--kind KIND] [--rate HZ]
#     --build DIR  the cmake build with rmw_nerve/rcl_latency (default build,
#                  configured with -DNERVE_BUILD_BENCH=ON)
#     --kind KIND  64B (default) | Imu | PointCloud2-1MiB | Image-1080p
#     --rate HZ    publish rate (default 100)
#
# Needs the Jazzy wheel venv (.venv-jazzy, make ros2-venvs), strace,
# valgrind and callgrind_annotate. Results: bench/results/
# 2026-11-29-rmw-cost-breakdown.md.
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
KIND=64B
RATE=100
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --kind) KIND=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "rmw_cost.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
RCL=$BUILD/rmw_nerve/rcl_latency
LIB=$BUILD/rmw_nerve/librmw_nerve_cpp.so
for f in "$RCL" "$LIB"; do
    [ -e "$f" ] || { echo "rmw_cost.sh: $f not found (configure with -DNERVE_BUILD_BENCH=ON)" >&2; exit 1; }
done
for tool in strace valgrind callgrind_annotate; do
    command -v $tool >/dev/null || { echo "rmw_cost.sh: $tool not found" >&2; exit 1; }
done
TMP=${RMW_COST_KEEP:-$(mktemp -d)}
[ -n "${RMW_COST_KEEP:-}" ] || trap 'rm -rf "$TMP"' EXIT
export RMW_IMPLEMENTATION=rmw_nerve_cpp LD_PRELOAD="$LIB"
export ROS_DOMAIN_ID=$((100 + $$ % 100)) ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST

# run TAG N WRAP...: a subscriber and a publisher of N messages, each under
# WRAP (its output file named after TAG and the role).
run() {
    tag=$1 n=$2
    shift 2
    "$@" "$TMP/$tag-sub" "$RCL" sub "$KIND" "$n" 1 >"$TMP/$tag-sub.json" &
    spid=$!
    # the subscriber prints "ready" once its subscription exists (60 s bound)
    i=0
    until grep -q ready "$TMP/$tag-sub.json" 2>/dev/null; do
        i=$((i + 1))
        [ $i -lt 600 ] || { echo "rmw_cost.sh: subscriber not ready" >&2; exit 1; }
        sleep 0.1
    done
    "$@" "$TMP/$tag-pub" "$RCL" pub "$KIND" "$n" "$RATE" 1 >"$TMP/$tag-pub.json"
    wait $spid
}
st() { out=$1; shift; strace -f -c -o "$out.strace" "$@"; }
cg() {
    out=$1; shift
    valgrind --tool=callgrind --callgrind-out-file="$out.cg" \
        --toggle-collect=rcl_publish --toggle-collect=rcl_wait \
        --toggle-collect=rcl_take "$@" 2>/dev/null
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

N=200
run c $N cg
echo
echo "## $KIND at $RATE Hz: instructions per message (callgrind, $N messages, inclusive)"
for role in pub sub; do
    echo
    echo "$role:"
    callgrind_annotate --inclusive=yes --threshold=100 "$TMP/c-$role.cg" 2>/dev/null |
        python3 -c '
import re, sys
n, seen = int(sys.argv[1]), set()
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*?)(?:\s+\[[^\]]*\])?$", line)
    if not m or not m.group(1)[0].isdigit():
        continue
    name = m.group(2)
    if ":" in name and not name.startswith(("rmw_", "rcl")):
        head, _, rest = name.partition(":")
        if "/" in head or head.startswith("?") or head.endswith((".c", ".cpp", ".h", ".hpp")):
            name = rest
    name = re.sub(r"\(.*", "", name)
    ir = int(m.group(1).replace(",", "")) / n
    if ir < 50 or name in seen or name in ("main", "(below main)", "__libc_start_main@@GLIBC_2.34", "(below"):
        continue
    seen.add(name)
    print(f"  {ir:8.0f}  {name[:90]}")
' $N | head -45
done
cat "$TMP/s2-sub.json" "$TMP/s2-pub.json"
