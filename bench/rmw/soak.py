"""make soak-rmw: 20 rclpy nodes on rmw_nerve for a while (10 minutes by
default, --minutes for less), restarted at random, half of the ends by
kill -9, publishing messages of varying size (within the ring) and calling
a parameter service. Every 30 s it prints the domain's /dev/shm bytes and
each node's RSS, descriptors and threads; at the end a flat/not-flat
verdict. Run with the project venv's Python; NERVE_RMW_LIB and
NERVE_ROS2_PYTHON as for make test-rmw."""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

NODE = r'''
import os, random, sys, time
import rclpy
from rclpy.node import Node
from rcl_interfaces.srv import ListParameters
from std_msgs.msg import String
rclpy.init()
n = Node(f"soak_{os.getpid()}")
pub = n.create_publisher(String, "soak", 10)
got = [0]
n.create_subscription(String, "soak", lambda m: got.__setitem__(0, got[0] + 1), 10)
cli = n.create_client(ListParameters, f"/{n.get_name()}/list_parameters")
rng = random.Random(os.getpid())
end = time.monotonic() + 3600
while time.monotonic() < end:
    # sizes vary from 10 B to 24 KiB, within the 64 KiB ring
    pub.publish(String(data="x" * rng.randint(10, 24 << 10)))
    if cli.service_is_ready():
        cli.call_async(ListParameters.Request())
    rclpy.spin_once(n, timeout_sec=0.05)
'''


def proc_stat(pid: int) -> tuple[int, int, int] | None:
    """(RSS kB, fds, threads) of pid, None once it is gone."""
    try:
        rss = thr = 0
        for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
            if ln.startswith("VmRSS:"):
                rss = int(ln.split()[1])
            elif ln.startswith("Threads:"):
                thr = int(ln.split()[1])
        return rss, len(os.listdir(f"/proc/{pid}/fd")), thr
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def shm_bytes(domain: int) -> tuple[int, int]:
    """(bytes, files) of the domain's files in /dev/shm."""
    total = files = 0
    for f in os.listdir("/dev/shm"):
        if f"ros2-d{domain}." in f or f"ros2-graph-d{domain}." in f:
            try:
                total += os.stat(f"/dev/shm/{f}").st_blocks * 512
                files += 1
            except FileNotFoundError:
                pass
    return total, files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--every", type=float, default=30.0, help="report interval, s")
    a = ap.parse_args()
    lib, py = os.environ["NERVE_RMW_LIB"], os.environ["NERVE_ROS2_PYTHON"]
    domain = random.randint(1000, 60000)
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    cmd = [sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", lib, "--", py, "-c", NODE]

    def start() -> subprocess.Popen:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)

    print(f"soak-rmw: {a.nodes} nodes, {a.minutes} min, domain {domain}, "
          f"nproc {os.cpu_count()}, kernel {os.uname().release}", flush=True)
    nodes = [start() for _ in range(a.nodes)]
    rng = random.Random(1)
    t0 = time.monotonic()
    end = t0 + a.minutes * 60
    next_report = t0 + a.every
    samples = []
    restarts = kills = 0
    while time.monotonic() < end:
        time.sleep(rng.uniform(0.5, 2.0))
        i = rng.randrange(len(nodes))
        if rng.random() < 0.5:
            nodes[i].kill()
            kills += 1
        else:
            nodes[i].send_signal(signal.SIGINT)
        try:
            nodes[i].wait(timeout=30)
        except subprocess.TimeoutExpired:
            nodes[i].kill()
            nodes[i].wait()
        nodes[i] = start()
        restarts += 1
        if time.monotonic() >= next_report:
            next_report += a.every
            stats = [s for s in (proc_stat(p.pid) for p in nodes) if s]
            b, f = shm_bytes(domain)
            rss = [s[0] for s in stats]
            # nodes still starting (one thread: Python loading) not averaged
            up = [s[0] for s in stats if s[2] > 1]
            samples.append((b, sum(up) / max(len(up), 1)))
            print(f"t={time.monotonic() - t0:6.0f}s shm={b} B in {f} files "
                  f"restarts={restarts} kill9={kills} "
                  f"rss_kB={rss} fds={[s[1] for s in stats]} "
                  f"threads={[s[2] for s in stats]}", flush=True)
    for p in nodes:
        p.kill()
        p.wait()
    # Flat: the last sample within 25% (plus 1 MiB) of the first, for the
    # domain's /dev/shm bytes and the mean RSS of a node.
    if len(samples) < 2:
        print("verdict: too short to judge (fewer than two samples)")
        return 1
    (b0, r0), (b1, r1) = samples[0], samples[-1]
    flat = b1 <= b0 * 1.25 + (1 << 20) and r1 <= r0 * 1.25 + 1024
    print(f"verdict: {'flat' if flat else 'NOT flat'} (shm {b0} -> {b1} B, "
          f"mean node RSS {r0:.0f} -> {r1:.0f} kB)")
    for f in os.listdir("/dev/shm"):
        if f"ros2-d{domain}." in f or f"ros2-graph-d{domain}." in f:
            try:
                os.unlink(f"/dev/shm/{f}")
            except FileNotFoundError:
                pass
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
