"""A dump of a large window against the copy floor of the host, in one run:
the recorder's dump (an Incident driven in this process: views, each
payload copied by the kernel from the ring's file into the incident file)
against a bare loop of sendfile() from a file in /dev/shm holding the same
bytes into a new file of the same directory: the least any recorder that
writes through the page cache can take. Alternated; every file is kept
until the end (so the page cache grows as with incidents kept on a disk)
and each copy starts after the files before are on the disk (sync, not
timed).

    .venv/bin/python bench/blackbox_floor.py [--mib 1024] [--repeat 4] [--dir /tmp]

Prints each copy's time in ms, in order, and the ratio of each dump to the
floor copy right before it."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import nerve
from nerve_tools.recording import blackbox as bb

MIB = 1 << 20


def floor_copy(src: int, n: int, path: str) -> float:
    out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    t = time.perf_counter()
    try:
        off = 0
        while off < n:
            off += os.sendfile(out, src, off, MIB)
    finally:
        os.close(out)
    return (time.perf_counter() - t) * 1e3


def dump(name: str, path: str, offset: int) -> float:
    t = time.perf_counter()
    inc = bb.Incident(path, [name], bb.Windows(3600.0, 0.0), bb.Trigger("command", "bench", nerve.now_ns()),
                      offset)
    while not inc.pump(nerve.now_ns()):
        pass
    inc.close()
    return (time.perf_counter() - t) * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=1024, help="MiB a copy (1 MiB messages)")
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where the files go (a disk's file system)")
    args = ap.parse_args()
    name = f"bbfloor{os.getpid()}"
    out = tempfile.mkdtemp(prefix="bbfloor", dir=args.dir)
    src_path = f"/dev/shm/bbfloor{os.getpid()}.src"
    n = args.mib * MIB
    rows = []
    src = os.open(src_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        data = os.urandom(MIB)
        for _ in range(args.mib):
            os.write(src, data)
        with nerve.create(name, slots=args.mib + 16, size=(args.mib + 16) * (MIB + 64)) as ch:
            for _ in range(args.mib):
                ch.put(data)
            offset = bb.realtime_offset_ns()
            for i in range(args.repeat):
                os.sync()
                time.sleep(0.5)
                f = floor_copy(src, n, os.path.join(out, f"floor{i}"))
                os.sync()
                time.sleep(0.5)
                d = dump(name, os.path.join(out, f"dump{i}.mcap"), offset)
                rows.append((f, d))
                print(f"{i}: floor (sendfile) {f:.0f} ms, dump {d:.0f} ms, dump / floor {d / f:.2f}", flush=True)
    finally:
        os.close(src)
        os.unlink(src_path)
        try:
            nerve.unlink(name)
        except nerve.Error:
            pass
        shutil.rmtree(out, ignore_errors=True)
    ratios = sorted(d / f for f, d in rows)
    print(f"{args.mib} MiB, {args.repeat} pairs: dump / floor median {ratios[len(ratios) // 2]:.2f}, "
          f"range {ratios[0]:.2f}-{ratios[-1]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
