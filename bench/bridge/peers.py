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
    """The bridge's own Zenoh configuration (bridge_zenoh.make_config:
    peer, multicast scouting off, Zenoh shared memory off, the same drop
    settings), so that both paths run the same Zenoh."""
    from nerve_tools.bridge.wire import SessionOptions, make_config

    return make_config(SessionOptions(listen=[listen] if listen else [], connect=[connect] if connect else []))


def pace(i: int, t0: int, rate: float) -> None:
    if rate > 0:
        due = t0 + int(i * 1e9 / rate)
        d = due - time.monotonic_ns()
        if d > 0:
            time.sleep(d / 1e9)


def zenoh_sub(listen: str, n: int, idle_s: float) -> dict:
    import zenoh

    s = zenoh.open(zconf(listen=listen))
    lat, arr = [], []
    last = [0]
    first = [0]
    cpu = [0.0, 0.0, 1]  # CPU time at the first message, at the latest 1000th, that count
    done = threading.Event()

    now_ns, unpack = time.monotonic_ns, struct.unpack

    def cb(sample):
        now = now_ns()
        sent, _i = unpack("<qq", sample.attachment.to_bytes())
        len(sample.payload)
        lat.append(now - sent)
        arr.append(now)
        if not first[0]:
            first[0] = now
            cpu[0] = time.process_time()
        elif len(lat) % 1000 == 0:
            cpu[1:] = [time.process_time(), len(lat)]
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
    out = {"received": len(lat), "lat_ns": lat, "arr_ns": arr, "span_ns": last[0] - first[0],
           "cpu_us_per_msg": 1e6 * (cpu[1] - cpu[0]) / cpu[2] if cpu[2] > 1 else None}
    print(json.dumps(out), flush=True)
    os._exit(0)


def zenoh_pub(connect: str, n: int, size: int, rate: float, express: bool = False) -> dict:
    import zenoh

    s = zenoh.open(zconf(connect=connect))
    from nerve_tools.bridge.wire import qos

    pub = s.declare_publisher(KEY, **qos("data", express))  # the bridge's publisher settings
    end = time.monotonic() + 20
    while not getattr(pub.matching_status, "matching", pub.matching_status):
        if time.monotonic() > end:
            raise SystemExit("no subscriber")
        time.sleep(0.05)
    time.sleep(0.3)
    body = b"\x5a" * size
    put_ns = []  # how long each put() took (it returns once Zenoh queued the sample)
    now_ns = time.monotonic_ns
    c0 = time.process_time()
    t0 = now_ns()
    for i in range(n):
        pace(i, t0, rate)
        ts = now_ns()
        pub.put(body, attachment=struct.pack("<qq", ts, i))
        put_ns.append(now_ns() - ts)
    t1 = now_ns()
    cpu = time.process_time() - c0
    time.sleep(1.0)
    put_ns.sort()
    print(json.dumps({"sent": n, "send_s": (t1 - t0) / 1e9, "cpu_us_per_msg": 1e6 * cpu / n,
                      "put_us_p50": put_ns[n // 2] / 1e3}), flush=True)
    os._exit(0)


def nerve_writer(name: str, n: int, size: int, rate: float, wait_s: float) -> dict:
    w = nerve.open(name, write=True)
    time.sleep(wait_s)
    body = bytearray(b"\x5a" * size)
    c0 = time.process_time()
    t0 = time.monotonic_ns()
    for i in range(n):
        pace(i, t0, rate)
        body[:8] = struct.pack("<q", i)
        w.put(body)
    t1 = time.monotonic_ns()
    cpu = time.process_time() - c0
    print(json.dumps({"sent": n, "send_s": (t1 - t0) / 1e9, "cpu_us_per_msg": 1e6 * cpu / n}), flush=True)
    return {}


def nerve_reader(name: str, n: int, idle_s: float, mode: str = "wait", poll_us: float = 0) -> dict:
    """mode: "wait" (blocking get(): one copy, the cheapest read of small
    messages), "view" (blocking zero-copy view: large messages), "poll"
    (get() every 0.2 ms: throughput). poll_us > 0: the blocking reads wait
    with a lead of poll_us and a spin of twice that."""
    poll = mode == "poll"
    end = time.monotonic() + 30
    while True:
        try:
            r = nerve.open(name)
            break
        except nerve.ChannelNotFound:
            if time.monotonic() > end:
                raise SystemExit(f"no channel {name}") from None
            time.sleep(0.05)
    r.seek(r.stat().head_seq)
    print("ready", file=sys.stderr, flush=True)
    lat, idx, arr = [], [], []
    missed = 0
    first = last = 0
    cpu0 = cpu1 = 0.0
    ncpu = 1
    big = mode == "view"
    get, now_ns, unpack = r.get, nerve.now_ns, struct.unpack_from
    idle_ns = int(idle_s * 1e9)
    pol = dict(spin=2e-6 * poll_us, lead=1e-6 * poll_us) if poll_us > 0 else {}
    give_up = now_ns() + 60_000_000_000  # nothing at all for 60 s
    while len(lat) < n:
        # Small messages: get() (one copy, the cheapest read), waiting only
        # when nothing is there; images: a zero-copy view.
        try:
            if big:
                with r.view(wait=True, timeout=idle_s if lat else 60, **pol) as v:
                    now = now_ns()
                    m = (v.seq, v.time_ns, None, v.missed)
                    i = unpack("<q", v.data)[0]
            else:
                m = get()
                if m is None:
                    if poll:
                        # Throughput: poll every 0.2 ms instead of being
                        # woken for each message (what the bridge
                        # delivers, not the cost of one wake-up per
                        # message).
                        t = now_ns()
                        if (lat and t - last > idle_ns) or t > give_up:
                            break
                        time.sleep(0.0002)
                        continue
                    m = get(wait=True, timeout=idle_s if lat else 60, **pol)
                now = now_ns()
                i = unpack("<q", m[2])[0]
        except nerve.Timeout:
            break
        except nerve.StaleView:
            missed += 1
            continue
        lat.append(now - m[1])
        arr.append(now)
        missed += m[3]
        idx.append(i)
        if not first:
            first = now
            cpu0 = time.process_time()
        elif len(lat) % 1000 == 0:
            cpu1, ncpu = time.process_time(), len(lat)
        last = now
    print(json.dumps({"received": len(lat), "lat_ns": lat, "arr_ns": arr, "missed": missed,
                      "distinct": len(set(idx)), "span_ns": last - first,
                      "cpu_us_per_msg": 1e6 * (cpu1 - cpu0) / ncpu if ncpu > 1 else None}), flush=True)
    return {}


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "zsub":
        zenoh_sub(args[0], int(args[1]), float(args[2]))
    elif what == "zpub":
        zenoh_pub(args[0], int(args[1]), int(args[2]), float(args[3]), len(args) > 4 and args[4] == "express")
    elif what == "nwrite":
        nerve_writer(args[0], int(args[1]), int(args[2]), float(args[3]), float(args[4]))
    elif what == "nread":
        nerve_reader(args[0], int(args[1]), float(args[2]), args[3] if len(args) > 3 else "wait",
                     float(args[4]) if len(args) > 4 else 0)
    else:
        raise SystemExit(f"unknown {what}")
