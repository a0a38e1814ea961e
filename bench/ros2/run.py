"""The ROS 2 latency table (issue 24): one-way latency of Imu (324 B),
LaserScan (8 KiB), PointCloud2 (1 MiB) and 1080p RGB Image (6.2 MB) sized
messages, side by side in one run:

- nerve: a nerve writer and a nerve reader (zero-copy view), blocking and
  busy polling;
- Cyclone DDS over UDP, Fast DDS 2.9 over UDP: a DDS writer and reader
  of one library (ROS 2 names and QoS);
- bridged: a nerve writer -> `nerve ros2` -> the same DDS readers;
- rclpy: two rclpy nodes of ROS 2 Jazzy on rmw_fastrtps_cpp (Fast DDS
  2.14 over UDP; shared memory off, as for the tests), Imu and cloud only.

Both libraries get their advice for large data: Fast DDS 4 MiB socket
buffers, Cyclone DDS 4 MiB socket buffers and an 8 MiB writer history
cache high watermark.

All DDS traffic on 127.0.0.1 (the configurations of tests/ros2/conftest.py).

    .venv/bin/python bench/ros2/run.py [--build build] [--out FILE]

Prints a Markdown table and writes it to --out with the host described
and this command. Needs `make build tools-install ros2-venvs`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "ros2"))

from conftest import CYCLONE_XML, FASTDDS_XML, FILTERS  # noqa: E402

# (label, message bytes, messages, rate Hz, ROS 2 type)
CASES = [("Imu", 324, 500, 100, "sensor_msgs/msg/Imu"),
         ("LaserScan 8 KiB", 8192, 500, 100, "sensor_msgs/msg/LaserScan"),
         ("PointCloud2 1 MiB", 1 << 20, 100, 20, "sensor_msgs/msg/PointCloud2"),
         ("Image 1080p RGB", 1920 * 1080 * 3 + 64, 40, 5, "sensor_msgs/msg/Image")]


def run(cmd, env, timeout=120):
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def result(p, timeout=120) -> dict:
    out, _ = p.communicate(timeout=timeout)
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"{p.args}: no result:\n{out}")


def wait_ready(p) -> None:
    line = p.stdout.readline()
    if "READY" not in line:
        raise RuntimeError(f"{p.args}: {line}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" /
                                         f"ros2-latency-{platform.node()}.md"))
    a = ap.parse_args()
    lat = Path(a.build) / "bench" / "ros2" / "ros2_lat"
    flat = Path(a.build) / "bench" / "ros2" / "fastdds_lat"
    tmp = Path(tempfile.mkdtemp(prefix="nerve-ros2-bench-"))
    # Cyclone DDS's advice for large samples: socket buffers and a writer
    # history cache (high watermark) larger than a sample.
    (tmp / "cyclone.xml").write_text(CYCLONE_XML.replace(
        "</Discovery>", "</Discovery><Internal><SocketReceiveBufferSize min=\"4MB\"/>"
        "<SocketSendBufferSize min=\"4MB\"/><Watermarks><WhcHigh>8MB</WhcHigh></Watermarks>"
        "</Internal>"))
    # Fast DDS's advice for large data: socket buffers larger than a burst
    # (its default is the OS's, 208 KiB here: a Cyclone writer's 1 MiB
    # samples then reached a Fast DDS reader 21 times out of 100 in 60 s).
    big = ("<receiveBufferSize>4194304</receiveBufferSize>"
           "<sendBufferSize>4194304</sendBufferSize>")
    (tmp / "fastdds.xml").write_text(FASTDDS_XML.format(filter=FILTERS["jazzy"] + big))
    env = dict(os.environ, ROS_DOMAIN_ID=str(150 + os.getpid() % 50),
               CYCLONEDDS_URI=f"file://{tmp / 'cyclone.xml'}",
               FASTRTPS_DEFAULT_PROFILES_FILE=str(tmp / "fastdds.xml"),
               RMW_IMPLEMENTATION="rmw_fastrtps_cpp", ROS_LOG_DIR=str(tmp / "log"),
               PATH=f"{Path(a.build) / 'tools'}:{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}")
    import nerve

    rows = []
    for label, size, n, hz, rtype in CASES:
        chan = f"nerve-bench-ros2-{os.getpid()}"
        kind = rtype.rsplit("/", 1)[1]
        dtype = f"sensor_msgs::msg::dds_::{kind}_"
        nerve.create(chan, slots=64, size=max(2 << 20, 8 * size),
                     type=rtype, encoding="cdr").close()
        try:
            row = {"case": label, "n": n, "hz": hz}
            # nerve alone
            s = run([str(lat), "nervesub", chan, str(n)], env)
            wait_ready(s)
            p = run([str(lat), "nervepub", chan, str(size), str(n), str(hz)], env)
            row["nerve"] = result(s)
            p.wait(30)
            s = run([str(lat), "nervesub", chan, str(n), "poll"], env)
            wait_ready(s)
            p = run([str(lat), "nervepub", chan, str(size), str(n), str(hz)], env)
            row["poll"] = result(s)
            p.wait(30)
            # Cyclone DDS over UDP
            s = run([str(lat), "sub", "/nerve_bench_direct", dtype, str(n)], env)
            wait_ready(s)
            p = run([str(lat), "ddspub", "/nerve_bench_direct", dtype, str(size), str(n), str(hz)], env)
            row["cyclone"] = result(s)
            p.wait(30)
            # Fast DDS over UDP
            s = run([str(flat), "sub", "/nerve_bench_fdirect", dtype, str(n)], env)
            wait_ready(s)
            p = run([str(flat), "pub", "/nerve_bench_fdirect", dtype, str(size), str(n), str(hz)], env)
            row["fastdds"] = result(s)
            p.wait(30)
            # nerve writer -> nerve ros2 -> the Cyclone reader, then the Fast
            # DDS reader
            br = run([shutil.which("nerve-ros2", path=env["PATH"]), f"--to-ros={chan}:/nerve_bench_bridged"],
                     env)
            time.sleep(1.5)
            for key, prog in (("bridged", lat), ("fbridged", flat)):
                s = run([str(prog), "sub", "/nerve_bench_bridged", dtype, str(n)], env)
                wait_ready(s)
                p = run([str(lat), "nervepub", chan, str(size), str(n), str(hz)], env)
                row[key] = result(s)
                p.wait(30)
            br.terminate()
            br.wait(15)
            # rclpy on rmw_fastrtps_cpp (Imu and the cloud: rclpy_lat.py
            # builds those two)
            if kind not in ("Imu", "PointCloud2"):
                rows.append(row)
                print(json.dumps(row), flush=True)
                continue
            py = str(ROOT / ".venv-jazzy" / "bin" / "python")
            script = str(ROOT / "bench" / "ros2" / "rclpy_lat.py")
            s = run([py, script, "sub", kind, str(n)], env)
            wait_ready(s)
            p = run([py, script, "pub", kind, str(n), str(hz)], env)
            row["rclpy"] = result(s)
            p.wait(60)
        finally:
            nerve.unlink(chan)
        rows.append(row)
        print(json.dumps(row), flush=True)

    cols = [("nerve", "nerve (blocking, zero-copy)"), ("poll", "nerve (busy poll, zero-copy)"),
            ("cyclone", "Cyclone DDS UDP"),
            ("fastdds", "Fast DDS 2.9 UDP"), ("bridged", "nerve -> nerve ros2 -> Cyclone reader"),
            ("fbridged", "nerve -> nerve ros2 -> Fast DDS reader"),
            ("rclpy", "rclpy / rmw_fastrtps (Fast DDS 2.14 UDP)")]
    lines = ["| message | path | n | p50 µs | p99 µs | max µs | CPU s (reader) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        for key, name in cols:
            if key not in r:
                continue
            v = r[key]
            lines.append(f"| {r['case']} | {name} | {v['n']}/{v['want']} | {v.get('p50_us', 0):.1f} | "
                         f"{v.get('p99_us', 0):.1f} | {v.get('max_us', 0):.1f} | {v['cpu_s']:.2f} |")
        for direct, bridged, name in (("cyclone", "bridged", "Cyclone"), ("fastdds", "fbridged", "Fast DDS")):
            d, b = r[direct].get("p50_us"), r[bridged].get("p50_us")
            if d and b:
                lines.append(f"| {r['case']} | bridged / direct p50, {name} reader | | {b / d:.2f} | | | |")
    table = "\n".join(lines)
    print(table)
    host = (f"{platform.node()}: {os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
            f"Linux {platform.release()}")
    Path(a.out).write_text(
        "# ROS 2 latency: nerve, Cyclone DDS, nerve ros2, rclpy\n\n"
        f"Host: {host}; not pinned, not quiet (other work ran on it).\n"
        "DDS on 127.0.0.1 over UDP; 4 MiB socket buffers for both libraries, Cyclone's "
        "WhcHigh 8 MiB.\n"
        "Command: `.venv/bin/python bench/ros2/run.py` (messages and rates: "
        + ", ".join(f"{c[0]} {c[2]} at {c[3]} Hz" for c in CASES)
        + "; one-way = reception - origin time, same host).\n\n"
        f"{table}\n")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
