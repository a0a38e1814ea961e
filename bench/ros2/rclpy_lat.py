"""One-way latency between two rclpy nodes (bench/ros2/run.py): what a ROS 2
user runs today (rclpy on rmw_fastrtps_cpp). The publisher stamps each
message (header.stamp = CLOCK_REALTIME at publish); the subscriber prints
p50/p99/max of (reception time - stamp) as one JSON line.

    rclpy_lat.py pub KIND N HZ
    rclpy_lat.py sub KIND N
"""

from __future__ import annotations

import json
import resource
import sys
import time

import numpy as np
import rclpy
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Imu, PointCloud2

TOPIC = "/nerve_bench_lat"


def main() -> int:
    mode, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cls = Imu if kind == "Imu" else PointCloud2
    rclpy.init()
    node = rclpy.create_node(f"lat_{mode}")
    qos = QoSProfile(depth=10)
    if mode == "pub":
        hz = float(sys.argv[4])
        pub = node.create_publisher(cls, TOPIC, qos)
        end = time.monotonic() + 20
        while pub.get_subscription_count() == 0 and time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.05)
        m = cls()
        if kind != "Imu":
            m.height, m.width, m.point_step, m.row_step = 1, 65536, 16, 16 << 16
            m.data = bytes(16 << 16)
        for _ in range(n):
            t = time.time_ns()
            m.header.stamp.sec, m.header.stamp.nanosec = t // 10**9, t % 10**9
            pub.publish(m)
            time.sleep(1.0 / hz)
        time.sleep(0.5)
    else:
        lat = []

        def cb(m) -> None:
            now = time.time_ns()
            lat.append(now - (m.header.stamp.sec * 10**9 + m.header.stamp.nanosec))

        node.create_subscription(cls, TOPIC, cb, qos)
        print("READY", flush=True)
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        end = time.monotonic() + 60
        while len(lat) < n and time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.1)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        a = np.sort(np.array(lat, dtype=np.int64)) if lat else np.zeros(0)
        out = {"n": len(lat), "want": n,
               "cpu_s": round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 3)}
        if len(a):
            out.update(p50_us=a[len(a) // 2] / 1e3, p99_us=a[len(a) * 99 // 100] / 1e3,
                       max_us=a[-1] / 1e3)
        print(json.dumps(out), flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
