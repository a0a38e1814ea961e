"""The floor of a publisher's cost that grows with subscriber processes:
one FUTEX_WAKE of N processes that block on a shared word, as a
nerve_chan_put wakes the blocked readers of a channel.

    python bench/rmw/futex_wake_cost.py [--procs 1,8] [--count 300] [--rate 50]

N child processes wait (FUTEX_WAIT, shared, not private) on one word of a
shared mapping; the parent bumps the word and wakes them all at RATE Hz,
and times the FUTEX_WAKE call, as wall time and as its thread's CPU time
(the same two measures rcl_latency gives for rcl_publish). Only samples
where the call woke all N count. Prints one JSON line per N. Linux only."""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import platform
import sys
import time

SYS_FUTEX = {"x86_64": 202, "aarch64": 98}[platform.machine()]
FUTEX_WAIT, FUTEX_WAKE = 0, 1
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def measure(procs: int, count: int, rate: float) -> dict:
    shm = mmap.mmap(-1, 4096, flags=mmap.MAP_SHARED)
    word = ctypes.c_uint32.from_buffer(shm)
    addr = ctypes.addressof(word)
    kids = []
    for _ in range(procs):
        pid = os.fork()
        if pid == 0:  # wait for every change of the word; 0xffffffff: stop
            while True:
                seen = word.value
                if seen == 0xFFFFFFFF:
                    os._exit(0)
                libc.syscall(SYS_FUTEX, ctypes.c_void_p(addr), FUTEX_WAIT, seen, None, None, 0)
        kids.append(pid)
    wall, cpu = [], []
    time.sleep(0.5)
    for _ in range(count + 20):
        time.sleep(1.0 / rate)  # the children are back in FUTEX_WAIT by now
        word.value = (word.value + 1) % 0xFFFFFFFF
        c0, t0 = time.thread_time_ns(), time.monotonic_ns()
        woken = libc.syscall(SYS_FUTEX, ctypes.c_void_p(addr), FUTEX_WAKE, 0x7FFFFFFF, None, None, 0)
        t1, c1 = time.monotonic_ns(), time.thread_time_ns()
        if woken == procs:
            wall.append((t1 - t0) / 1000.0)
            cpu.append((c1 - c0) / 1000.0)
    word.value = 0xFFFFFFFF
    libc.syscall(SYS_FUTEX, ctypes.c_void_p(addr), FUTEX_WAKE, 0x7FFFFFFF, None, None, 0)
    for pid in kids:
        os.waitpid(pid, 0)
    del word
    shm.close()
    wall.sort()
    cpu.sort()

    def q(v, p):
        return round(v[min(len(v) - 1, int(p * (len(v) - 1)))], 1) if v else None

    return {"bench": "futex_wake_cost", "procs": procs, "n": len(wall),
            "wake_p50_us": q(wall, 0.5), "wake_p99_us": q(wall, 0.99),
            "wake_cpu_p50_us": q(cpu, 0.5), "wake_cpu_p99_us": q(cpu, 0.99),
            "load": os.getloadavg()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", default="1,8")
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--rate", type=float, default=50.0)
    a = ap.parse_args()
    for n in a.procs.split(","):
        print(json.dumps(measure(int(n), a.count, a.rate)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
