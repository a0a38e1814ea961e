"""The cost of one channel growth (nerve_chan_grow: make the successor,
copy the ring under the writer lock, rename, mark) against its floor in
the same run: creating a channel of the new size plus a plain copy of the
old ring's bytes.

    .venv/bin/python bench/grow_cost.py [--out bench/results/FILE.md]

For each (from, to) data ring size: a channel of `from` bytes is filled
with 64 KiB messages, then grown to `to`; repeated ROUNDS times, the
median and the maximum reported with the copy of `from` bytes."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

import nerve

ROUNDS = 7
CASES = [(1 << 20, 8 << 20), (8 << 20, 64 << 20), (64 << 20, 256 << 20)]


def one(name: str, small: int, big: int) -> float:
    w = nerve.create(name, slots=4096, size=small)
    msg = b"\x5a" * min(64 << 10, small // 2)
    for _ in range(small // len(msg)):
        w.put(msg)
    t0 = time.perf_counter_ns()
    w.grow(big)
    dt = time.perf_counter_ns() - t0
    w.close()
    nerve.unlink(name)
    return dt / 1e6


def create_ms(name: str, n: int) -> float:
    """Creating (and opening) a channel of n bytes: what any growth to n
    must do before its copy (allocating and zeroing the pages)."""
    ts = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter_ns()
        nerve.create(name, slots=4096, size=n).close()
        ts.append((time.perf_counter_ns() - t0) / 1e6)
        nerve.unlink(name)
    return statistics.median(ts)


def copy_ms(n: int) -> float:
    a = np.full(n, 0x5A, dtype=np.uint8)
    b = np.empty_like(a)
    best = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter_ns()
        np.copyto(b, a)
        best.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(best)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out")
    a = p.parse_args()
    name = f"bench-grow-{os.getpid()}"
    rows = ["| from | to | grow p50 ms | grow max ms | create `to` p50 ms | copy `from` p50 ms "
            "| grow / (create + copy) |",
            "|---|---|---|---|---|---|---|"]
    for small, big in CASES:
        ts = [one(name, small, big) for _ in range(ROUNDS)]
        c, mk = copy_ms(small), create_ms(name, big)
        rows.append(f"| {small >> 20} MiB | {big >> 20} MiB | {statistics.median(ts):.2f} | "
                    f"{max(ts):.2f} | {mk:.2f} | {c:.2f} | {statistics.median(ts) / (mk + c):.2f} |")
    host = f"{platform.node()}, {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, " \
           f"Linux {platform.release()}"
    text = "\n".join([f"# Channel growth cost ({ROUNDS} rounds each; {host})", "",
                      "Command: `.venv/bin/python bench/grow_cost.py`", ""] + rows) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
