"""Benchmarks of the Python package (run by `make bench-python`).

1. Per-call overhead: Python put + get of 64-byte messages against the same
   loop in C (put_get_loop.c, compiled here from the same core sources with
   the module's optimisation flags), side by side in one run.
2. One 1 MiB numpy array from producer to consumer, per message: nerve
   zero-copy view, nerve copy, nerve reservation + view, against
   multiprocessing.shared_memory + pickle and pyzmq over ipc://, with
   np.copyto of the same bytes as the floor.

Both are measured in one process (producer call, then consumer call), so
they compare the CPU cost of each transport without the cross-CPU wake-up
that would dominate and blur them on a shared 2-CPU machine. Samples are
the mean per call of a batch (part 1) or one message each (part 2); the
results name their host and go to bench/results/python-*.{md,jsonl}.
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import pickle
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from multiprocessing import shared_memory
from pathlib import Path

import numpy as np

import nerve
from nerve_tools.host import record as host_record
from nerve_tools.host import stamp as iso_stamp

ROOT = Path(__file__).resolve().parents[2]


# ---- host and statistics -------------------------------------------------------


def host() -> dict:
    """nerve_tools.host's record (the one nerve bench writes) and this
    interpreter's versions."""
    return {**host_record(), "python": platform.python_version(), "numpy": np.__version__}


def summary(samples) -> dict:
    a = np.sort(np.asarray(samples, dtype=np.float64))
    q = lambda p: float(np.percentile(a, p))  # noqa: E731
    return {"n": int(a.size), "p50": q(50), "p99": q(99), "p99.9": q(99.9), "max": float(a[-1])}


# ---- 1. per-call overhead ----------------------------------------------------------


def build_c_loop(work: Path) -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    exe = work / "put_get_loop"
    sources = sorted(glob.glob(str(ROOT / "src" / "*.c")) + glob.glob(str(ROOT / "src" / "platform" / "linux" / "*.c")))
    cmd = [cc, "-std=c11", "-O3", "-DNDEBUG", "-D_GNU_SOURCE", "-DNERVE_STATIC_DEFINE",
           f"-I{ROOT / 'include'}", f"-I{ROOT / 'src'}", *sources,
           str(Path(__file__).with_name("put_get_loop.c")), "-o", str(exe), "-lpthread", "-lm"]
    subprocess.run(cmd, check=True)
    return exe


def overhead(name: str, size: int, rounds: int, batch: int, work: Path) -> dict:
    msg = bytes(size)
    res = {}
    with nerve.create(name, slots=4096, size=1 << 20) as w, nerve.open(name) as r:
        put, get = w.put, r.get
        for _ in range(batch * 20):  # warm up
            put(msg)
            get()
        puts, gets = [], []
        clock = time.perf_counter_ns
        for _ in range(rounds):
            t0 = clock()
            for _ in range(batch):
                put(msg)
            t1 = clock()
            for _ in range(batch):
                get()
            t2 = clock()
            puts.append((t1 - t0) / batch)
            gets.append((t2 - t1) / batch)
        res["python"] = {"put_ns": summary(puts), "get_ns": summary(gets),
                         "put_get_ns": summary(np.add(puts, gets))}
        exe = build_c_loop(work)
        out = subprocess.run([str(exe), name, str(size), str(rounds), str(batch)],
                             check=True, capture_output=True, text=True).stdout
        c = json.loads(out)
        res["c"] = {"put_ns": summary(c["put_ns"]), "get_ns": summary(c["get_ns"]),
                    "put_get_ns": summary(np.add(c["put_ns"], c["get_ns"]))}
    nerve.unlink(name)
    return res


# ---- 2. one 1 MiB numpy array --------------------------------------------------------


SHAPE = (512, 512, 4)  # 1 MiB of uint8


def timed(out: dict, label: str, once, iters: int) -> None:
    """out[label]: the summary of `iters` timed calls of `once` (ns each),
    after 20 untimed ones."""
    clock = time.perf_counter_ns
    for _ in range(20):
        once()
    samples = []
    for _ in range(iters):
        t0 = clock()
        once()
        samples.append(clock() - t0)
    out[label] = summary(samples)


def large_nerve(out: dict, name: str, src, iters: int) -> None:
    """nerve's three ways to pass `src` (put + view, put + get, reserve +
    view), on channel `name`, removed afterwards."""
    shape = SHAPE
    with nerve.create(name, slots=16, size=8 * src.nbytes) as w, nerve.open(name) as r:

        def nerve_view():
            w.put(src)
            with r.view(newest=True) as m:
                a = m.array(np.uint8, shape)
                a[0, 0, 0]  # touch it inside the validated block

        def nerve_copy():
            w.put(src)
            a = r.get(newest=True).array(np.uint8, shape)
            a[0, 0, 0]

        def nerve_reserve_view():
            with w.reserve(dtype=np.uint8, shape=shape) as dst:
                np.copyto(dst, src)
            with r.view(newest=True) as m:
                m.array(np.uint8, shape)[0, 0, 0]

        timed(out, "nerve put + view (zero-copy read)", nerve_view, iters)
        timed(out, "nerve put + get (copy read)", nerve_copy, iters)
        timed(out, "nerve reserve + view (one copy in all)", nerve_reserve_view, iters)
    nerve.unlink(name)


def large_shm(out: dict, src, iters: int) -> None:
    """multiprocessing.shared_memory + pickle; the segment is removed."""
    shm = shared_memory.SharedMemory(create=True, size=2 * src.nbytes)
    try:
        def shm_pickle():
            data = pickle.dumps(src, protocol=pickle.HIGHEST_PROTOCOL)
            shm.buf[: len(data)] = data
            a = pickle.loads(shm.buf[: len(data)])
            a[0, 0, 0]

        timed(out, "multiprocessing.shared_memory + pickle", shm_pickle, iters)
    finally:
        shm.close()
        shm.unlink()


def large_zmq(out: dict, src, iters: int) -> None:
    """pyzmq PAIR over a temporary ipc:// socket (removed), or a row saying
    it was skipped when pyzmq is not installed."""
    try:
        import zmq
    except ImportError:
        out["pyzmq ipc://"] = {"skipped": "pyzmq not installed"}
        return
    ctx = zmq.Context()
    path = tempfile.mktemp(prefix="nerve-bench-", suffix=".ipc")
    rx, tx = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    rx.bind(f"ipc://{path}")
    tx.connect(f"ipc://{path}")
    try:
        def zmq_ipc():
            tx.send(src, copy=False)
            frame = rx.recv(copy=False)
            a = np.frombuffer(frame.buffer, np.uint8).reshape(SHAPE)
            a[0, 0, 0]

        timed(out, "pyzmq ipc:// (PAIR, copy=False)", zmq_ipc, iters)
    finally:
        tx.close(0)
        rx.close(0)
        ctx.term()
        if os.path.exists(path):
            os.unlink(path)


def large(name: str, iters: int) -> dict:
    """Part 2: every transport's summary by label, in table order, the
    floor (np.copyto of the same bytes) last."""
    src = np.random.default_rng(1).integers(0, 256, size=SHAPE, dtype=np.uint8)
    out: dict = {}
    large_nerve(out, name, src, iters)
    large_shm(out, src, iters)
    large_zmq(out, src, iters)
    dst = np.empty_like(src)
    timed(out, "floor: np.copyto of 1 MiB", lambda: np.copyto(dst, src), iters)
    return out


# ---- report ---------------------------------------------------------------------------


def fmt_us(ns: float) -> str:
    return f"{ns / 1000:.2f}"


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"), help="results directory")
    ap.add_argument("--rounds", type=int, default=2000, help="timed batches (part 1)")
    ap.add_argument("--batch", type=int, default=100, help="calls per batch (part 1)")
    ap.add_argument("--iters", type=int, default=1000, help="messages (part 2)")
    ap.add_argument("--quick", action="store_true", help="a smoke run (few samples)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.iters = 50, 50
    return args


def overhead_lines(args: argparse.Namespace, h: dict, stamp: str, ov: dict) -> list:
    """The report's title, host, command and part 1: the table of both
    loops and the Python/C ratio of the medians."""
    py, c = ov["python"], ov["c"]
    ratio = py["put_get_ns"]["p50"] / c["put_get_ns"]["p50"]
    lines = [
        f"# Python package benchmark, {stamp}",
        "",
        f"Host: {h['cpu']}, {h['cores']} CPUs, Linux {h['kernel']}"
        f"{' PREEMPT_RT' if h['preempt_rt'] else ''}, governor {h['governor'] or 'n/a'}, "
        f"isolated CPUs {h['isolated'] or 'none'}; Python {h['python']}, numpy {h['numpy']}, "
        f"nerve {h['nerve']}.",
        "",
        "Command: `make bench-python` (python/bench/bench_python.py).",
        "",
        f"## Per-call overhead, 64 B messages ({args.rounds} batches of {args.batch} calls; "
        "sample = mean per call of one batch)",
        "",
        "| loop | call | p50 µs | p99 µs | p99.9 µs | max µs | samples |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for lang, d in (("Python", py), ("C", c)):
        for call in ("put_ns", "get_ns", "put_get_ns"):
            s = d[call]
            label = {"put_ns": "put", "get_ns": "get", "put_get_ns": "put + get"}[call]
            lines.append(f"| {lang} | {label} | {fmt_us(s['p50'])} | {fmt_us(s['p99'])} | "
                         f"{fmt_us(s['p99.9'])} | {fmt_us(s['max'])} | {s['n']} |")
    lines += [
        "",
        f"Python/C ratio of the median put + get: **{ratio:.1f}x** "
        f"(Python put {fmt_us(py['put_ns']['p50'])} µs, get {fmt_us(py['get_ns']['p50'])} µs per call).",
    ]
    return lines


def large_lines(args: argparse.Namespace, lg: dict) -> list:
    """Part 2 of the report: the table, then each p50 as a ratio to the
    floor's."""
    lines = [
        "",
        f"## One 1 MiB numpy array, producer then consumer in one process ({args.iters} messages)",
        "",
        "| transport | p50 µs | p99 µs | p99.9 µs | max µs | samples |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, s in lg.items():
        if "skipped" in s:
            lines.append(f"| {label} | skipped: {s['skipped']} | | | | |")
            continue
        lines.append(f"| {label} | {fmt_us(s['p50'])} | {fmt_us(s['p99'])} | "
                     f"{fmt_us(s['p99.9'])} | {fmt_us(s['max'])} | {s['n']} |")
    # The 1 MiB figures as ratios to the floor measured in the same run
    # (one np.copyto, a C memcpy): what carries over to another machine.
    floor = next((s for label, s in lg.items() if label.startswith("floor") and "p50" in s), None)
    if floor is not None and floor["p50"] > 0:
        lines += ["", "Ratio of each p50 to the floor's in this run (`np.copyto` of 1 MiB, "
                  f"{fmt_us(floor['p50'])} µs): quote these, with the host, rather than the times.", ""]
        lines += [f"- {label}: {s['p50'] / floor['p50']:.2f}x" for label, s in lg.items()
                  if "p50" in s and not label.startswith("floor")]
    return lines


def write_results(args: argparse.Namespace, tag: str, report: str, h: dict, when: str,
                  ov: dict, lg: dict) -> Path:
    """python-TAG.md (the report) and python-TAG.jsonl (one line per
    summary, each with the host and time) under --out; the .md's path."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"python-{tag}.md").write_text(report)
    with open(out / f"python-{tag}.jsonl", "w") as f:
        for lang, d in (("python", ov["python"]), ("c", ov["c"])):
            for call, s in d.items():
                f.write(json.dumps({"bench": "python-overhead", "loop": lang, "call": call,
                                    "msg_bytes": 64, "batch": args.batch, "unit": "ns",
                                    **s, "host": h, "time": when}) + "\n")
        for label, s in lg.items():
            f.write(json.dumps({"bench": "python-1mib", "transport": label, "msg_bytes": 1 << 20,
                                "unit": "ns", **s, "host": h, "time": when}) + "\n")
    return out / f"python-{tag}.md"


def main() -> int:
    args = parse_args()
    h = host()
    when = iso_stamp()
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = f"nt-{os.getpid()}-bench"
    with tempfile.TemporaryDirectory() as work:
        ov = overhead(base + "-small", 64, args.rounds, args.batch, Path(work))
    lg = large(base + "-large", args.iters)
    report = "\n".join(overhead_lines(args, h, stamp, ov) + large_lines(args, lg)) + "\n"
    print(report)
    md = write_results(args, "quick" if args.quick else stamp, report, h, when, ov, lg)
    print(f"wrote {md} and .jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
