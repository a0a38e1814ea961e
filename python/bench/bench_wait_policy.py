#!/usr/bin/env python3
"""How much a Python reader's spin and lead (nerve.Channel.get's
WaitPolicy) save against a plain blocking wait, side by side in one run.

A writer process puts 64 B messages at a fixed rate; this process reads
them with each wait in turn, alternating the order over the rounds, and
each with two CPU placements: none (the scheduler places both programs)
and pinned (writer on CPU 0, reader on CPU 1; needs 2 CPUs):

  blocking    get(wait=True): the futex wake-up of every message
  spin        get(wait=True, spin=period + 0.1 ms): a core polling all the time
  lead+spin   get(wait=True, spin=2 * lead, lead=lead): poll only around
              the moment the next message is due

Latency is the reader's now minus the message's commit time (one clock:
CLOCK_MONOTONIC); CPU is the reader's CPU time over the run's wall time.

    .venv/bin/python python/bench/bench_wait_policy.py [--rate 500] [--n 1500]
        [--rounds 3] [--lead-us 300] [--out bench/results/FILE.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

import nerve


def writer(name: str, n: int, rate: float) -> None:
    w = nerve.open(name, write=True)
    time.sleep(0.3)  # the reader is at the head by then
    body = b"x" * 64
    t0 = time.monotonic_ns()
    for i in range(n):
        d = t0 + int(i * 1e9 / rate) - time.monotonic_ns()
        if d > 0:
            time.sleep(d / 1e9)
        w.put(body)


def one(name: str, n: int, rate: float, kw: dict, pin: bool) -> dict:
    allowed = os.sched_getaffinity(0)
    if pin:
        os.sched_setaffinity(0, {1})
    r = nerve.open(name)
    r.seek(r.stat().head_seq)
    argv = [sys.executable, __file__, "--writer", name, str(n), str(rate)]
    p = subprocess.Popen(["taskset", "-c", "0", *argv] if pin else argv)
    lat = []
    c0, w0 = time.process_time(), time.monotonic()
    try:
        while len(lat) < n:
            m = r.get(wait=True, timeout=10, **kw)
            lat.append(nerve.now_ns() - m.time_ns)
    finally:
        p.wait(timeout=60)
        r.close()
        os.sched_setaffinity(0, allowed)
    cpu = 100 * (time.process_time() - c0) / (time.monotonic() - w0)
    lat.sort()
    return {"p50": lat[n // 2] / 1e3, "p99": lat[int(n * 0.99)] / 1e3, "cpu": cpu}


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        writer(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=500, help="messages per second (500)")
    ap.add_argument("--n", type=int, default=1500, help="messages per run (1500)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each running every wait (3)")
    ap.add_argument("--lead-us", type=float, default=300, help="the lead of lead+spin (300)")
    ap.add_argument("--out", help="write the Markdown report here")
    ap.add_argument("--note", default="", help="a line about the conditions, put in the report")
    a = ap.parse_args()
    if a.rate <= 0 or a.n < 100 or a.rounds < 1 or a.lead_us <= 0:
        ap.error("--rate and --lead-us must be positive, --n at least 100, --rounds at least 1")
    period = 1 / a.rate
    waits = {"blocking": {}, "spin": {"spin": period + 1e-4},
             "lead+spin": {"spin": 2e-6 * a.lead_us, "lead": 1e-6 * a.lead_us}}
    name = f"bench.waitpolicy.{os.getpid()}"
    nerve.create(name, slots=256, size=1 << 20).close()
    places = ["none", "pinned"] if (os.cpu_count() or 1) >= 2 else ["none"]
    res: dict = {(k, pl): [] for pl in places for k in waits}
    try:
        for r in range(a.rounds):
            order = list(res) if r % 2 == 0 else list(reversed(res))
            for k, pl in order:
                res[k, pl].append(one(name, a.n, a.rate, waits[k], pl == "pinned"))
                print(f"round {r + 1} {k} {pl}: {res[k, pl][-1]}", file=sys.stderr, flush=True)
    finally:
        nerve.unlink(name)
    med = statistics.median
    base = {pl: med([x["p50"] for x in res["blocking", pl]]) for pl in places}
    cpu = open("/proc/cpuinfo").read()
    model = next((ln.split(":", 1)[1].strip() for ln in cpu.splitlines() if ln.startswith("model name")), "?")
    L = ["# Python reader: blocking wait against spin and lead", "",
         f"Host: {platform.node()}: {os.cpu_count()} CPUs ({model}), Linux {platform.release()}, "
         f"Python {platform.python_version()}. {a.note}".rstrip(), "",
         f"Date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}. One writer process, 64 B at "
         f"{a.rate:g} Hz, {a.n} messages per run, {a.rounds} rounds alternating the order; lead {a.lead_us:g} µs.",
         "", f"Command: `.venv/bin/python python/bench/bench_wait_policy.py {' '.join(sys.argv[1:])}`", "",
         "| wait | placement | p50 µs (median of rounds) | p99 µs | reader CPU % | p50 / blocking p50 "
         "(same placement) | p50 of each round |",
         "|---|---|---|---|---|---|---|"]
    for (k, pl), xs in res.items():
        p50 = med([x["p50"] for x in xs])
        each = ", ".join("%.1f" % x["p50"] for x in xs)
        L.append(f"| {k} | {pl} | {p50:.1f} | {med([x['p99'] for x in xs]):.1f} | "
                 f"{med([x['cpu'] for x in xs]):.1f} | {p50 / base[pl]:.2f} | {each} |")
    report = "\n".join(L) + "\n"
    print(report)
    if a.out:
        with open(a.out, "w") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
