"""nerve's ROS 2 message types (issue 25) through nerve ros2 (issue 24):
typed_peer, a C++ program on nerve::Publisher / nerve::Reader of the
generated sensor_msgs/msg/Imu and PointCloud2 (PointCloud2View for the
zero-copy side), against the DDS peers of test_ros2_peers.py in both
directions, and nerve_tools.ros2.types against an rclpy subscriber.

Every message is rclpy_peer.make(kind, i), which typed_peer and
cyclone_peer build too; every receiver compares every field with it:
cyclone_peer and typed_peer in C/C++, rclpy (deserializing what
fastdds_peer received) in Python."""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_ros2_peers import DDS_TYPES
from test_ros2_rclpy import KINDS, N, cdr_layout, equal_but_padding

from conftest import Ros2Env, need_distro, peer_path, to_ros_matched, topic

TYPED = ("Imu", "PointCloud2")


def typed(r2: Ros2Env, *args: str):
    return r2.spawn([peer_path("typed_peer"), *args])


def test_cxx_types_to_dds_peers(r2: Ros2Env, name) -> None:
    """Publisher<Imu> and Publisher<PointCloud2View> -> nerve ros2 ->
    a Cyclone DDS and a Fast DDS subscriber on each topic."""
    need_distro("jazzy")
    peer_path("cyclone_peer")
    peer_path("fastdds_peer")
    chans = {k: name(k.lower()) for k in TYPED}
    for kind, c in chans.items():
        assert typed(r2, "create", kind, c).wait(30) == 0
    br = r2.bridge_to_ros(chans.values())
    cyc, fdds = {}, {}
    for kind, c in chans.items():
        cyc[kind] = r2.peer("cyclone", "sub", kind, topic(c), str(N))
        d = r2.tmp / f"got-{kind}"
        d.mkdir()
        fdds[kind] = r2.peer("fastdds", "sub", topic(c), DDS_TYPES[kind], str(d), str(N))
    for p in [*cyc.values(), *fdds.values()]:
        p.wait_line("^READY$", 120)
    # Each writer of the bridge matched both subscribers: none misses one.
    to_ros_matched(br, chans.values(), 2)
    for p in [typed(r2, "pub", kind, c, str(N)) for kind, c in chans.items()]:
        assert p.json(120) == {"published": N}, p.output
    for kind in chans:
        res = cyc[kind].json(150)
        assert res == {"n": N, "bad": 0, "idx": list(range(N))}, (kind, res)
        assert fdds[kind].json(150) == {"n": N}, kind
        d = r2.tmp / f"got-{kind}"
        # rclpy deserializes each sample and compares it with make(i); it
        # writes its own serialization of make(i) beside it as <i>.ref.
        assert r2.rclpy_run("jazzy", "check", str(d), kind) == {"checked": N, "bad": []}
        idx = set()
        for i in range(N):
            got = (d / f"{i}.cdr").read_bytes()
            equal_but_padding(KINDS[kind], got, (d / f"{i}.ref").read_bytes())
            assert not any(got[cdr_layout(KINDS[kind], got)[1]:]), kind  # DDS's zero tail
            idx.add(int.from_bytes(got[4:8], "little", signed=True))  # header.stamp.sec
        assert idx == set(range(N)), (kind, idx)
    assert br.stop() == 0


def test_dds_peers_to_cxx_types(r2: Ros2Env, name) -> None:
    """A Cyclone DDS and a Fast DDS publisher per type -> nerve ros2 ->
    Reader<Imu>, Reader<PointCloud2> and ros2::read_view of a
    PointCloud2View."""
    need_distro("jazzy")
    peer_path("cyclone_peer")
    peer_path("fastdds_peer")
    peer_path("typed_peer")
    chans = {(peer, kind): name(f"{peer[0]}{kind.lower()}")
             for peer in ("cyclone", "fastdds") for kind in TYPED}
    br = r2.bridge(*[f"--from-ros={topic(c)}:{c}" for c in chans.values()])
    pubs = {}
    for (peer, kind), c in chans.items():
        if peer == "cyclone":
            pubs[peer, kind] = r2.peer(peer, "pub", kind, topic(c), str(N), gate=True)
        else:
            d = r2.tmp / f"ser-{kind}"
            r2.rclpy_run("jazzy", "serialize", str(d), kind, str(N))
            pubs[peer, kind] = r2.peer(peer, "pub", topic(c), DDS_TYPES[kind], str(d), str(N),
                                       gate=True)
    r2.open_gate(br, [topic(c) for c in chans.values()])
    for key, p in pubs.items():
        assert p.json(150) == {"written": N, "matched": True}, (key, p.output)
    for (peer, kind), c in chans.items():
        res = typed(r2, "read", kind, c, str(N)).json(120)
        assert res == {"n": N, "bad": 0, "idx": list(range(N))}, (peer, kind, res, br.output)
    assert br.stop() == 0


def test_python_types_to_rclpy(r2: Ros2Env, name) -> None:
    """nerve_tools.ros2.types puts Imu objects -> nerve ros2 -> an rclpy
    (Jazzy) subscriber, which finds each equal to rclpy_peer.make()."""
    need_distro("jazzy")
    ros2 = pytest.importorskip("nerve_tools.ros2.types")
    T = ros2.typestore().types
    c = name("pyimu")
    ch = ros2.create(c, KINDS["Imu"], slots=32, size=1 << 20)
    br = r2.bridge(f"--to-ros={c}")
    br.wait_line(f"to-ros {c} -> ")
    sub = r2.rclpy("jazzy", "sub", f"{topic(c)}:Imu", "--want", str(N), "--timeout", "120")
    sub.wait_line("^READY$", 120)
    to_ros_matched(br, [c])
    for i in range(N):
        ch.put(T[KINDS["Imu"]](
            header=T["std_msgs/msg/Header"](
                stamp=T["builtin_interfaces/msg/Time"](sec=i, nanosec=1000 + i),
                frame_id="imu" + "_" * (i % 3)),
            orientation=T["geometry_msgs/msg/Quaternion"](x=0.25 * i, y=0.0, z=0.0, w=1.0),
            orientation_covariance=np.array([float(i + k) for k in range(9)]),
            angular_velocity=T["geometry_msgs/msg/Vector3"](x=0.5 * i, y=0.0, z=0.0),
            angular_velocity_covariance=np.array([0.1 * k for k in range(9)]),
            linear_acceleration=T["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=9.81),
            linear_acceleration_covariance=np.full(9, -1.0)))
        time.sleep(0.05)
    ch.close()
    got = sub.json(150)["got"][topic(c)]
    assert got == {"n": N, "bad": 0, "idx": list(range(N))}, got
    assert br.stop() == 0
