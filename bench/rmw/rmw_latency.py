"""One-way latency publisher -> subscriber (two processes) over
rmw_nerve_cpp and over rmw_fastrtps_cpp, in one run on one host, through
rclpy (the Jazzy wheels') and through rcl in C (bench/rmw/rcl_latency.c,
built as build/rmw_nerve/rcl_latency; with 1 and 8 subscriptions, and the
publisher's own cost per rcl_publish).

    python bench/rmw/rmw_latency.py [--layer rclpy|rcl|both] [--count N]
                                      [--rate HZ] [--out FILE]

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

ROOT = Path(__file__).resolve().parents[2]
PY = os.environ.get("NERVE_ROS2_PYTHON", str(ROOT / ".venv-jazzy/bin/python"))
LIB = os.environ.get("NERVE_RMW_LIB", str(ROOT / "build/rmw_nerve/librmw_nerve_cpp.so"))
RCL = os.environ.get("NERVE_RCL_LATENCY", str(ROOT / "build/rmw_nerve/rcl_latency"))
RCL_SO = str(Path(PY).parent.parent / "lib" / "librcl.so")

NODE = r'''
import json, sys, time
import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile
role, kind, count, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
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
    while len(lat) < count and time.monotonic() < end:
        rclpy.spin_once(n, timeout_sec=0.1)
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] / 1000.0 if lat else None
    print(json.dumps({"n": len(lat), "p50_us": q(0.5), "p99_us": q(0.99),
                      "max_us": lat[-1] / 1000.0 if lat else None}), flush=True)
else:
    p = n.create_publisher(T, "/lat", qos)
    end = time.monotonic() + 30
    while n.count_subscribers("/lat") < 1 and time.monotonic() < end:
        rclpy.spin_once(n, timeout_sec=0.05)
    time.sleep(1.0)  # let DDS finish matching
    m = make()
    for i in range(count + 20):
        stamp(m, time.monotonic_ns())
        p.publish(m)
        time.sleep(1.0 / rate)
rclpy.shutdown()
'''


def run(layer: str, rmw: str, kind: str, count: int, rate: float, subs: int,
        domain: int) -> dict:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               PYTHONUNBUFFERED="1")
    pre = []
    if rmw == "rmw_nerve_cpp":
        pre = [sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB, "--rcl", RCL_SO, "--"]
    else:
        env["RMW_IMPLEMENTATION"] = rmw
    if layer == "rclpy":
        sub_cmd = [PY, "-c", NODE, "sub", kind, str(count), str(rate)]
        pub_cmd = [PY, "-c", NODE, "pub", kind, str(count), str(rate)]
    else:
        sub_cmd = [RCL, "sub", kind, str(count), str(subs)]
        pub_cmd = [RCL, "pub", kind, str(count), str(rate), str(subs)]
    sub = subprocess.Popen([*pre, *sub_cmd], env=env, stdout=subprocess.PIPE, text=True)
    assert sub.stdout.readline().strip() == "ready"
    pub = subprocess.Popen([*pre, *pub_cmd], env=env, stdout=subprocess.PIPE, text=True)
    out = sub.communicate(timeout=300)[0]
    pub_out = pub.communicate(timeout=120)[0]
    r = json.loads(out.strip().splitlines()[-1])
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
    a = ap.parse_args()
    from nerve_tools.host import record, stamp

    host = {**record(), "load": os.getloadavg()}
    rows = []
    runs = []
    for kind in ("64B", "Imu", "PointCloud2-1MiB", "Image-1080p"):
        if a.layer in ("rcl", "both"):
            runs += [("rcl", kind, subs) for subs in (1, 8)]
        if a.layer in ("rclpy", "both"):
            runs.append(("rclpy", kind, 1))
    for layer, kind, subs in runs:
        for rmw in ("rmw_nerve_cpp", "rmw_fastrtps_cpp"):
            domain = random.randint(100, 200) if rmw != "rmw_nerve_cpp" else random.randint(1000, 60000)
            r = run(layer, rmw, kind, a.count, a.rate, subs, domain)
            row = {"bench": "rmw_latency", "layer": layer, "rmw": rmw, "msg": kind, "subs": subs,
                   "rate_hz": a.rate, **r,
                   "host": host, "time": stamp()}
            print(json.dumps(row), flush=True)
            rows.append(row)
            if rmw == "rmw_nerve_cpp":
                import nerve
                for info in nerve.list_channels():
                    if info.name.startswith(f"ros2-d{domain}.") or info.name == f"ros2-graph-d{domain}":
                        nerve.unlink(info.name)
    if a.out:
        with open(a.out, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
