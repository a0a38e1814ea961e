"""`nerve blackbox` latencies: a trigger to a closed, valid MCAP file (the
post window 0, so it is not counted), a process death to its trigger, and
the writers' put latency while a dump reads their rings against the same
writers idle, all in one run.

    .venv/bin/python bench/blackbox_latency.py [--triggers 20] [--large-mib 200] [--settle]
                                               [--out FILE.md]

1. Small: one publisher process puts on 8 channels at 1 kHz x 256 B, each
   ring holding more than 10 s; the recorder (--pre 10s --post 0) is armed
   on them. After 11 s, --triggers triggers one after the other, each a
   message on the trigger channel; the latency is from that message's
   commit time to the recorder's "wrote FILE" line read here (the file is
   closed then), so it includes the recorder's wake-up (a thread blocked
   on the trigger channel wakes it) and the pipe to this process. Every
   file is read back with the mcap reader, CRCs checked.
2. Large: one channel of --large-mib MiB a 10 s window (20 Hz of
   incompressible messages of large-mib/200 MiB), the same way, 5
   triggers. The issue asks for 1 GB; the default is scaled to what a
   2-core VM with 24 GB holds beside the rest of a run. The files are
   closed, not synced: the disk writes them afterwards, and a GB incident
   1.5 s after another competes with that write; --settle waits (untimed)
   until the files before are on the disk, as for one incident.
3. Death: a child process (sleep) watched with --pid is SIGKILLed; the
   latency is from just before the kill to the trigger time the recorder
   stamped when its pidfd became readable (in the file's trigger record).
4. Puts: the small publisher times every put (perf_counter_ns around
   Channel.put, from Python, so the interpreter's own cost is in both
   columns); the puts made while a dump ran (between a trigger and its
   file) against those of the 10 s before the first trigger."""

from __future__ import annotations

import argparse
import array
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Sequence, Tuple

from mcap.reader import make_reader

import nerve
from nerve_tools import host

PUBLISHER = r"""
import array, os, sys, time, nerve
duration, out = float(sys.argv[1]), sys.argv[2]
specs = [(n, float(hz), int(size)) for n, hz, size in (a.split(':') for a in sys.argv[3:])]
chans = [(nerve.open(n, write=True), 1.0 / hz, os.urandom(size)) for n, hz, size in specs]
at, lat = array.array('q'), array.array('q')
t0 = time.monotonic()
due = [t0] * len(chans)
end = t0 + duration
print('publishing', flush=True)
while time.monotonic() < end:
    now = time.monotonic()
    for i, (ch, period, data) in enumerate(chans):
        if now >= due[i]:
            a = time.perf_counter_ns()
            ch.put(data)
            lat.append(time.perf_counter_ns() - a)
            at.append(time.monotonic_ns())
            due[i] = max(due[i] + period, now - 0.1)
    if os.path.exists(out + '.stop'):
        break
    time.sleep(max(0.0, min(min(due), end) - time.monotonic()))
with open(out, 'wb') as f:
    at.tofile(f)
    lat.tofile(f)
"""


def pct(xs: Sequence[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))] if s else float("nan")


def tool() -> str:
    return str(Path(sys.executable).parent / "nerve-blackbox")


def arm(args: List[str]) -> subprocess.Popen:
    r = subprocess.Popen([tool(), *args], stderr=subprocess.PIPE, text=True)
    assert r.stderr is not None
    while "armed on" not in (line := r.stderr.readline()):
        assert line, "nerve blackbox ended"
    return r


def wrote(r: subprocess.Popen) -> Tuple[Path, int]:
    """The next file the recorder reports, and when that was read."""
    assert r.stderr is not None
    while True:
        line = r.stderr.readline()
        assert line, "nerve blackbox ended"
        if ": wrote " in line:
            return Path(line.split(": wrote ", 1)[1].split(" (", 1)[0]), time.monotonic_ns()


def valid(path: Path) -> dict:
    """Reads the file with CRCs checked; returns its trigger record."""
    with open(path, "rb") as f:
        reader = make_reader(f, validate_crcs=True)
        n = sum(1 for _ in reader.iter_messages())
        meta = {m.name: dict(m.metadata) for m in reader.iter_metadata()}
    assert n > 0, f"{path}: no messages"
    rec = meta["nerve.blackbox.trigger"]
    rec["_messages"] = n
    return rec


def triggers(r: subprocess.Popen, trig: str, count: int,
             settle: bool = False) -> Tuple[List[float], List[Tuple[int, int]], int]:
    """count triggers one after the other: latencies (ms), the dumps'
    intervals (monotonic ns), the messages of the last file. With
    ``settle``, each trigger waits (untimed) until the files written
    before are on the disk (sync), so that each dump is one incident's,
    not one of a queue that the disk's bandwidth bounds."""
    lat, spans, n = [], [], 0
    with nerve.open(trig, write=True) as ch:
        for _ in range(count):
            if settle:
                os.sync()
                time.sleep(0.5)
            ch.put(json.dumps({"note": "bench", "source": "blackbox_latency"}).encode())
            t0 = ch.stat().newest_time_ns
            path, t1 = wrote(r)
            lat.append((t1 - t0) / 1e6)
            spans.append((t0, t1))
            n = valid(path)["_messages"]
            time.sleep(0.2)
    return lat, spans, n


def make(names: Sequence[Tuple[str, float, int]], window: float) -> None:
    for n, hz, size in names:
        slots = int(hz * window * 1.25) + 16
        nerve.create(n, slots=slots, size=max(slots * (size + 64), 1 << 20)).close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--triggers", type=int, default=20)
    ap.add_argument("--deaths", type=int, default=20)
    ap.add_argument("--large-mib", type=int, default=200)
    ap.add_argument("--large-triggers", type=int, default=5)
    ap.add_argument("--settle", action="store_true",
                    help="before each large trigger, wait (untimed) until the files before are on the disk")
    ap.add_argument("--out", help="write the result (markdown) here as well")
    args = ap.parse_args()
    prefix = f"bblat{os.getpid()}."
    small = [(f"{prefix}s{i}", 1000.0, 256) for i in range(8)]
    large = [(f"{prefix}big", 20.0, (args.large_mib << 20) // 200)]
    made = [n for n, _, _ in small + large] + [prefix + "trig", prefix + "dead"]
    tmp = Path(tempfile.mkdtemp(prefix="bblat"))
    procs: List[subprocess.Popen] = []
    common = ["--pre", "10s", "--post", "0s", "-o", str(tmp / "inc"), "--trigger-channel", prefix + "trig",
              "--no-holders", "--cooldown", "0", "--max-per-minute", "100000", "--keep", "2"]
    try:
        # 1 and 4: small channels, puts timed.
        make(small, 10.0)
        pub = subprocess.Popen([sys.executable, "-c", PUBLISHER, "600", str(tmp / "puts"),
                                *(f"{n}:{hz}:{s}" for n, hz, s in small)], stdout=subprocess.PIPE, text=True)
        procs.append(pub)
        assert pub.stdout is not None and pub.stdout.readline().strip() == "publishing"
        r = arm([prefix + "s*", *common])
        procs.append(r)
        time.sleep(11.0)  # the rings hold 10 s; the last 10 s are the idle baseline
        idle_from = time.monotonic_ns() - 10 * 10**9
        small_lat, spans, small_n = triggers(r, prefix + "trig", args.triggers)
        r.terminate()
        r.communicate(timeout=60)
        (tmp / "puts.stop").touch()
        pub.communicate(timeout=60)
        raw = (tmp / "puts").read_bytes()
        at, put = array.array("q"), array.array("q")
        at.frombytes(raw[: len(raw) // 2])
        put.frombytes(raw[len(raw) // 2:])
        idle = [p / 1e3 for t, p in zip(at, put) if idle_from <= t < spans[0][0]]
        busy = [p / 1e3 for t, p in zip(at, put) if any(a <= t <= b for a, b in spans)]
        # 2: large window.
        make(large, 10.0)
        pub = subprocess.Popen([sys.executable, "-c", PUBLISHER, "600", str(tmp / "puts2"),
                                *(f"{n}:{hz}:{s}" for n, hz, s in large)], stdout=subprocess.PIPE, text=True)
        procs.append(pub)
        assert pub.stdout is not None and pub.stdout.readline().strip() == "publishing"
        time.sleep(11.0)
        r = arm([prefix + "big", *common])
        procs.append(r)
        large_lat, _spans, large_n = triggers(r, prefix + "trig", args.large_triggers, settle=args.settle)
        r.terminate()
        r.communicate(timeout=120)
        (tmp / "puts2.stop").touch()
        pub.communicate(timeout=60)
        # 3: deaths.
        with nerve.create(prefix + "dead", slots=16, size=1 << 16) as ch:
            ch.put(b"state")
        death = []
        for _ in range(args.deaths):
            child = subprocess.Popen(["sleep", "600"])
            procs.append(child)
            r = arm([prefix + "dead", *common, "--pid", str(child.pid)])
            procs.append(r)
            time.sleep(0.2)
            t0 = nerve.now_ns()
            child.send_signal(signal.SIGKILL)
            child.wait()
            path, _t = wrote(r)
            t = json.loads(valid(path)["triggers"])[0]
            assert t["kind"] == "process-death", t
            death.append((t["time_ns"] - t0) / 1e6)
            r.terminate()
            r.communicate(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            p.communicate()
        shutil.rmtree(tmp, ignore_errors=True)
        for n in made:
            try:
                nerve.unlink(n)
            except nerve.Error:
                pass
    h = host.record()
    lines = [
        f"# nerve blackbox: trigger to file, death detection, writers during a dump ({host.stamp()[:10]})",
        "",
        f"Host: {h['cpu']}, {h['cores']} cores, kernel {h['kernel']}, vm={h['vm']}, nerve {h['nerve']}.",
        f"Command: `.venv/bin/python bench/blackbox_latency.py --triggers {args.triggers} "
        f"--deaths {args.deaths} --large-mib {args.large_mib}{' --settle' if args.settle else ''}"
        f"{f' --large-triggers {args.large_triggers}' if args.large_triggers != 5 else ''}`",
        "",
        "| measure | n | p50 | p99 | max |",
        "|---|---|---|---|---|",
        f"| trigger to closed MCAP, 8 x 1 kHz x 256 B, 10 s ({small_n} messages) ms | {len(small_lat)} | "
        f"{pct(small_lat, 50):.1f} | {pct(small_lat, 99):.1f} | {max(small_lat):.1f} |",
        f"| trigger to closed MCAP, {args.large_mib} MiB in a 10 s window ({large_n} messages) ms | "
        f"{len(large_lat)} | {pct(large_lat, 50):.1f} | {pct(large_lat, 99):.1f} | {max(large_lat):.1f} |",
        f"| process death (SIGKILL) to trigger (pidfd) ms | {len(death)} | {pct(death, 50):.2f} | "
        f"{pct(death, 99):.2f} | {max(death):.2f} |",
        "",
        "Writers' put latency (8 x 1 kHz x 256 B, timed in Python around Channel.put), us:",
        "",
        "| writers | puts | p50 | p99 | p99.9 | max |",
        "|---|---|---|---|---|---|",
        f"| idle (10 s before the first trigger) | {len(idle)} | {pct(idle, 50):.1f} | {pct(idle, 99):.1f} | "
        f"{pct(idle, 99.9):.1f} | {max(idle):.1f} |",
        f"| during the {len(spans)} dumps | {len(busy)} | {pct(busy, 50):.1f} | {pct(busy, 99):.1f} | "
        f"{pct(busy, 99.9):.1f} | {max(busy):.1f} |",
        "",
        f"The {args.large_mib} MiB dumps in order, ms: " + ", ".join(f"{x:.0f}" for x in large_lat)
        + (" (each after the files before were on the disk: --settle)." if args.settle else
           " (one after the other: the disk writes the files before meanwhile)."),
        "",
        "With n <= 100 the p99 is the largest sample. Trigger "
        "latencies run from the trigger message's commit time to the recorder's line saying the "
        "file is written and closed, so they include the recorder's wake-up (a thread blocked "
        "on the trigger channel wakes it; a death wakes it by its pidfd). The dumps run on the "
        "same 2 cores as the writers.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
