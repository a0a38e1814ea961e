"""One-way latency publisher -> subscriber (two processes) over
rmw_nerve_cpp and over rmw_fastrtps_cpp, in one run on one host, through
rclpy (the Jazzy wheels') and through rcl in C (bench/rmw/rcl_latency.c,
built as build/rmw_nerve/rcl_latency; with 1 and 8 subscriptions, and the
publisher's own cost per rcl_publish).

    python bench/rmw/rmw_latency.py [--layer rclpy|rcl|both] [--count N]
                                      [--rate HZ | --rates HZ,HZ] [--kinds K,K]
                                      [--out FILE] [--sub-procs 1,8] [--baseline]
                                      [--before LIB] [--no-fastrtps]

Without --sub-procs, the rcl rows put 1 and then 8 subscriptions in one
subscriber process. With --sub-procs 1,8, each row has that many
subscriber processes of one subscription each (rcl and/or rclpy), and the
latency percentiles pool every sample of every process ("worst_p99_us" is
the worst process's own p99); the publisher waits until it sees them all.
--rates runs every row at each rate, in this one run. --baseline (rcl rows)
adds a row of nerve's C API doing what rcl forces (bench/rmw/nerve_latency.c,
built as build/bench/nerve_latency: a blocking reader woken per message, one
copy in and one copy out) with the same processes, rate and size, and gives
each row's p50 and p99 as a ratio of that baseline's (p50_x_baseline,
p99_x_baseline). An rclpy row on rmw_nerve_cpp whose rcl row ran before it
(--layer both) gets "rclpy_own_p50_us": its p50 less rcl's on rmw_nerve_cpp,
the part that is rclpy's own (the same under every RMW). --before LIB adds
rows of that rmw_nerve_cpp library ("rmw_nerve_cpp@before", e.g. a copy of
main's), right after each row of the current one, so that a change is
measured before and after in one run. --no-fastrtps leaves rmw_fastrtps_cpp
out.

Run with the project venv's Python; it starts the nodes with the Jazzy
wheels' Python (NERVE_ROS2_PYTHON, default .venv-jazzy/bin/python), on
rmw_nerve through nerve-ros2-exec (NERVE_RMW_LIB, default
build/rmw_nerve/librmw_nerve_cpp.so). Each message carries its send time
(CLOCK_MONOTONIC ns, shared by the processes); the subscriber's callback
takes the difference. Fast DDS runs with ROS_AUTOMATIC_DISCOVERY_RANGE=
LOCALHOST (its default transports: shared memory between local processes,
UDP loopback for discovery). Prints and writes JSON lines."""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

from rmwbench import drop_domain, write_rows  # bench/rmw/rmwbench.py, beside this script

ROOT = Path(__file__).resolve().parents[2]
PY = os.environ.get("NERVE_ROS2_PYTHON", str(ROOT / ".venv-jazzy/bin/python"))
LIB = os.environ.get("NERVE_RMW_LIB", str(ROOT / "build/rmw_nerve/librmw_nerve_cpp.so"))
BEFORE = "rmw_nerve_cpp@before"  # the "rmw" of --before's rows
RCL = os.environ.get("NERVE_RCL_LATENCY", str(ROOT / "build/rmw_nerve/rcl_latency"))
BASE = os.environ.get("NERVE_BASE_LATENCY", str(ROOT / "build/bench/nerve_latency"))
BASELINE = "nerve-c-api"  # the "rmw" of the baseline's rows
RCL_SO = str(Path(PY).parent.parent / "lib" / "librcl.so")

NODE = r'''
import json, sys, time
import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile
role, kind, count, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
subs = int(sys.argv[5]) if len(sys.argv) > 5 else 1
from std_msgs.msg import String
from sensor_msgs.msg import Imu, PointCloud2, Image
T = {"64B": String, "Imu": Imu, "PointCloud2-1MiB": PointCloud2, "Image-1080p": Image}[kind]
def make():
    m = T()
    if kind == "64B":
        m.data = "x" * 64
    elif kind == "PointCloud2-1MiB":
        m.height, m.width, m.point_step, m.row_step = 1, 65536, 16, 16 * 65536
        m.data = bytes(1 << 20)
    elif kind == "Image-1080p":
        m.height, m.width, m.step, m.encoding = 1080, 1920, 5760, "rgb8"
        m.data = bytes(1920 * 1080 * 3)
    return m
def stamp(m, t):
    if kind == "64B":
        m.data = "%020d" % t + m.data[20:]
    else:
        m.header.stamp.sec, m.header.stamp.nanosec = t // 10**9, t % 10**9
def sent(m):
    if kind == "64B":
        return int(m.data[:20])
    return m.header.stamp.sec * 10**9 + m.header.stamp.nanosec
rclpy.init()
n = Node("lat_" + role)
qos = QoSProfile(depth=10)
if role == "sub":
    lat = []
    n.create_subscription(T, "/lat", lambda m: lat.append(time.monotonic_ns() - sent(m)), qos)
    print("ready", flush=True)
    end = time.monotonic() + 60 + count / rate
    last = None  # stop 5 s after the last sample: the publisher is done
    while len(lat) < count and time.monotonic() < end:
        k = len(lat)
        rclpy.spin_once(n, timeout_sec=0.1)
        if len(lat) > k:
            last = time.monotonic()
        elif last is not None and time.monotonic() - last > 5:
            break
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] / 1000.0 if lat else None
    print(json.dumps({"n": len(lat), "p50_us": q(0.5), "p99_us": q(0.99),
                      "max_us": lat[-1] / 1000.0 if lat else None,
                      "lat_us": [x / 1000.0 for x in lat]}), flush=True)
else:
    p = n.create_publisher(T, "/lat", qos)
    end = time.monotonic() + 30
    while n.count_subscribers("/lat") < subs and time.monotonic() < end:
        rclpy.spin_once(n, timeout_sec=0.05)
    time.sleep(1.0)  # let DDS finish matching
    m = make()
    for i in range(count + 20):
        stamp(m, time.monotonic_ns())
        p.publish(m)
        time.sleep(1.0 / rate)
rclpy.shutdown()
'''


def pooled(outs: list[dict]) -> dict:
    """One row from several subscriber processes: percentiles over every
    sample, and the worst process's own p99."""
    lat = sorted(x for o in outs for x in o.get("lat_us", []))

    def q(p):
        return lat[min(len(lat) - 1, int(p * (len(lat) - 1)))] if lat else None

    p99s = [o["p99_us"] for o in outs if o.get("p99_us") is not None]
    return {"n": len(lat), "p50_us": q(0.5), "p99_us": q(0.99),
            "max_us": lat[-1] if lat else None, "procs": len(outs),
            "worst_p99_us": max(p99s) if p99s else None}


def run(layer: str, rmw: str, kind: str, count: int, rate: float, subs: int,
        domain: int, procs: int = 0, before: str | None = None) -> dict:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               PYTHONUNBUFFERED="1")
    pre = []
    if rmw in ("rmw_nerve_cpp", BEFORE):
        lib = before if rmw == BEFORE else LIB
        pre = [sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", lib, "--rcl", RCL_SO, "--"]
    elif rmw != BASELINE:
        env["RMW_IMPLEMENTATION"] = rmw
    waits = procs * subs if procs else subs
    if rmw == BASELINE:  # removed with the domain's channels (drop_domain)
        env["NERVE_LAT_CHAN"] = f"ros2-d{domain}.lat-baseline"
        sub_cmd = [BASE, "sub", kind, str(count), "1", *(["raw"] if procs else [])]
        pub_cmd = [BASE, "pub", kind, str(count), str(rate)]
    elif layer == "rclpy":
        sub_cmd = [PY, "-c", NODE, "sub", kind, str(count), str(rate)]
        pub_cmd = [PY, "-c", NODE, "pub", kind, str(count), str(rate), str(waits)]
    else:
        sub_cmd = [RCL, "sub", kind, str(count), str(subs), *(["raw"] if procs else [])]
        pub_cmd = [RCL, "pub", kind, str(count), str(rate), str(waits)]
    sub_procs = []
    for _ in range(max(procs, 1)):
        sub = subprocess.Popen([*pre, *sub_cmd], env=env, stdout=subprocess.PIPE, text=True)
        sub_procs.append(sub)
        assert sub.stdout.readline().strip() == "ready"
    pub = subprocess.Popen([*pre, *pub_cmd], env=env, stdout=subprocess.PIPE, text=True)
    outs = [json.loads(sub.communicate(timeout=300)[0].strip().splitlines()[-1])
            for sub in sub_procs]
    pub_out = pub.communicate(timeout=120)[0]
    if procs:
        r = pooled(outs)
    else:
        r = outs[0]
        r.pop("lat_us", None)
    pub_lines = [ln for ln in pub_out.splitlines() if ln.startswith("{")]
    if pub_lines:
        r.update(json.loads(pub_lines[-1]))
    return r


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--rate", type=float, default=50.0)
    ap.add_argument("--layer", choices=("rclpy", "rcl", "both"), default="both")
    ap.add_argument("--out")
    ap.add_argument("--kinds", default="64B,Imu,PointCloud2-1MiB,Image-1080p")
    ap.add_argument("--rates", help="e.g. 50,1000: every row at each rate (instead of --rate)")
    ap.add_argument("--sub-procs", help="e.g. 1,8: rows with that many subscriber processes")
    ap.add_argument("--baseline", action="store_true",
                    help="a row of nerve's C API (blocking reader, one copy each way) per rcl row")
    ap.add_argument("--before", metavar="LIB",
                    help="rows of this rmw_nerve_cpp library too (e.g. main's), after each current row")
    ap.add_argument("--no-fastrtps", action="store_true", help="no rmw_fastrtps_cpp rows")
    a = ap.parse_args()
    from nerve_tools.host import record, stamp

    host = {**record(), "load": os.getloadavg()}
    rows = []
    runs = []
    layers = ("rcl", "rclpy") if a.layer == "both" else (a.layer,)
    for kind in a.kinds.split(","):
        for layer in layers:
            if a.sub_procs:
                runs += [(layer, kind, 1, int(n)) for n in a.sub_procs.split(",")]
            elif layer == "rcl":
                runs += [("rcl", kind, subs, 0) for subs in (1, 8)]
            else:
                runs.append(("rclpy", kind, 1, 0))
    rates = [float(x) for x in a.rates.split(",")] if a.rates else [a.rate]
    rcl_p50 = {}  # (kind, rate, subs, procs) -> rcl's p50 on rmw_nerve_cpp
    for rate in rates:
        for layer, kind, subs, procs in runs:
            rmws = ["rmw_nerve_cpp"] + ([BEFORE] if a.before else []) + \
                ([] if a.no_fastrtps else ["rmw_fastrtps_cpp"])
            if a.baseline and layer == "rcl":
                rmws.insert(0, BASELINE)
            base = None
            for rmw in rmws:
                domain = (random.randint(100, 200) if rmw == "rmw_fastrtps_cpp"
                          else random.randint(1000, 60000))
                r = run(layer, rmw, kind, a.count, rate, subs, domain, procs, a.before)
                row = {"bench": "rmw_latency", "layer": layer, "rmw": rmw, "msg": kind,
                       "subs": procs * subs if procs else subs, "sub_procs": max(procs, 1),
                       "rate_hz": rate, "load": os.getloadavg(), **r,
                       "host": host, "time": stamp()}
                if rmw == BASELINE:
                    base = row
                elif base and base.get("p50_us") and base.get("p99_us"):
                    row["p50_x_baseline"] = round(row["p50_us"] / base["p50_us"], 2)
                    row["p99_x_baseline"] = round(row["p99_us"] / base["p99_us"], 2)
                key = (kind, rate, subs, procs)
                if rmw == "rmw_nerve_cpp" and row.get("p50_us") is not None:
                    if layer == "rcl":
                        rcl_p50[key] = row["p50_us"]
                    elif key in rcl_p50:
                        row["rclpy_own_p50_us"] = round(row["p50_us"] - rcl_p50[key], 1)
                print(json.dumps(row), flush=True)
                rows.append(row)
                if rmw != "rmw_fastrtps_cpp":
                    drop_domain(domain)
    if a.out:
        write_rows(a.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
