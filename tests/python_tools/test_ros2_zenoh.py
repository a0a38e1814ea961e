"""nerve bridge --ros2 (ROS 2 over rmw_zenoh, docs/ros.md).

No ROS 2 installs here, so this tests against (a) the values rmw_zenoh's
docs/design.md publishes (key expression shape, attachment layout, token
format, the RIHS01 hash of std_msgs/msg/String) and (b) zenoh-ros2-sdk, an
independent Python implementation of the rmw_zenoh protocol, its nodes
talking to nerve bridge through a Zenoh session in router mode that stands
in for rmw_zenohd (127.0.0.1 only, multicast scouting off).
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from typing import Iterator, List

import pytest
import zenoh

import nerve
from nerve_tools.bridge import rmw_zenoh as r2

from conftest import start

pytest.importorskip("zenoh_ros2_sdk", reason="zenoh-ros2-sdk is not installed (pip install './python-tools[test]')")

STRING_HASH = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
TAG = f"r2t_{os.getpid()}"


def wait_until(cond, timeout: float = 60.0, step: float = 0.05) -> bool:
    """Poll cond() until true, bounded: generous, for a bridge or router
    descheduled for seconds on a loaded host (a success returns at once)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


# ---- (a) the design document's values -----------------------------------

def test_names_and_keys() -> None:
    assert r2.dds_type("std_msgs/msg/String") == "std_msgs::msg::dds_::String_"
    assert r2.dds_type("sensor_msgs/Imu") == "sensor_msgs::msg::dds_::Imu_"
    assert r2.from_dds_type("sensor_msgs::msg::dds_::Imu_") == "sensor_msgs/msg/Imu"
    assert r2.data_key(0, "/chatter", "std_msgs/msg/String", STRING_HASH) == \
        f"0/chatter/std_msgs::msg::dds_::String_/{STRING_HASH}"
    assert r2.node_token(0, "abc", 0, "talker") == "@ros2_lv/0/abc/0/0/NN/%/%/talker"
    tok = r2.endpoint_token(2, "abc", 0, 10, "MP", "talker", "/a/chatter", "std_msgs/msg/String",
                            STRING_HASH, "::,7:,:,:,,")
    assert tok == ("@ros2_lv/2/abc/0/10/MP/%/%/talker/%a%chatter/std_msgs::msg::dds_::String_/"
                   f"{STRING_HASH}/::,7:,:,:,,")
    p = r2.parse_token(tok)
    assert p["topic"] == "/a/chatter" and p["type"] == "std_msgs/msg/String" and p["domain"] == 2
    assert r2.parse_token("@ros2_lv/0/abc/0/0/NN/%/%/talker") is None
    # The bridge kernel's rule (the whole table: tests/bridge/cases.txt),
    # with rmw_nerve's channels of the bridge's own domain.
    assert r2.topic_of_channel("robot.imu-0") == "/robot/imu_0"
    assert r2.topic_of_channel("ros2-d3.robot.imu", 3) == "/robot/imu"
    assert r2.channel_of_topic("/robot/imu") == "robot.imu"
    with pytest.raises(r2.Ros2Error):
        r2.dds_type("not a type")


def test_attachment_layout() -> None:
    gid = bytes(range(16))
    att = r2.pack_attachment(7, 1_700_000_000_123_456_789, gid)
    assert len(att) == 33
    assert att == struct.pack("<qq", 7, 1_700_000_000_123_456_789) + b"\x10" + gid
    assert r2.unpack_attachment(att) == (7, 1_700_000_000_123_456_789, gid)
    # The SDK's own decoder reads ours the same.
    from zenoh_ros2_sdk.attachment import Attachment
    a = Attachment.from_bytes(att)
    assert (a.sequence_id, a.timestamp_ns, a.gid) == (7, 1_700_000_000_123_456_789, gid)
    for bad in (None, att[:32], att[:16] + b"\x08" + gid):
        with pytest.raises(ValueError):
            r2.unpack_attachment(bad)


def test_type_hashes() -> None:
    from zenoh_ros2_sdk.utils import compute_type_hash_from_msg
    t = r2.Types()
    assert t.type_hash("std_msgs/msg/String") == STRING_HASH  # published in design.md
    for typ in ("sensor_msgs/msg/Imu", "geometry_msgs/msg/Twist", "sensor_msgs/msg/LaserScan",
                "sensor_msgs/msg/Image", "sensor_msgs/msg/PointCloud2", "nav_msgs/msg/OccupancyGrid"):
        h = t.type_hash(typ)
        assert r2._HASH_RE.match(h), (typ, h)
    # Published value (ROS 2 Jazzy's sensor_msgs/msg/Imu, as used by other
    # rmw_zenoh implementations), and the SDK's own REP-2011 code for String.
    assert t.type_hash("sensor_msgs/msg/Imu") == \
        "RIHS01_7d9a00ff131080897a5ec7e26e315954b8eae3353c3f995c55faf71574000b5b"
    assert compute_type_hash_from_msg("std_msgs/msg/String", "string data") == STRING_HASH
    # Overrides and unknown types.
    o = r2.Types(r2.parse_hash_overrides(["my_pkg/msg/Thing=RIHS01_" + "ab" * 32]))
    assert o.type_hash("my_pkg/Thing") == "RIHS01_" + "ab" * 32
    assert o.type_hash("my_pkg/msg/Other", "int32 x\nstring y\n").startswith("RIHS01_")
    with pytest.raises(r2.Ros2Error):
        o.type_hash("my_pkg/msg/Unknown")
    with pytest.raises(r2.Ros2Error):
        r2.Types({"std_msgs/msg/String": "RIHS01_xyz"})
    with pytest.raises(r2.Ros2Error):
        r2.parse_hash_overrides(["nohash"])


# ---- (b) against zenoh-ros2-sdk through a router ------------------------

@pytest.fixture(scope="module")
def router() -> Iterator[int]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    conf = zenoh.Config()
    conf.insert_json5("mode", '"router"')
    conf.insert_json5("listen/endpoints", f'["tcp/127.0.0.1:{port}"]')
    conf.insert_json5("scouting/multicast/enabled", "false")
    sess = zenoh.open(conf)
    # The SDK's sessions: no multicast scouting, listening on loopback only.
    old = os.environ.get("ZENOH_CONFIG_OVERRIDE")
    os.environ["ZENOH_CONFIG_OVERRIDE"] = ('scouting/multicast/enabled=false;'
                                           'listen/endpoints=["tcp/127.0.0.1:0"]')
    yield port
    if old is None:
        os.environ.pop("ZENOH_CONFIG_OVERRIDE", None)
    else:
        os.environ["ZENOH_CONFIG_OVERRIDE"] = old
    sess.close()


@pytest.fixture(params=["bridge --ros2", "ros2 --rmw zenoh"])
def bridge(router: int, request):
    """The rmw_zenoh bridge, started as `nerve bridge --ros2` or as `nerve
    ros2 --rmw zenoh` (which runs the former): --export GLOB is --to-ros
    GLOB there, --import GLOB is --from-ros /GLOB."""
    procs: List = []

    def run(*args: str):
        if request.param.startswith("bridge"):
            p, _ = start("bridge", "--ros2", "--connect", f"tcp/127.0.0.1:{router}", *args, ready="ready")
        else:
            flags = {"--export": "--to-ros", "--import": "--from-ros"}
            conv = [flags.get(a, a) if k % 2 == 0 else ("/" + a if args[k - 1] == "--import" else a)
                    for k, a in enumerate(args)]
            p, _ = start("ros2", "--rmw", "zenoh", "--zenoh-connect", f"tcp/127.0.0.1:{router}",
                         *conv, ready="ready")
        procs.append(p)
        return p

    yield run
    for p in procs:
        p.terminate()
        try:
            p.wait(10)
        except Exception:
            p.kill()
            p.wait(5)
        p.stderr.close()
        p.stdout.close()


def _unlink(*names: str) -> None:
    for n in names:
        try:
            nerve.unlink(n)
        except nerve.ChannelNotFound:
            pass


def test_import_from_sdk_publishers(router: int, bridge) -> None:
    from rosbags.typesys import Stores, get_typestore
    from zenoh_ros2_sdk import ROS2Publisher
    from zenoh_ros2_sdk.attachment import Attachment
    from zenoh_ros2_sdk.entity import EndpointEntity, EntityKind, NodeEntity
    from zenoh_ros2_sdk.keyexpr import endpoint_liveliness_keyexpr, node_liveliness_keyexpr, topic_keyexpr

    chatter, imu = f"{TAG}_chatter", f"{TAG}.imu"  # topic /r2t_N/imu
    pub, zpub, toks, readers = None, None, [], []
    try:
        bridge("--import", f"{TAG}*")
        pub = ROS2Publisher(topic=f"/{chatter}", msg_type="std_msgs/msg/String", msg_definition="string data",
                            router_port=router, node_name="talker")
        # An Imu publisher hand-built on eclipse-zenoh with the SDK's key,
        # token and attachment builders (the SDK's own publisher would fetch
        # .msg files from git for the dependencies).
        ts = get_typestore(Stores.ROS2_JAZZY)
        h = r2.Types().type_hash("sensor_msgs/msg/Imu")
        sess = pub.session_mgr.session
        node = NodeEntity(domain_id=0, session_id=str(sess.info.zid()), node_id=9, node_name="imu_node")
        ep = EndpointEntity(node=node, entity_id=10, kind=EntityKind.PUBLISHER, name=f"/{TAG}/imu",
                            dds_type_name="sensor_msgs::msg::dds_::Imu_", type_hash=h, qos="::,10:,:,:,,")
        toks = [sess.liveliness().declare_token(node_liveliness_keyexpr(node)),
                sess.liveliness().declare_token(endpoint_liveliness_keyexpr(ep))]
        zpub = sess.declare_publisher(topic_keyexpr(0, f"/{TAG}/imu", "sensor_msgs::msg::dds_::Imu_", h))
        assert wait_until(lambda: _exists(chatter) and _exists(imu)), "the bridge created no channels"
        r = nerve.open(chatter)
        ri = nerve.open(imu)
        readers += [r, ri]
        assert r.metadata.type == "std_msgs/msg/String" and r.metadata.encoding == "cdr"
        assert ri.metadata.type == "sensor_msgs/msg/Imu" and b"geometry_msgs/Quaternion" in bytes(ri.metadata.schema)
        Imu = ts.types["sensor_msgs/msg/Imu"]
        H, T = ts.types["std_msgs/msg/Header"], ts.types["builtin_interfaces/msg/Time"]
        V, Q = ts.types["geometry_msgs/msg/Vector3"], ts.types["geometry_msgs/msg/Quaternion"]
        import numpy as np
        sent_s, sent_i, got_s, got_i = [], [], [], []
        t0 = time.time_ns() - 5_000_000_000  # the origin's stamp, 5 s in the past
        end = time.monotonic() + 60  # ends at the third message; long for a loaded host
        i = 0
        while (len(got_s) < 3 or len(got_i) < 3) and time.monotonic() < end:
            pub.publish(data=f"hello {i}")
            sent_s.append(bytes(ts.serialize_cdr(ts.types["std_msgs/msg/String"](data=f"hello {i}"),
                                                 "std_msgs/msg/String")))
            m = Imu(header=H(stamp=T(sec=i, nanosec=7), frame_id="imu"), orientation=Q(x=0, y=0, z=0, w=1),
                    orientation_covariance=np.zeros(9), angular_velocity=V(x=1.0, y=2.0, z=float(i)),
                    angular_velocity_covariance=np.zeros(9), linear_acceleration=V(x=0, y=0, z=9.81),
                    linear_acceleration_covariance=np.zeros(9))
            b = bytes(ts.serialize_cdr(m, "sensor_msgs/msg/Imu"))
            sent_i.append(b)
            zpub.put(b, attachment=Attachment(i + 1, t0 + i, bytes(16)).to_bytes())
            i += 1
            time.sleep(0.1)
            for ch, got in ((r, got_s), (ri, got_i)):
                while (m2 := ch.get()) is not None:
                    got.append((m2.data, m2.time_ns))
        assert len(got_s) >= 3 and len(got_i) >= 3, (len(got_s), len(got_i))
        assert all(d in sent_s for d, _ in got_s), "a String payload changed on the way"
        assert all(d in sent_i for d, _ in got_i), "an Imu payload changed on the way"
        # The origin's source timestamp became the channel time.
        idx = sent_i.index(got_i[0][0])
        # (the two processes sample the realtime-monotonic offset apart: a
        # few microseconds; the stamp is 5 s in the past, far from now)
        assert abs(got_i[0][1] - r2.real_to_mono(t0 + idx)) < 1_000_000
        assert ts.deserialize_cdr(got_i[-1][0], "sensor_msgs/msg/Imu").linear_acceleration.z == 9.81
    finally:
        # Whatever failed, the SDK's session is closed: its threads would
        # otherwise keep pytest from exiting.
        for x in readers:
            x.close()
        for t in toks:
            t.undeclare()
        if zpub is not None:
            zpub.undeclare()
        if pub is not None:
            pub.close()
        _unlink(chatter, imu)


def _exists(n: str) -> bool:
    try:
        nerve.open(n).close()
        return True
    except nerve.Error:
        return False


def test_export_to_sdk_subscriber(router: int, bridge) -> None:
    from rosbags.typesys import Stores, get_typestore
    from zenoh_ros2_sdk import ROS2Subscriber
    ts = get_typestore(Stores.ROS2_JAZZY)
    out, plain = f"{TAG}.out", f"{TAG}_plain"  # topic /r2t_N/out
    w = nerve.create(out, slots=16, size=4096, type="std_msgs/msg/String", encoding="cdr", schema="string data")
    wp = nerve.create(plain, slots=4, size=64, type="text", encoding="utf8")
    got: List[str] = []
    lock = threading.Lock()

    def cb(msg) -> None:
        with lock:
            got.append(msg.data)

    sub = None
    try:
        bridge("--export", f"{TAG}*")
        sub = ROS2Subscriber(topic=f"/{TAG}/out", msg_type="std_msgs/msg/String", callback=cb,
                             msg_definition="string data", router_port=router)
        # The bridge's node and publisher are in the ROS graph.
        sess = sub.session_mgr.session

        def tokens() -> List[str]:
            return [str(x.ok.key_expr) for x in sess.liveliness().get("@ros2_lv/0/**", timeout=2)]

        assert wait_until(lambda: any(k.endswith(f"/MP/%/%/nerve_bridge/%{TAG}%out/std_msgs::msg::dds_::String_/"
                                                  f"{STRING_HASH}/{r2.DEFAULT_QOS}") for k in tokens()),
                          timeout=60), tokens()
        # (a liveliness get can come back empty on a loaded machine: ask again)
        assert wait_until(lambda: any("/NN/%/%/nerve_bridge" in k for k in tokens()), timeout=60), tokens()
        assert not any(plain in k for k in tokens()), "a utf8 channel was exported to ROS 2"
        end = time.monotonic() + 60  # ends at the third message; long for a loaded host
        i = 0
        while time.monotonic() < end:
            w.put(bytes(ts.serialize_cdr(ts.types["std_msgs/msg/String"](data=f"from nerve {i}"),
                                         "std_msgs/msg/String")))
            i += 1
            time.sleep(0.1)
            with lock:
                if len(got) >= 3:
                    break
        with lock:
            assert len(got) >= 3 and all(g.startswith("from nerve ") for g in got), got
    finally:
        if sub is not None:
            sub.close()
        w.close()
        wp.close()
        _unlink(out, plain)


def test_bad_flags(router: int) -> None:
    import subprocess

    from conftest import tool
    for args in (["--ros2-hash", "oops"], ["--ros2-hash", "std_msgs/msg/String=RIHS01_zz"],
                 ["--ros2-domain", "-1"]):
        p = subprocess.run([tool("bridge"), "--ros2", *args], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and "ros2" in p.stderr, (args, p.returncode, p.stderr)
