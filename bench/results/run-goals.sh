#!/bin/sh
# Run the measurements behind the performance goals of issue 3 and write
# one JSON-lines file per goal plus the printed tables into OUTDIR.
#   usage: bench/results/run-goals.sh NERVE OUTDIR CPUS [SCALING]
# NERVE is the nerve binary, CPUS the --cpus list (receiver i on CPUS[i],
# then the senders), SCALING the receiver counts of goal 3 (default
# 1,2,4,8; use 1,2,4,8,14 on 16 cores).
set -u
N=$1
OUT=$2
CPUS=$3
SCALING=${4:-1,2,4,8}
mkdir -p "$OUT"
b() {
    tag=$1
    shift
    echo "== $tag: nerve bench $*" | tee -a "$OUT/tables.txt"
    "$N" bench --cpus "$CPUS" --json "$OUT/$tag.jsonl" "$@" >> "$OUT/tables.txt" 2>&1
    echo "exit $?" >> "$OUT/tables.txt"
}
# 1: blocking reader, 1 -> 1, 64 B at 1 kHz, against the bare futex.
b goal1 --transport nerve,futex --size 64 --rate 1000 --duration 10 --wait
# 2: polling reader, back-to-back, against one shared cache line.
b goal2 --transport nerve,spin --size 64 --rate 0 --poll --newest --duration 5
# 3: N receivers against a futex wake of N waiters and the Ach-style ring.
b goal3 --transport nerve,futex,condvar --size 64 --rate 1000 --duration 5 --wait --receivers "$SCALING"
# 4: 1 MB at 10 Hz, copying and zero-copy readers.
b goal4 --transport nerve,futex,pipe,unix,mq --size 1M --rate 10 --duration 10 --wait
b goal4zc --transport nerve,futex --size 1M --rate 10 --duration 10 --wait --zero-copy
# 5: throughput, 64 B, one sender and one polling receiver (next and newest).
b goal5 --transport nerve,pipe --size 64 --rate 0 --poll --duration 5
b goal5newest --transport nerve,pipe --size 64 --rate 0 --poll --newest --duration 5
# 6: the fuRom table.
b goal6 --workload furom
# The Ach paper's figure: 1 kHz, 1 sender and 1/2/4/8 receivers, 2 senders.
b ach --workload ach --transport nerve,futex,condvar,pipe
