#!/bin/sh
# Instruction counts of the put/get hot path under callgrind, for before /
# after comparisons of a change to src/chan.c (issue 16, goal 6). The counts
# are deterministic for one build (compiler, flags, glibc, valgrind), so
# they are valid even on a loaded machine.
#
#   usage: bench/callgrind.sh [--build DIR] [--count N] [--out FILE]
#     --build DIR  the cmake build with bench/nerve-hotpath (default build)
#     --count N    measured iterations per configuration (default 10000)
#     --out FILE   also write the Markdown table to FILE
#
# For 64 B and 4 KiB messages, copy (put + get) and zero-copy (reserve +
# commit + view + view_check), runs build/bench/nerve-hotpath under
# valgrind --tool=callgrind, collecting inside its measured loop only
# (--toggle-collect=hot_loop), and prints instructions per call of each API
# function and of its main callees, inclusive. Also `make bench-callgrind`.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build
COUNT=10000
OUT=
while [ $# -gt 0 ]; do
    case $1 in
    --build) BUILD=$2; shift 2 ;;
    --count) COUNT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "callgrind.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
HP=$BUILD/bench/nerve-hotpath
if [ ! -x "$HP" ]; then
    echo "callgrind.sh: $HP not found; run 'make build' first" >&2
    exit 1
fi
for tool in valgrind callgrind_annotate python3; do
    command -v $tool >/dev/null || {
        echo "callgrind.sh: $tool not found (Debian: apt-get install valgrind)" >&2
        exit 1
    }
done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

# Instructions collected inside function $1 (inclusive: callees too) over
# a whole run of nerve-hotpath with $2 measured iterations, flags $3.
collected() {
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" \
        --collect-atstart=no --toggle-collect="$1" \
        "$HP" --count "$2" --name "nerve-cg-$$" $3 > "$TMP/cg.log" 2>&1 || {
        echo "callgrind.sh: nerve-hotpath failed under valgrind:" >&2
        cat "$TMP/cg.log" >&2
        exit 1
    }
    sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$TMP/cg.log"
}

# Per call: the difference between a run with COUNT more iterations and
# one without them, divided by COUNT. Set-up and warm-up (the same in both
# runs) cancel out, so only the measured loop's calls count.
BASE=2000
: > "$TMP/rows"
for mode in copy zero-copy; do
    if [ $mode = copy ]; then
        flag=
        fns="hot_loop nerve_chan_put nerve_chan_get"
        callees="lock_writer begin_message finish_message nerve__mutex_lock nerve__mutex_unlock nerve_clock_now_ns *memcpy*"
    else
        flag=--zero-copy
        fns="hot_loop nerve_chan_reserve nerve_chan_commit nerve_chan_view nerve_chan_view_check"
        callees="lock_writer begin_message finish_message nerve__mutex_lock nerve__mutex_unlock nerve_clock_now_ns"
    fi
    for size in 64 4096; do
        for fn in $fns $callees; do
            a=$(collected "$fn" $BASE "--size $size $flag")
            b=$(collected "$fn" $((BASE + COUNT)) "--size $size $flag")
            echo "$mode $size $fn $a $b" >> "$TMP/rows"
        done
    done
done

# The library's source: the last commit that touched src/ or include/, and
# whether they have uncommitted changes.
COMMIT=$(git -C "$ROOT" log -1 --format=%h -- src include 2>/dev/null || true)
if [ -n "$COMMIT" ] && ! git -C "$ROOT" diff --quiet HEAD -- src include; then
    COMMIT="$COMMIT + uncommitted changes"
fi
BTYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
python3 - "$TMP/rows" "$COUNT" "$(valgrind --version)" "$OUT" "$COMMIT" \
    "${BTYPE:-unknown}" <<'EOF2'
import platform, subprocess, sys
rows, count, vg, out, commit, btype = sys.argv[1:7]
count = int(count)
api = {"nerve_chan_put", "nerve_chan_get", "nerve_chan_reserve",
       "nerve_chan_commit", "nerve_chan_view", "nerve_chan_view_check"}
table = {}
order = []
with open(rows) as f:
    for line in f:
        mode, size, fn, a, b = line.split()
        key = (mode, int(size))
        if key not in table:
            table[key] = {}
            order.append(key)
        table[key][fn] = (int(b) - int(a)) / count
cc = subprocess.run(["cc", "--version"], capture_output=True, text=True)
lines = []
w = lines.append
w("Instructions per call (callgrind Ir, inclusive of callees), from the "
  "difference of two runs %d iterations apart; %s; %s."
  % (count, vg, cc.stdout.splitlines()[0] if cc.stdout else "cc unknown"))
w("")
w("| mode | size | per write + read | API calls | inside them |")
w("|---|---|---|---|---|")
for key in order:
    t = table[key]
    w("| %s | %d | %.0f | %s | %s |" % (
        key[0], key[1], t["hot_loop"],
        ", ".join("%s %.0f" % (k.replace("nerve_chan_", ""), v)
                  for k, v in t.items() if k in api),
        ", ".join("%s %.0f" % (k.strip("*"), v) for k, v in t.items()
                  if k not in api and k != "hot_loop")))
text = "\n".join(lines) + "\n"
sys.stdout.write(text)
if out:
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    head = ("# put/get instruction counts (callgrind)\n\n"
            "Library source (src/, include/): commit %s; build type %s. Host: %s, kernel %s. "
            "Command: `bench/callgrind.sh --count %d`. Counts do not depend "
            "on load or timing; they change with the code, the compiler and "
            "its flags, glibc (memcpy variant, mutex) and valgrind's "
            "emulated CPU. nerve-hotpath writes and reads one message per "
            "iteration in one process (bench/hotpath.c).\n\n"
            % (commit, btype, cpu, platform.release(), count))
    with open(out, "w") as f:
        f.write(head + text)
EOF2
