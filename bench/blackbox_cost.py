"""The armed cost of `nerve blackbox` against a recorder that copies every
message into a RAM cache of the same window (what rosbag2's snapshot mode
does: one subscriber, a deque bounded by the window), measured in the
same run on the same publishers.

    .venv/bin/python bench/blackbox_cost.py [--duration 60] [--window 10] [--out bench/results/FILE.md]

One publisher process puts on 8 channels at 1 kHz x 256 B and 2 image
channels at 30 Hz x 6 MB (the issue's load); every ring holds the window.
Both recorders run for the whole duration; each one's CPU time (the
scheduler's ns of every thread, /proc/PID/task/TID/schedstat) and context
switches are taken from when it is ready to the end, its RSS (VmRSS) and
peak (VmHWM) at the end. The publisher's achieved rates are reported: on a loaded host they can fall
short of the asked ones, for both recorders alike.

The rings and the baseline's cache both hold the window: 10 s of two 6 MB
30 Hz image channels is 3.6 GB in /dev/shm plus 3.6 GB of cache, so on a
small machine pass a shorter --window (the recorder's armed cost does not
depend on it; the baseline's RSS grows with it)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nerve
from nerve_tools import host

PUBLISHER = r"""
import signal, sys, time, nerve
stop = []
signal.signal(signal.SIGTERM, lambda s, f: stop.append(s))  # the end of the run
duration = float(sys.argv[1])
specs = [(n, float(hz), int(size)) for n, hz, size in (a.split(':') for a in sys.argv[2:])]
chans = [(nerve.open(n, write=True), 1.0 / hz, bytes(size)) for n, hz, size in specs]
count = [0] * len(chans)
t0 = time.monotonic()
due = [t0] * len(chans)
end = t0 + duration
while not stop:
    now = time.monotonic()
    if now >= end:
        break
    for i, (ch, period, data) in enumerate(chans):
        if now >= due[i]:
            ch.put(data)
            count[i] += 1
            due[i] = max(due[i] + period, now - 0.1)
    time.sleep(max(0.0, min(min(due), end) - time.monotonic()))
elapsed = time.monotonic() - t0
print(' '.join(f'{c / elapsed:.1f}' for c in count), flush=True)
"""

# The baseline: one subscriber that copies every message of every channel
# into one cache bounded by the window (rosbag2's --snapshot-mode).
SNAPSHOT = r"""
import collections, sys, nerve
window = float(sys.argv[1])
chans = [nerve.open(n) for n in sys.argv[2:]]
for ch in chans:
    ch.seek(ch.stat().head_seq)
cache = collections.deque()
print('ready', flush=True)
while True:
    for ch in nerve.wait_any(chans, timeout=0.1):
        while True:
            m = ch.get()
            if m is None:
                break
            cache.append((m.time_ns, bytes(m.data)))
    if cache:
        oldest = cache[-1][0] - int(window * 1e9)
        while cache[0][0] < oldest:
            cache.popleft()
"""


def proc_cpu_s(pid: int) -> float:
    """CPU time of all the process's threads, in ns from the scheduler
    (/proc/PID/task/TID/schedstat), not in 10 ms clock ticks: the armed
    recorder uses a few ticks a minute."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue  # a thread that ended meanwhile
    return total / 1e9


def proc_status(pid: int) -> dict:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def switches(pid: int) -> int:
    s = proc_status(pid)
    return int(s["voluntary_ctxt_switches"]) + int(s["nonvoluntary_ctxt_switches"])


def kib(pid: int, key: str) -> int:
    return int(proc_status(pid)[key].split()[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--window", type=float, default=10.0, help="seconds the rings and the cache hold")
    ap.add_argument("--image-size", type=int, default=6 << 20)
    ap.add_argument("--out", help="write the result (markdown) here as well")
    args = ap.parse_args()
    prefix = f"bbcost{os.getpid()}."
    small = [(f"{prefix}s{i}", 1000.0, 256) for i in range(8)]
    images = [(f"{prefix}img{i}", 30.0, args.image_size) for i in range(2)]
    names = [n for n, _, _ in small + images]
    for n, hz, size in small + images:
        slots = int(hz * args.window * 1.25) + 16
        nerve.create(n, slots=slots, size=max(slots * (size + 64), 1 << 20)).close()
    procs = []
    tmp = tempfile.mkdtemp(prefix="bbcost")
    try:
        # It publishes until it is told to stop, after the recorders were
        # disarmed (a bound, should the run hang): its end is a process
        # death, which the recorder watching holders would dump.
        pub = subprocess.Popen([sys.executable, "-c", PUBLISHER, str(args.duration + 120),
                                *(f"{n}:{hz}:{s}" for n, hz, s in small + images)],
                               stdout=subprocess.PIPE, text=True)
        procs.append(pub)
        time.sleep(2.0)  # publishing: the plan sees the rates
        tool = str(Path(sys.executable).parent / "nerve-blackbox")
        recorders = []
        for i, extra in enumerate(([], ["--no-holders"])):
            r = subprocess.Popen([tool, prefix + "s*", prefix + "img*", "--pre", f"{args.window}s",
                                  "--post", "0s", "-o", tmp, "--trigger-channel", f"{prefix}trig{i}", *extra],
                                 stderr=subprocess.PIPE, text=True)
            procs.append(r)
            recorders.append(r)
        bb, bbn = recorders
        snap = subprocess.Popen([sys.executable, "-c", SNAPSHOT, str(args.window), *names],
                                stdout=subprocess.PIPE, text=True)
        procs.append(snap)
        assert snap.stdout is not None
        for r in recorders:
            assert r.stderr is not None
            while "armed on" not in (line := r.stderr.readline()):
                assert line, "nerve blackbox ended"
        assert snap.stdout.readline().strip() == "ready"
        # Settle: the baseline's opens made the recorder look for new
        # holders once (one scan of /proc); the steady state is measured.
        time.sleep(3.0)
        start = {p.pid: (proc_cpu_s(p.pid), switches(p.pid)) for p in (bb, bbn, snap)}
        t0 = time.monotonic()
        time.sleep(args.duration)
        wall = time.monotonic() - t0
        res = {}
        for label, p in (("nerve blackbox (armed)", bb), ("nerve blackbox --no-holders (armed)", bbn),
                         ("snapshot copy (baseline)", snap)):
            cpu0, sw0 = start[p.pid]
            res[label] = {"cpu_s": proc_cpu_s(p.pid) - cpu0, "switches": switches(p.pid) - sw0,
                          "rss_kib": kib(p.pid, "VmRSS"), "hwm_kib": kib(p.pid, "VmHWM"),
                          "anon_kib": kib(p.pid, "RssAnon"), "shmem_kib": kib(p.pid, "RssShmem")}
        # Disarm before the publisher ends (its death would be a trigger).
        said = []
        for p in (bb, bbn, snap):
            p.terminate()
            err = p.communicate(timeout=60)[1]
            said += [line for line in (err or "").splitlines() if "trigger" in line and p is not snap]
        pub.terminate()
        rates = pub.communicate(timeout=60)[0].split()
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
            p.communicate(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
        for n in names + [prefix + "trig0", prefix + "trig1"]:
            try:
                nerve.unlink(n)
            except nerve.Error:
                pass
    b = res["snapshot copy (baseline)"]
    h = host.record()
    lines = [
        f"# nerve blackbox armed cost vs a snapshot-mode copying recorder ({host.stamp()[:10]})",
        "",
        f"Host: {h['cpu']}, {h['cores']} cores, kernel {h['kernel']}, vm={h['vm']}, nerve {h['nerve']}.",
        f"Command: `.venv/bin/python bench/blackbox_cost.py --duration {args.duration:g} "
        f"--window {args.window:g}`",
        f"Load: 8 channels at 1 kHz x 256 B, 2 at 30 Hz x {args.image_size / (1 << 20):g} MiB; "
        f"achieved rates (Hz): {' '.join(rates)}; both recorders measured over the same "
        f"{wall:.1f} s.",
        "",
        "| recorder | CPU s | % of a core | context switches/s | RSS MiB | of it private (anon) "
        "| of it shared memory | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, r in res.items():
        lines.append(f"| {label} | {r['cpu_s']:.3f} | {100 * r['cpu_s'] / wall:.3f} | "
                     f"{r['switches'] / wall:.0f} | {r['rss_kib'] / 1024:.1f} | {r['anon_kib'] / 1024:.1f} | "
                     f"{r['shmem_kib'] / 1024:.1f} | {r['hwm_kib'] / 1024:.1f} |")
    lines.append("")
    for label in ("nerve blackbox (armed)", "nerve blackbox --no-holders (armed)"):
        a = res[label]
        ratio = f"{b['cpu_s'] / a['cpu_s']:.0f}x" if a["cpu_s"] > 0 else "more than the baseline's ticks"
        lines.append(f"CPU ratio baseline / {label}: {ratio}.")
    lines += ["", "CPU times are the scheduler's (/proc/PID/task/*/schedstat, every thread). "
              "The recorder looks for new holders of its channels (a scan of every process's "
              "mappings, as `nerve who`) when a process opened a channel file and still has it "
              "open 0.5 s later, at most once a second, and every 2 minutes; `--no-holders` shows "
              "the cost without it."]
    # A trigger while measured would put a dump into the armed cost.
    lines += ["", "Triggers during the run: " + ("; ".join(said) if said else "none.")]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
