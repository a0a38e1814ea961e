"""The programs bench_bridge.py runs inside the two hosts: a bare Zenoh
publisher and subscriber, and a nerve writer and reader (the nerve path
goes writer -> channel -> nerve bridge -> Zenoh -> nerve bridge -> channel
-> reader). Each prints one JSON line of results.

Times: both hosts are namespaces of one machine, so CLOCK_MONOTONIC is the
same clock on both; a latency is the receiver's now minus the sender's
send time (bare Zenoh: carried in the attachment, so the subscriber does
not copy the payload; nerve: the message's commit time, which the bridge
carries and translates)."""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
import time

import nerve

KEY = "bench/x"


def zconf(listen=None, connect=None):
    import zenoh

    c = zenoh.Config()
    c.insert_json5("mode", '"peer"')
    c.insert_json5("scouting/multicast/enabled", "false")
    c.insert_json5("transport/shared_memory/enabled", "false")
    c.insert_json5("listen/endpoints", json.dumps([listen] if listen else []))
    c.insert_json5("connect/endpoints", json.dumps([connect] if connect else []))
    return c


def pace(i: int, t0: int, rate: float) -> None:
    if rate > 0:
        due = t0 + int(i * 1e9 / rate)
        d = due - time.monotonic_ns()
        if d > 0:
            time.sleep(d / 1e9)


def zenoh_sub(listen: str, n: int, idle_s: float) -> dict:
    import zenoh

    s = zenoh.open(zconf(listen=listen))
    lat = []
    last = [0]
    first = [0]
    done = threading.Event()

    def cb(sample):
        now = time.monotonic_ns()
        sent, _i = struct.unpack("<qq", sample.attachment.to_bytes())
        len(sample.payload)
        lat.append(now - sent)
        if not first[0]:
            first[0] = now
        last[0] = now
        if len(lat) >= n:
            done.set()

    sub = s.declare_subscriber(KEY, cb)
    print("ready", file=sys.stderr, flush=True)
    t_end = time.monotonic() + 120
    while not done.is_set() and time.monotonic() < t_end:
        done.wait(0.2)
        if last[0] and time.monotonic_ns() - last[0] > idle_s * 1e9:
            break
    sub.undeclare()
    out = {"received": len(lat), "lat_ns": lat, "span_ns": last[0] - first[0]}
    print(json.dumps(out), flush=True)
    os._exit(0)


def zenoh_pub(connect: str, n: int, size: int, rate: float) -> dict:
    import zenoh

    s = zenoh.open(zconf(connect=connect))
    pub = s.declare_publisher(KEY, congestion_control=zenoh.CongestionControl.DROP,
                              priority=zenoh.Priority.DATA, express=False)
    end = time.monotonic() + 20
    while not getattr(pub.matching_status, "matching", pub.matching_status):
        if time.monotonic() > end:
            raise SystemExit("no subscriber")
        time.sleep(0.05)
    time.sleep(0.3)
    body = b"\x5a" * size
    t0 = time.monotonic_ns()
    for i in range(n):
        pace(i, t0, rate)
        pub.put(body, attachment=struct.pack("<qq", time.monotonic_ns(), i))
    time.sleep(1.0)
    print(json.dumps({"sent": n, "send_s": (time.monotonic_ns() - t0) / 1e9}), flush=True)
    os._exit(0)


def nerve_writer(name: str, n: int, size: int, rate: float, wait_s: float) -> dict:
    w = nerve.open(name, write=True)
    time.sleep(wait_s)
    body = bytearray(b"\x5a" * size)
    t0 = time.monotonic_ns()
    for i in range(n):
        pace(i, t0, rate)
        body[:8] = struct.pack("<q", i)
        w.put(body)
    print(json.dumps({"sent": n, "send_s": (time.monotonic_ns() - t0) / 1e9}), flush=True)
    return {}


def nerve_reader(name: str, n: int, idle_s: float, poll: bool = False) -> dict:
    end = time.monotonic() + 30
    while True:
        try:
            r = nerve.open(name)
            break
        except nerve.ChannelNotFound:
            if time.monotonic() > end:
                raise SystemExit(f"no channel {name}")
            time.sleep(0.05)
    r.seek(r.stat().head_seq)
    print("ready", file=sys.stderr, flush=True)
    lat, idx = [], []
    missed = 0
    first = last = 0
    big = r.stat().data_size >= 32 << 20
    while len(lat) < n:
        # Small messages: get() (one copy, the cheapest read), waiting only
        # when nothing is there; images: a zero-copy view.
        try:
            if big:
                with r.view(wait=True, timeout=idle_s if lat else 60) as m:
                    now = nerve.now_ns()
                    i = struct.unpack_from("<q", m.data)[0]
            else:
                m = r.get()
                while m is None and poll:
                    # Throughput: poll every 0.2 ms instead of being woken
                    # for each message (what the bridge delivers, not the
                    # cost of one wake-up per message).
                    time.sleep(0.0002)
                    if lat and nerve.now_ns() - last > idle_s * 1e9:
                        raise TimeoutError()
                    m = r.get()
                if m is None:
                    m = r.get(wait=True, timeout=idle_s if lat else 60)
                now = nerve.now_ns()
                i = struct.unpack_from("<q", m.data)[0]
        except (nerve.Timeout, TimeoutError):
            break
        except nerve.StaleView:
            missed += 1
            continue
        lat.append(now - m.time_ns)
        missed += m.missed
        idx.append(i)
        first = first or now
        last = now
    print(json.dumps({"received": len(lat), "lat_ns": lat, "missed": missed,
                      "distinct": len(set(idx)), "span_ns": last - first}), flush=True)
    return {}


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "zsub":
        zenoh_sub(args[0], int(args[1]), float(args[2]))
    elif what == "zpub":
        zenoh_pub(args[0], int(args[1]), int(args[2]), float(args[3]))
    elif what == "nwrite":
        nerve_writer(args[0], int(args[1]), int(args[2]), float(args[3]), float(args[4]))
    elif what == "nread":
        nerve_reader(args[0], int(args[1]), float(args[2]), len(args) > 3 and args[3] == "poll")
    else:
        raise SystemExit(f"unknown {what}")
