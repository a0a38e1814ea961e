#!/bin/sh
# The fuRom table in one run (bench/ros/furom.cpp says what is measured):
# IMU at 2 kHz, LaserScan (8 KB) at 100 Hz and OccupancyGrid (1 MiB) at
# 10 Hz, each for SECONDS, through nerve (copy and zero-copy, two
# processes), roscpp over TCPROS (two processes) and nodelets (one
# process, pointer passing). Starts its own roscore on 127.0.0.1 at a free
# port (ROS_HOME in a temporary directory) and stops it at the end.
#
#   bench/ros/run.sh BUILD_DIR [SECONDS] [OUT_PREFIX]
#
# Writes OUT_PREFIX.jsonl (one line per cell) and OUT_PREFIX.md (the
# table, the host and the command); OUT_PREFIX defaults to
# bench/results/ros-furom-<hostname>.
set -eu
BUILD=${1:?usage: run.sh BUILD_DIR [SECONDS] [OUT_PREFIX]}
SECS=${2:-10}
OUT=${3:-bench/results/ros-furom-$(hostname)}
F=$BUILD/bench/ros/furom
NERVE=$BUILD/tools/nerve
[ -x "$F" ] || { echo "run.sh: $F not built (needs roscpp and nodelet; see bench/ros/CMakeLists.txt)" >&2; exit 1; }
command -v roscore >/dev/null || { echo "run.sh: roscore not installed (apt-get install ros-core)" >&2; exit 1; }

TMP=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export ROS_MASTER_URI=http://127.0.0.1:$PORT ROS_HOME=$TMP ROS_LOG_DIR=$TMP/log ROS_IP=127.0.0.1
unset ROS_HOSTNAME || true
CORE=""
cleanup() {
    [ -n "$CORE" ] && kill -INT -- "-$CORE" 2>/dev/null || true
    sleep 1
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

# pair SUB_ARGS PUB_ARGS: receiver in the background, sender in front.
pair() {
    log=$TMP/sub.$$.out
    : >"$log"
    $F $1 >"$log" &
    sub=$!
    wait_ready "$log"
    $F $2
    wait $sub
    grep '^{' "$log" >>"$OUT.jsonl"
    grep '^{' "$log"
}

for cell in imu:2000 scan:100 grid:10; do
    msg=${cell%%:*}
    rate=${cell#*:}
    ch=furom-$$-$msg
    pair "nerve-sub $msg $rate $SECS $ch-c copy" "nerve-pub $msg $rate $SECS $ch-c copy"
    pair "nerve-sub $msg $rate $SECS $ch-v view" "nerve-pub $msg $rate $SECS $ch-v loan"
    "$NERVE" rm "$ch-c" "$ch-v" >/dev/null 2>&1 || true
    pair "ros-sub $msg $rate $SECS /furom_$msg" "ros-pub $msg $rate $SECS /furom_$msg"
    log=$TMP/nodelet.out
    $F nodelet "$msg" "$rate" "$SECS" "/furom_nodelet_$msg" >"$log"
    grep '^{' "$log" >>"$OUT.jsonl"
    grep '^{' "$log"
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

python3 "$(dirname "$0")/report.py" "$OUT" "$SECS" "$LOAD0" "$LOAD1" "$0 $*"
