"""nerve hz, nerve bw, nerve delay: a channel's message rate, bandwidth and
delay over a moving window of its newest messages, printed every second
(like ``rostopic hz/bw/delay``).

Every message committed after the start is read (next-unseen order); those
the ring overwrote before this reader got them are counted as missed and do
not distort the rate, which comes from the commit times (CLOCK_MONOTONIC)
of the messages in the window. ``delay`` is the time from a message's
commit to its reception here, and, when the message has a header stamp
(``std_msgs/Header``), from that stamp (wall clock) to its reception."""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys
import time
from typing import Deque, List, Optional, Sequence, Tuple

import nerve

from .. import options
from .._common import sigterm_as_interrupt
from ..codec import payload as codecs
from .follow import open_channel

KINDS = {
    "hz": "the message rate (from commit times)",
    "bw": "the bandwidth (bytes per second, message sizes)",
    "delay": "the delay from commit (and from the header stamp, where the schema has one) to reception",
}


def parser(kind: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"nerve {kind}",
        description=f"Print {KINDS[kind]} of a channel over a moving window, every second.")
    p.add_argument("name", metavar="NAME", help="channel name")
    p.add_argument("-w", "--window", type=int, default=100, metavar="N",
                   help="messages in the moving window (default 100)")
    p.add_argument("--every", type=float, default=1.0, metavar="SEC",
                   help="seconds between reports (default 1)")
    p.add_argument("--reports", type=int, metavar="N", help="stop after N reports")
    options.add_json(p, "one JSON object per report")
    return p


def _stats(xs: Sequence[float]) -> Tuple[float, float, float, float]:
    mean = sum(xs) / len(xs)
    var = sum((x - mean) ** 2 for x in xs) / len(xs)
    return mean, min(xs), max(xs), math.sqrt(var)


def _ms(ns: float) -> str:
    if abs(ns) >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e3:.1f} us"


def _bytes(b: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(b) < 1000 or unit == "GB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.2f} {unit}"
        b /= 1000
    raise AssertionError


class Window:
    """The last N messages: commit time, size, reception delays."""

    def __init__(self, n: int) -> None:
        self.times: Deque[int] = collections.deque(maxlen=n)
        self.sizes: Deque[int] = collections.deque(maxlen=n)
        self.delays: Deque[int] = collections.deque(maxlen=n)
        self.stamp_delays: Deque[int] = collections.deque(maxlen=n)
        self.total = 0
        self.missed = 0
        self.new = 0

    def add(self, msg: nerve.Message, recv_mono: int, stamp_delay: Optional[int]) -> None:
        self.times.append(msg.time_ns)
        self.sizes.append(msg.size)
        self.delays.append(recv_mono - msg.time_ns)
        if stamp_delay is not None:
            self.stamp_delays.append(stamp_delay)
        self.total += 1
        self.missed += msg.missed
        self.new += 1

    def report(self, kind: str) -> dict:
        r: dict = {"window": len(self.times), "messages": self.total, "missed": self.missed}
        if kind == "hz":
            dts = [b - a for a, b in zip(self.times, list(self.times)[1:])]
            if dts:
                mean, lo, hi, sd = _stats(dts)
                r.update(rate_hz=1e9 / mean if mean > 0 else None, min_ns=lo, max_ns=hi,
                         std_dev_ns=sd)
        elif kind == "bw":
            if len(self.times) >= 2 and self.times[-1] > self.times[0]:
                span = self.times[-1] - self.times[0]
                r["bytes_per_s"] = sum(list(self.sizes)[1:]) * 1e9 / span
            if self.sizes:
                mean, lo, hi, _ = _stats(list(self.sizes))
                r.update(mean_size=mean, min_size=lo, max_size=hi)
        else:
            if self.delays:
                mean, lo, hi, sd = _stats(list(self.delays))
                r.update(delay_ns=mean, min_ns=lo, max_ns=hi, std_dev_ns=sd)
            if self.stamp_delays:
                mean, lo, hi, sd = _stats(list(self.stamp_delays))
                r.update(stamp_delay_ns=mean, stamp_min_ns=lo, stamp_max_ns=hi,
                         stamp_std_dev_ns=sd, stamp_window=len(self.stamp_delays))
        return r


def text(kind: str, r: dict) -> str:
    tail = f"  window {r['window']}  missed {r['missed']}"
    if kind == "hz":
        if "rate_hz" not in r or r["rate_hz"] is None:
            return "waiting for a second message"
        return (f"average rate: {r['rate_hz']:.3f} Hz\n\tmin {_ms(r['min_ns'])}  "
                f"max {_ms(r['max_ns'])}  std dev {_ms(r['std_dev_ns'])}{tail}")
    if kind == "bw":
        if "bytes_per_s" not in r:
            return "waiting for a second message"
        return (f"average: {_bytes(r['bytes_per_s'])}/s\n\tmean {_bytes(r['mean_size'])}  "
                f"min {_bytes(r['min_size'])}  max {_bytes(r['max_size'])}{tail}")
    if "delay_ns" not in r:
        return "no message yet"
    s = (f"commit to now: average {_ms(r['delay_ns'])}\n\tmin {_ms(r['min_ns'])}  "
         f"max {_ms(r['max_ns'])}  std dev {_ms(r['std_dev_ns'])}{tail}")
    if "stamp_delay_ns" in r:
        s += (f"\nheader stamp to now: average {_ms(r['stamp_delay_ns'])}\n\tmin "
              f"{_ms(r['stamp_min_ns'])}  max {_ms(r['stamp_max_ns'])}  "
              f"std dev {_ms(r['stamp_std_dev_ns'])}  window {r['stamp_window']}")
    return s


def run(kind: str, argv: Optional[Sequence[str]] = None) -> int:
    ap = parser(kind)
    args = ap.parse_args(argv)
    if args.window < 2:
        ap.error("--window must be at least 2")
    if not args.every > 0:
        ap.error("--every must be positive")
    if args.reports is not None and args.reports <= 0:
        ap.error("--reports must be positive")
    prog = f"nerve {kind}"
    sigterm_as_interrupt()
    ch = open_channel(prog, args.name)
    codec: Optional[codecs.Codec] = None
    if kind == "delay":
        try:
            codec = codecs.Codec.for_channel(ch)
            if codec.raw:
                codec = None
        except codecs.CodecError as e:
            print(f"{prog}: {args.name}: {e}; header stamps are not read", file=sys.stderr)
    win = Window(args.window)
    ch.seek(ch.stat().head_seq)
    reports = 0
    next_report = time.monotonic() + args.every
    try:
        while args.reports is None or reports < args.reports:
            left = next_report - time.monotonic()
            msg = None
            if left > 0:
                try:
                    msg = ch.get(wait=True, timeout=left)
                except nerve.Timeout:
                    msg = None
            if msg is not None:
                recv = nerve.now_ns()
                stamp = None
                if codec is not None:
                    try:
                        s = codecs.header_stamp_ns(codec.decode(msg.data))
                        if s is not None:
                            stamp = time.time_ns() - s
                    except codecs.CodecError:
                        pass
                win.add(msg, recv, stamp)
                continue
            next_report += args.every
            if next_report <= time.monotonic():
                # Descheduled past a whole interval (a loaded host): the
                # next window starts now rather than a burst of reports
                # with no message read between them.
                next_report = time.monotonic() + args.every
            reports += 1
            r = win.report(kind)
            if args.json:
                print(json.dumps(r), flush=True)
            elif win.new == 0 and win.total == 0:
                print("no new messages", flush=True)
            else:
                print(text(kind, r), flush=True)
            win.new = 0
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        pass
    finally:
        ch.close()
    return 0


def main_hz(argv: Optional[List[str]] = None) -> int:
    return run("hz", argv)


def main_bw(argv: Optional[List[str]] = None) -> int:
    return run("bw", argv)


def main_delay(argv: Optional[List[str]] = None) -> int:
    return run("delay", argv)
