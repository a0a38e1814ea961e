#!/bin/sh
# The fuRom table in one run (bench/ros/furom.cpp says what is measured):
# IMU at 2 kHz, LaserScan (8 KB) at 100 Hz and OccupancyGrid (1 MiB) at
# 10 Hz, each for SECONDS, through nerve (copy and zero-copy, two
# processes), roscpp over TCPROS (two processes) and nodelets (one
# process, pointer passing). Starts its own roscore on 127.0.0.1 at a free
# port (ROS_HOME in a temporary directory) and stops it at the end.
#
#   bench/ros/run.sh BUILD_DIR [SECONDS] [OUT_PREFIX] [RUNS]
#
# Columns per message: nerve copy and zero-copy with the default blocking
# wait; the same with an opt-in busy poll (nerve::WaitPolicy, spin of two
# message periods: the subscriber polls all the time and keeps one core
# 100% busy); the same with a lead (WaitPolicy lead of a fifth of a
# period, at most 300 us, and a spin of three leads: the reader naps until
# just before the next message is due, then polls); roscpp over TCPROS with default transport hints (as fuRom)
# and with TCP_NODELAY; nodelets. FUROM_SPIN=0 leaves the spin and lead
# columns out. RUNS (default 1) repeats the whole table; the report gives the
# median of each statistic over the runs, and every run.
#
# Writes OUT_PREFIX.jsonl (one line per cell and run) and OUT_PREFIX.md
# (the table, the host and the command); OUT_PREFIX defaults to
# bench/results/ros-furom-<hostname>.
set -eu
BUILD=${1:?usage: run.sh BUILD_DIR [SECONDS] [OUT_PREFIX] [RUNS]}
SECS=${2:-10}
OUT=${3:-bench/results/ros-furom-$(hostname)}
RUNS=${4:-1}
SPIN=${FUROM_SPIN:-1}
F=$BUILD/bench/ros/furom
NERVE=$BUILD/tools/nerve
[ -x "$F" ] || { echo "run.sh: $F not built (needs roscpp and nodelet; see bench/ros/CMakeLists.txt)" >&2; exit 1; }
command -v roscore >/dev/null || { echo "run.sh: roscore not installed (apt-get install ros-core)" >&2; exit 1; }

TMP=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export ROS_MASTER_URI=http://127.0.0.1:$PORT ROS_HOME=$TMP ROS_LOG_DIR=$TMP/log ROS_IP=127.0.0.1
unset ROS_HOSTNAME || true
CORE=""
ROSPIDS="" # roslaunch, rosmaster and rosout, once known
cleanup() {
    # SIGINT to roslaunch alone: it stops rosout (which runs in a session
    # of its own, out of reach of a group kill) and the master, then exits.
    # Whatever is left after 10 s is killed by its process id.
    for p in $ROSPIDS; do kill -INT "$p" 2>/dev/null || true; break; done
    [ -n "$CORE" ] && kill -INT -- "-$CORE" 2>/dev/null || true
    n=0
    while [ $n -lt 100 ]; do
        alive=""
        for p in $ROSPIDS; do
            if kill -0 "$p" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; then
                alive="$alive $p"
            fi
        done
        [ -n "$alive" ] || break
        n=$((n + 1))
        sleep 0.1
    done
    for p in $ROSPIDS; do kill -KILL "$p" 2>/dev/null || true; done
    [ -n "$CORE" ] && kill -KILL -- "-$CORE" 2>/dev/null || true
    # setsid may have forked, leaving $CORE not the group: stop by port too.
    pkill -KILL -f "ros(core|master --core) -p $PORT( |\$)" 2>/dev/null || true
    for c in $(ls /dev/shm | sed -n "s/^nerve\.\(furom-$$-.*\)/\1/p"); do "$NERVE" rm "$c" >/dev/null 2>&1 || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
setsid roscore -p "$PORT" >"$TMP/roscore.log" 2>&1 &
CORE=$!
i=0
until python3 -c "import xmlrpc.client,sys; sys.exit(0 if xmlrpc.client.ServerProxy('$ROS_MASTER_URI').getPid('/b')[0]==1 else 1)" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 150 ] || { echo "run.sh: roscore did not start" >&2; exit 1; }
    sleep 0.2
done

# roscore starts rosout after the master answers; let that start-up (a few
# seconds of Python) finish before measuring.
i=0
until rosnode list 2>/dev/null | grep -q '^/rosout$'; do
    i=$((i + 1)); [ $i -lt 150 ] || break
    sleep 0.2
done
# The ids of roslaunch, the master and rosout, for cleanup().
ROSPIDS=$(python3 - "$ROS_MASTER_URI" <<'PY' 2>/dev/null || true
import os, sys, xmlrpc.client as x
m = x.ServerProxy(sys.argv[1])
master = m.getPid("/b")[2]
ppid = int(open(f"/proc/{master}/stat").read().rsplit(")", 1)[1].split()[1])
pids = [ppid, master]
try:
    code, _, uri = m.lookupNode("/b", "/rosout")
    if code == 1:
        pids.append(x.ServerProxy(uri).getPid("/b")[2])
except Exception:
    pass
print(" ".join(str(p) for p in pids))
PY
)
sleep 3
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$OUT.jsonl"

# wait_ready FILE: until the receiver printed "ready" (at most 30 s).
wait_ready() {
    n=0
    until grep -q '^ready' "$1" 2>/dev/null; do
        n=$((n + 1)); [ $n -lt 300 ] || { echo "run.sh: receiver not ready ($1)" >&2; exit 1; }
        sleep 0.1
    done
}

# emit LOG: the receiver's statistics line, tagged with the run number.
emit() {
    grep '^{' "$1" | sed "s/^{/{\"run\": $run, /" | tee -a "$OUT.jsonl"
}

# pair SUB_ARGS PUB_ARGS: receiver in the background, sender in front.
pair() {
    log=$TMP/sub.$$.out
    : >"$log"
    $F $1 >"$log" &
    sub=$!
    wait_ready "$log"
    $F $2
    wait $sub
    emit "$log"
}

run=1
while [ $run -le "$RUNS" ]; do
    for cell in imu:2000 scan:100 grid:10; do
        msg=${cell%%:*}
        rate=${cell#*:}
        spin_us=$((2000000 / rate)) # two periods
        lead_us=$((200000 / rate)) # a fifth of a period, at most 300 us
        [ $lead_us -le 300 ] || lead_us=300
        lspin_us=$((3 * lead_us))
        ch=furom-$$-$msg
        pair "nerve-sub $msg $rate $SECS $ch-c copy" "nerve-pub $msg $rate $SECS $ch-c copy"
        pair "nerve-sub $msg $rate $SECS $ch-v view" "nerve-pub $msg $rate $SECS $ch-v loan"
        if [ "$SPIN" != 0 ]; then
            pair "nerve-sub $msg $rate $SECS $ch-cs copy $spin_us" "nerve-pub $msg $rate $SECS $ch-cs copy"
            pair "nerve-sub $msg $rate $SECS $ch-vs view $spin_us" "nerve-pub $msg $rate $SECS $ch-vs loan"
            pair "nerve-sub $msg $rate $SECS $ch-cl copy $lspin_us $lead_us" "nerve-pub $msg $rate $SECS $ch-cl copy"
            pair "nerve-sub $msg $rate $SECS $ch-vl view $lspin_us $lead_us" "nerve-pub $msg $rate $SECS $ch-vl loan"
        fi
        for c in "$ch-c" "$ch-v" "$ch-cs" "$ch-vs" "$ch-cl" "$ch-vl"; do "$NERVE" rm "$c" >/dev/null 2>&1 || true; done
        pair "ros-sub $msg $rate $SECS /furom_$msg" "ros-pub $msg $rate $SECS /furom_$msg"
        pair "ros-sub $msg $rate $SECS /furom_nd_$msg nodelay" "ros-pub $msg $rate $SECS /furom_nd_$msg"
        log=$TMP/nodelet.out
        $F nodelet "$msg" "$rate" "$SECS" "/furom_nodelet_$msg" >"$log"
        emit "$log"
    done
    run=$((run + 1))
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

python3 "$(dirname "$0")/report.py" "$OUT" "$SECS" "$LOAD0" "$LOAD1" "$0 $*"
