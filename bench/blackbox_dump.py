"""One `nerve blackbox` dump driven in this process, by phase: the recorder's
own work from a trigger to a closed MCAP file, without its wake-up, the
pipe to a reader or a publisher sharing the CPUs (bench/blackbox_latency.py
measures all of that). For comparing two versions of the dump in the same
minute on a noisy host (run each with its own venv's python).

    .venv/bin/python bench/blackbox_dump.py [--channels 8] [--messages 10000] [--size 256] [--repeat 10]

The rings are filled first (all messages inside the 10 s pre window, post
window 0); each repeat opens an Incident on them (opening the rings, the
last state), pumps it until complete (the copy, the CRC and the write of
each chunk), closes the file and releases the rings. Prints each phase's
p50 and the totals' p50 and max, in ms. Files go to a temporary folder,
removed at the end; channels are named bbdump<pid>.* and removed."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from typing import List

import nerve
from nerve_tools.recording import blackbox as bb


def p50(xs: List[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--channels", type=int, default=8)
    ap.add_argument("--messages", type=int, default=10000, help="per channel")
    ap.add_argument("--size", type=int, default=256, help="bytes a message")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    names = [f"bbdump{os.getpid()}.c{i}" for i in range(args.channels)]
    slots = args.messages + 16
    out = tempfile.mkdtemp(prefix="bbdump")
    phases: List[List[float]] = [[], [], [], []]
    try:
        data = os.urandom(args.size)
        for n in names:
            with nerve.create(n, slots=slots, size=max(slots * (args.size + 64), 1 << 20)) as ch:
                for _ in range(args.messages):
                    ch.put(data)
        offset = bb.realtime_offset_ns()
        for i in range(args.repeat):
            path = os.path.join(out, f"{i}.mcap")
            t = [time.perf_counter()]
            inc = bb.Incident(path, names, bb.Windows(10.0, 0.0), bb.Trigger("command", "bench", nerve.now_ns()),
                              offset)
            t.append(time.perf_counter())
            while not inc.pump(nerve.now_ns()):
                pass
            t.append(time.perf_counter())
            inc.close(release=False)
            t.append(time.perf_counter())
            inc.release()
            t.append(time.perf_counter())
            for k in range(4):
                phases[k].append((t[k + 1] - t[k]) * 1e3)
            os.unlink(path)
    finally:
        for n in names:
            try:
                nerve.unlink(n)
            except nerve.Error:
                pass
        shutil.rmtree(out, ignore_errors=True)
    total = [a + b + c for a, b, c, _ in zip(*phases)]
    print(f"{args.channels} x {args.messages} x {args.size} B, {args.repeat} dumps, p50 ms: "
          f"open {p50(phases[0]):.1f}, copy and write {p50(phases[1]):.1f}, close {p50(phases[2]):.1f}, "
          f"release {p50(phases[3]):.1f}; trigger to closed file p50 {p50(total):.1f}, max {max(total):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
