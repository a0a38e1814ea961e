"""A real ROS 2 node for the nerve ros2 tests (run by the Jazzy or Kilted
rclpy of .venv-jazzy / .venv-kilted, RMW_IMPLEMENTATION=rmw_fastrtps_cpp).

    rclpy_peer.py serialize DIR KIND N     serialize_message of message i (0..N-1)
                                           into DIR/<i>.cdr
    rclpy_peer.py check DIR KIND           deserialize DIR/<i>.cdr, compare with
                                           message i; write DIR/<i>.ref (rclpy's bytes)
    rclpy_peer.py sub SPEC... --want N     subscribe; print READY once every
                                           subscription is matched, then what
                                           arrived (and the graph) as JSON
    rclpy_peer.py pub SPEC... --count N    publish N messages per topic once each
                                           is matched (READY) and, with
                                           NERVE_PEER_GO=FILE, FILE exists;
                                           then the graph as JSON

SPEC is TOPIC:KIND[:QOS] with KIND String, Imu or PointCloud2 and QOS
reliable (default), best_effort or latched. Message i of each kind is a
fixed function of i (make()); a received message is compared field by
field with the one its index names. Every wait is bounded by --timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import rclpy
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Imu, PointCloud2, PointField
from std_msgs.msg import String

TYPES = {"String": String, "Imu": Imu, "PointCloud2": PointCloud2, "Growing": String}
CLOUD_POINTS = 65536  # 16-byte points: 1 MiB of data


def make(kind: str, i: int):
    if kind == "Growing":  # 10 B, then over 1 MiB: the channel must grow
        return String(data=f"hello {i} " + "!" * (i and 1_100_000 + 100_000 * i))
    if kind == "String":
        m = String()
        m.data = f"hello {i}" + "!" * (i % 4)  # lengths that need padding and not
        return m
    if kind == "Imu":
        m = Imu()
        m.header.stamp.sec = i
        m.header.stamp.nanosec = 1000 + i
        m.header.frame_id = "imu" + "_" * (i % 3)
        m.orientation.w = 1.0
        m.orientation.x = 0.25 * i
        m.angular_velocity.x = 0.5 * i
        m.linear_acceleration.z = 9.81
        m.orientation_covariance = [float(i + k) for k in range(9)]
        m.angular_velocity_covariance = [0.1 * k for k in range(9)]
        m.linear_acceleration_covariance = [-1.0] * 9
        return m
    m = PointCloud2()
    m.header.stamp.sec = i
    m.header.frame_id = "lidar"
    m.height = 1
    m.width = CLOUD_POINTS
    m.fields = [PointField(name=n, offset=4 * k, datatype=PointField.FLOAT32, count=1)
                for k, n in enumerate(("x", "y", "z", "intensity"))]
    m.is_bigendian = False
    m.point_step = 16
    m.row_step = 16 * CLOUD_POINTS
    m.data = ((np.arange(16 * CLOUD_POINTS, dtype=np.uint32) + i) % 251).astype(np.uint8).tobytes()
    m.is_dense = True
    return m


def index_of(kind: str, m) -> int:
    if kind in ("String", "Growing"):
        return int(m.data.split()[1].rstrip("!"))
    return int(m.header.stamp.sec)


def qos_of(name: str) -> QoSProfile:
    q = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10)
    q.reliability = ReliabilityPolicy.BEST_EFFORT if name == "best_effort" else ReliabilityPolicy.RELIABLE
    q.durability = DurabilityPolicy.TRANSIENT_LOCAL if name == "latched" else DurabilityPolicy.VOLATILE
    return q


def parse_spec(spec: str):
    parts = spec.split(":")
    return parts[0], parts[1], parts[2] if len(parts) > 2 else "reliable"


def cmd_serialize(a) -> int:
    os.makedirs(a.dir, exist_ok=True)
    for i in range(a.n):
        with open(os.path.join(a.dir, f"{i}.cdr"), "wb") as f:
            f.write(serialize_message(make(a.kind, i)))
    print(json.dumps({"written": a.n}), flush=True)
    return 0


def cmd_check(a) -> int:
    out = {"checked": 0, "bad": []}
    for name in sorted(os.listdir(a.dir)):
        if not name.endswith(".cdr"):
            continue
        with open(os.path.join(a.dir, name), "rb") as f:
            data = f.read()
        m = deserialize_message(data, TYPES[a.kind])
        i = index_of(a.kind, m)
        if m != make(a.kind, i):
            out["bad"].append(name)
        with open(os.path.join(a.dir, name[:-4] + ".ref"), "wb") as f:
            f.write(serialize_message(make(a.kind, i)))
        out["checked"] += 1
    print(json.dumps(out), flush=True)
    return 0


def graph(node, topics) -> dict:
    g = {"nodes": sorted(f"{ns.rstrip('/')}/{n}" for n, ns in node.get_node_names_and_namespaces()),
         "topics": {t: types for t, types in node.get_topic_names_and_types()}, "endpoints": {}}
    for t in topics:
        pubs = node.get_publishers_info_by_topic(t)
        subs = node.get_subscriptions_info_by_topic(t)

        def info(e):
            d = {"node": e.node_name, "type": e.topic_type,
                 "reliability": e.qos_profile.reliability.name,
                 "durability": e.qos_profile.durability.name}
            h = getattr(e, "topic_type_hash", None)
            d["hash"] = str(h) if h is not None else None
            return d

        g["endpoints"][t] = {"count_publishers": node.count_publishers(t),
                             "count_subscribers": node.count_subscribers(t),
                             "publishers": [info(e) for e in pubs],
                             "subscriptions": [info(e) for e in subs]}
    return g


def cmd_sub(a) -> int:
    rclpy.init()
    node = rclpy.create_node(a.node)
    got: dict = {}
    subs = []
    for spec in a.specs:
        topic, kind, q = parse_spec(spec)
        got[topic] = {"n": 0, "bad": 0, "idx": []}

        def cb(m, topic=topic, kind=kind):
            i = index_of(kind, m)
            r = got[topic]
            r["n"] += 1
            r["idx"].append(i)
            if m != make(kind, i):
                r["bad"] += 1

        subs.append(node.create_subscription(TYPES[kind], topic, cb, qos_of(q)))
    end = time.monotonic() + a.timeout
    while time.monotonic() < end and not all(s.get_publisher_count() > 0 for s in subs):
        rclpy.spin_once(node, timeout_sec=0.05)
    print("READY" if all(s.get_publisher_count() > 0 for s in subs) else "UNMATCHED", flush=True)
    while time.monotonic() < end and not all(r["n"] >= a.want for r in got.values()):
        rclpy.spin_once(node, timeout_sec=0.05)
    g = graph(node, a.graph_topics) if a.graph_topics else {}
    print(json.dumps({"got": got, "graph": g}), flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0


def cmd_pub(a) -> int:
    rclpy.init()
    node = rclpy.create_node(a.node)
    pubs = []
    for spec in a.specs:
        topic, kind, q = parse_spec(spec)
        pubs.append((node.create_publisher(TYPES[kind], topic, qos_of(q)), kind))
    end = time.monotonic() + a.timeout
    while a.count and time.monotonic() < end and not all(p.get_subscription_count() >= a.subs
                                                         for p, _ in pubs):
        rclpy.spin_once(node, timeout_sec=0.05)
    matched = all(p.get_subscription_count() >= a.subs for p, _ in pubs)
    if a.count:
        print("READY" if matched else "UNMATCHED", flush=True)
    # NERVE_PEER_GO=FILE: wait for FILE, which the test creates once the
    # bridge's readers have matched these writers too (what is published
    # before that is lost for a volatile reader).
    go = os.environ.get("NERVE_PEER_GO")
    while a.count and go and not os.path.exists(go):
        if time.monotonic() >= end:
            print(f"{go} never appeared", file=sys.stderr, flush=True)
            matched = False
            break
        rclpy.spin_once(node, timeout_sec=0.02)
    for i in range(a.start, a.start + a.count):
        for p, kind in pubs:
            p.publish(make(kind, i))
        rclpy.spin_once(node, timeout_sec=a.period)
    # Let reliable samples be acknowledged, then look at the graph.
    settle = time.monotonic() + 1.0
    while time.monotonic() < settle:
        rclpy.spin_once(node, timeout_sec=0.05)
    g: dict = {}
    want = set(a.graph_topics)
    while time.monotonic() < end:
        g = graph(node, a.graph_topics or [])
        if f"/{a.bridge_node}" in g["nodes"] and want <= set(g["topics"]):
            break
        rclpy.spin_once(node, timeout_sec=0.2)
    print(json.dumps({"matched": matched, "graph": g}), flush=True)
    if a.linger:
        end = time.monotonic() + a.linger
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.1)
    node.destroy_node()
    rclpy.shutdown()
    return 0


def main() -> int:
    p = argparse.ArgumentParser()
    sp = p.add_subparsers(dest="cmd", required=True)
    s = sp.add_parser("serialize")
    s.add_argument("dir")
    s.add_argument("kind")
    s.add_argument("n", type=int)
    s = sp.add_parser("check")
    s.add_argument("dir")
    s.add_argument("kind")
    for name in ("sub", "pub"):
        s = sp.add_parser(name)
        s.add_argument("specs", nargs="+")
        s.add_argument("--node", default=f"probe_{name}")
        s.add_argument("--timeout", type=float, default=60.0)
        s.add_argument("--want", type=int, default=1)
        s.add_argument("--count", type=int, default=5)
        s.add_argument("--start", type=int, default=0)
        s.add_argument("--subs", type=int, default=1, help="pub: subscriptions to wait for")
        s.add_argument("--period", type=float, default=0.05)
        s.add_argument("--graph-topics", nargs="*", default=[])
        s.add_argument("--bridge-node", default="nerve_ros2")
        s.add_argument("--linger", type=float, default=0.0)
    a = p.parse_args()
    return {"serialize": cmd_serialize, "check": cmd_check, "sub": cmd_sub, "pub": cmd_pub}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
