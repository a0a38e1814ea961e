#!/bin/sh
# Build the iceoryx2 peer and run it side by side with `nerve bench
# --pingpong` in one run, same CPU placement, alternating the two; write
# bench/results/pingpong-<host>.md with the host described.
#
#   usage: bench/peers/run.sh [options]
#     --cpus A,B       ping on A, pong on B (default 0,1)
#     --size LIST      payload sizes (default 64,4K,64K,1M)
#     --duration SEC   timed seconds per row and alternation (default 1)
#     --rounds N       rounds inside each run (default 3)
#     --alternations N nerve-then-iceoryx2 repetitions (default 3)
#     --nerve PATH     the nerve binary (default build/tools/nerve)
#     --out FILE       the report (default bench/results/pingpong-<host>.md)
#     --note TEXT      added to the host line (e.g. "quiet" or "under load")
#     --keep DIR       keep the JSON lines in DIR
#
# Not part of `make test`. The first build fetches the iceoryx2 crates
# (cargo, network); later builds work offline. A quiet run with the
# defaults takes about 2.5 minutes after the build (see the report).
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CPUS=0,1
SIZES=64,4K,64K,1M
DURATION=1
ROUNDS=3
ALTS=3
NERVE=$ROOT/build/tools/nerve
HOST=$(hostname -s 2>/dev/null || hostname)
OUT=
NOTE=
KEEP=
# The command as typed, for the report (arguments with spaces quoted).
CMDLINE=bench/peers/run.sh
for a in "$@"; do
    case $a in
    *[!A-Za-z0-9_./,:=+-]*) CMDLINE="$CMDLINE \"$a\"" ;;
    *) CMDLINE="$CMDLINE $a" ;;
    esac
done

while [ $# -gt 0 ]; do
    case $1 in
    --cpus) CPUS=$2; shift 2 ;;
    --size) SIZES=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --alternations) ALTS=$2; shift 2 ;;
    --nerve) NERVE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --note) NOTE=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
OUT=${OUT:-$ROOT/bench/results/pingpong-$HOST.md}

if [ ! -x "$NERVE" ]; then
    echo "run.sh: $NERVE not found; run 'make build' first" >&2
    exit 1
fi
command -v cargo >/dev/null || {
    echo "run.sh: cargo not found (install Rust, e.g. rustup)" >&2
    exit 1
}

# Build: offline when the crates are already in cargo's cache.
MANIFEST=$ROOT/bench/peers/Cargo.toml
echo "== building the iceoryx2 peer (cargo build --release --locked)" >&2
cargo build --release --locked --offline --manifest-path "$MANIFEST" 2>/dev/null ||
    cargo build --release --locked --manifest-path "$MANIFEST"
PEER=$ROOT/bench/peers/target/release/nerve-peer-iceoryx2

TMP=$(mktemp -d)
# iceoryx2 keeps a global management segment in /dev/shm and directories in
# /tmp/iceoryx2 after its last process; remove them only if this run made
# them.
IOX_BEFORE=$(ls /dev/shm 2>/dev/null | grep '^iox2_' || true)
IOX_TMP_BEFORE=no
[ -e /tmp/iceoryx2 ] && IOX_TMP_BEFORE=yes
cleanup() {
    for f in $(ls /dev/shm 2>/dev/null | grep '^iox2_' || true); do
        case " $(echo $IOX_BEFORE) " in
        *" $f "*) ;;
        *) rm -f "/dev/shm/$f" ;;
        esac
    done
    if [ $IOX_TMP_BEFORE = no ] && [ -d /tmp/iceoryx2 ]; then
        find /tmp/iceoryx2 -depth -type d -empty -delete 2>/dev/null || true
    fi
    if [ -n "$KEEP" ]; then
        mkdir -p "$KEEP" && cp "$TMP"/*.jsonl "$KEEP"/ 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
T0=$(date +%s)
NFILES=
PFILES=
status=0
k=1
while [ $k -le "$ALTS" ]; do
    echo "== alternation $k/$ALTS: nerve bench --pingpong" >&2
    "$NERVE" bench --pingpong --cpus "$CPUS" --size "$SIZES" \
        --duration "$DURATION" --rounds "$ROUNDS" --lines 1,2,3 \
        --name "nerve-pp-$$" --json "$TMP/nerve-$k.jsonl" >&2 || status=1
    echo "== alternation $k/$ALTS: nerve-peer-iceoryx2" >&2
    "$PEER" --cpus "$CPUS" --size "$SIZES" --duration "$DURATION" \
        --rounds "$ROUNDS" --json "$TMP/iox2-$k.jsonl" >&2 || status=1
    NFILES="$NFILES --nerve $TMP/nerve-$k.jsonl"
    PFILES="$PFILES --peer $TMP/iox2-$k.jsonl"
    k=$((k + 1))
done
T1=$(date +%s)
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
VIRT=$(systemd-detect-virt 2>/dev/null || true)
NOTE="${VIRT:+Virtualisation: $VIRT. }Measurement took $((T1 - T0)) s. $NOTE"
# shellcheck disable=SC2086
python3 "$ROOT/bench/peers/report.py" --out "$OUT" --command "$CMDLINE" \
    --host-note "$NOTE" --load-before "$LOAD_BEFORE" \
    --load-after "$LOAD_AFTER" --started "$STARTED" $NFILES $PFILES
echo "== wrote $OUT ($((T1 - T0)) s of measurement)" >&2
exit $status
