"""How close to zero-copy a 1 MiB PointCloud2 and a 1080p Image get over
rmw_nerve_cpp (and rmw_fastrtps_cpp, for reference), through rcl in C
(bench/rmw/rcl_copies.c, built as build/rmw_nerve/rcl_copies) and through
rclpy (the Jazzy wheels'). Each side's time per message is set against a
copy of the same size measured in the same process and run.

    python bench/rmw/rmw_copies.py [--count N] [--out FILE]

Run with the project venv's Python (it imports nerve to remove the
channels it made); it starts the programs with the Jazzy wheels' Python
(NERVE_ROS2_PYTHON, default .venv-jazzy/bin/python), on rmw_nerve through
nerve-ros2-exec (NERVE_RMW_LIB, default build/rmw_nerve/librmw_nerve_cpp.so).
One process per row: a publisher and a subscription on one topic; per
message the publish, then the take once the message is there (the wait for
it is not timed). rclpy's take is the call its executor makes
(Subscription.handle.take_message). Prints and writes JSON lines."""

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
PROG = os.environ.get("NERVE_RCL_COPIES", str(ROOT / "build/rmw_nerve/rcl_copies"))
RCL_SO = str(Path(PY).parent.parent / "lib" / "librcl.so")

NODE = r'''
import json, sys, time
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image, PointCloud2
kind, count = sys.argv[1], int(sys.argv[2])
rclpy.init()
n = Node("py_copies")
if kind == "Image-1080p":
    T, size = Image, 1920 * 1080 * 3
    m = Image(height=1080, width=1920, step=5760, encoding="rgb8")
else:
    T, size = PointCloud2, 1 << 20
    m = PointCloud2(height=1, width=65536, point_step=16, row_step=16 * 65536)
m.data = bytes(i * 7 & 255 for i in range(256)) * (size // 256)
pub = n.create_publisher(T, "/copies", 10)
sub = n.create_subscription(T, "/copies", lambda _: None, 10)
end = time.monotonic() + 10
while n.count_subscribers("/copies") < 1 and time.monotonic() < end:
    time.sleep(0.02)
time.sleep(0.5)
cols = {"publish": [], "take": [], "bytes_copy": []}
lost = 0
for i in range(count + 5):
    m.data[0] = i & 255
    t0 = time.perf_counter_ns()
    pub.publish(m)
    t1 = time.perf_counter_ns()
    got, took, end = None, 0, time.monotonic() + 5
    while time.monotonic() < end:
        t2 = time.perf_counter_ns()
        got = sub.handle.take_message(sub.msg_type, sub.raw)
        took = time.perf_counter_ns() - t2
        if got is not None:
            break
        time.sleep(0.0005)
    if got is None:
        lost += 1
        continue
    msg = got[0]
    assert len(msg.data) == size and msg.data[0] == i & 255 and msg.data[-1] == m.data[-1]
    t4 = time.perf_counter_ns()
    c = bytes(memoryview(m.data))  # one allocation + one copy of the array
    t5 = time.perf_counter_ns()
    del c
    if i >= 5:
        cols["publish"].append(t1 - t0)
        cols["take"].append(took)
        cols["bytes_copy"].append(t5 - t4)
from rclpy.utilities import get_rmw_implementation_identifier
out = {"rmw": get_rmw_implementation_identifier(), "msg": kind,
       "n": len(cols["publish"]), "not_arrived": lost}
for k, v in cols.items():
    v.sort()
    out[k + "_p50_us"] = round(v[len(v) // 2] / 1000.0, 1)
    out[k + "_p99_us"] = round(v[int(0.99 * (len(v) - 1))] / 1000.0, 1)
print(json.dumps(out), flush=True)
rclpy.shutdown()
'''


def run(layer: str, rmw: str, kind: str, count: int, domain: int) -> dict:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               PYTHONUNBUFFERED="1")
    pre = []
    if rmw == "rmw_nerve_cpp":
        pre = [sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB, "--rcl", RCL_SO, "--"]
    else:
        env["RMW_IMPLEMENTATION"] = rmw
    cmd = [PROG, kind, str(count)] if layer == "rcl" else [PY, "-c", NODE, kind, str(count)]
    p = subprocess.run([*pre, *cmd], env=env, capture_output=True, text=True, timeout=600)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        raise SystemExit(f"{layer} {rmw} {kind}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return json.loads(lines[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--out")
    a = ap.parse_args()
    from nerve_tools.host import record, stamp

    host = record()
    rows = []
    for layer in ("rcl", "rclpy"):
        for kind in ("PointCloud2-1MiB", "Image-1080p"):
            for rmw in ("rmw_nerve_cpp", "rmw_fastrtps_cpp"):
                domain = (random.randint(1000, 60000) if rmw == "rmw_nerve_cpp"
                          else random.randint(100, 200))
                load = os.getloadavg()
                r = run(layer, rmw, kind, a.count, domain)
                row = {"bench": "rmw_copies", "layer": layer, **r,
                       "host": {**host, "load": load},
                       "time": stamp()}
                print(json.dumps(row), flush=True)
                rows.append(row)
                if rmw == "rmw_nerve_cpp":
                    drop_domain(domain)
    if a.out:
        write_rows(a.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
