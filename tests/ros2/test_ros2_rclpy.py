"""nerve ros2 against real ROS 2 nodes: rclpy of ROS 2 Jazzy (Fast DDS 2.14)
and Kilted (Fast DDS 3.2) on rmw_fastrtps_cpp, with the bridge on Cyclone
DDS 0.10 -- a cross-vendor RTPS exchange on loopback.

Each direction carries std_msgs/String, sensor_msgs/Imu and a 1 MiB
sensor_msgs/PointCloud2. Messages are a fixed function of their index
(rclpy_peer.make), so every side checks every field of what it got."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Dict, List, Set, Tuple

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

import nerve
from nerve_tools import ros2gen
from nerve_tools.ros2 import cli as ros2

from conftest import DISTROS, Ros2Env, need_distro, to_ros_matched, topic

KINDS = {"String": "std_msgs/msg/String", "Imu": "sensor_msgs/msg/Imu",
         "PointCloud2": "sensor_msgs/msg/PointCloud2"}
N = 5
STORE = get_typestore(Stores.ROS2_JAZZY)
_SIZES = {"bool": 1, "byte": 1, "char": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2,
          "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "float32": 4, "float64": 8}


def cdr_layout(typename: str, data: bytes) -> Tuple[Set[int], int]:
    """(offsets of alignment padding, end of the message) of little-endian
    CDR `data` of `typename`, walked from rosbags' field definitions."""
    pad: Set[int] = set()
    pos = 4

    def align(n: int) -> None:
        nonlocal pos
        while (pos - 4) % n:
            pad.add(pos)
            pos += 1

    def u32() -> int:
        nonlocal pos
        align(4)
        v = int.from_bytes(data[pos:pos + 4], "little")
        pos += 4
        return v

    def node(nt) -> None:
        nonlocal pos
        kind, det = nt
        if kind == 1:  # base
            if det[0] == "string":
                n = u32()  # (not "pos += u32()": that reads pos before the call)
                pos += n
            else:
                align(_SIZES[det[0]])
                pos += _SIZES[det[0]]
        elif kind == 2:  # message
            for _, sub in STORE.fielddefs[det][1]:
                node(sub)
        else:  # 3 array, 4 sequence
            sub, n = det
            if kind == 4:
                n = u32()
            if sub[0] == 1 and sub[1][0] != "string":
                size = _SIZES[sub[1][0]]
                if n:
                    align(size)
                pos += n * size
            else:
                for _ in range(n):
                    node(sub)

    node((2, typename))
    return pad, pos


def equal_but_padding(typename: str, got: bytes, ref: bytes) -> None:
    """`got` equals `ref` except in alignment padding and after the end.
    The encapsulation is CDR little-endian (00 01); its options may count
    the padding bytes at the end (Cyclone's serializer writes 00 0N, as
    XTypes 1.3 allows; Fast DDS and rclpy write 00 00)."""
    assert got[:3] == b"\x00\x01\x00" and got[3] < 4, got[:4]
    pad, end = cdr_layout(typename, ref)
    assert cdr_layout(typename, got)[1] == end
    assert len(got) >= end and len(ref) >= end
    a = np.frombuffer(got[:end], np.uint8)
    b = np.frombuffer(ref[:end], np.uint8)
    diff = set(np.nonzero(a[4:] != b[4:])[0] + 4)
    assert diff <= pad, f"{typename}: bytes differ outside padding at {sorted(diff - pad)[:10]}"


def catalog_hashes() -> Dict[str, str]:
    """type -> hash of the catalog nerve ros2 hands to nerve-ros2-dds."""
    out = {}
    data = ros2.catalog()
    pos = 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        _, t, h, n = data[pos:nl].decode().split(" ")
        out[t] = h
        pos = nl + 1 + int(n) + 1
    return out


def endpoint_node(distro: str) -> str:
    """The node rclpy names as owner of the bridge's endpoints. Kilted's
    rmw_fastrtps (Fast DDS 3) leaves them unattributed although it lists
    the node from ros_discovery_info (docs/ros2.md, "Not guaranteed")."""
    return "nerve_ros2" if distro == "jazzy" else "_CREATED_BY_BARE_DDS_APP_"


def make_channels(name, kinds) -> Dict[str, str]:
    chans = {}
    for kind in kinds:
        n = name(kind.lower())
        ch = nerve.create(n, slots=32, size=8 << 20, type=KINDS[kind], encoding="cdr",
                          schema=STORE.generate_msgdef(KINDS[kind], ros_version=2)[0])
        ch.close()
        chans[kind] = n
    return chans


def read_all(chan: str) -> List[nerve.Message]:
    ch = nerve.open(chan)
    ch.seek(0)
    out = []
    while True:
        m = ch.get()
        if m is None:
            break
        out.append(m)
    ch.close()
    return out


def put_serialized(r2: Ros2Env, distro: str, chans: Dict[str, str], start: int = 0,
                   count: int = N) -> None:
    """Put messages start..start+count-1 of each kind, as rclpy serializes
    them, into the channels (20 per second)."""
    data: Dict[str, List[bytes]] = {}
    for kind in chans:
        d = r2.tmp / f"ser-{kind}-{start + count}"
        if not d.exists():
            r2.rclpy_run(distro, "serialize", str(d), kind, str(start + count))
        data[kind] = [(d / f"{i}.cdr").read_bytes() for i in range(start, start + count)]
    writers = {k: nerve.open(c, write=True) for k, c in chans.items()}
    for i in range(count):
        for kind, w in writers.items():
            w.put(data[kind][i])
        time.sleep(0.05)
    for w in writers.values():
        w.close()


@pytest.mark.parametrize("distro", DISTROS)
def test_to_ros(r2: Ros2Env, name, distro: str) -> None:
    """Channels to rclpy subscribers, reliable and best effort; the graph
    shows the bridge node publishing them with their types and hashes."""
    need_distro(distro)
    chans = make_channels(name, KINDS)
    br = r2.bridge_to_ros(chans.values())
    qos = {"String": "reliable", "Imu": "best_effort", "PointCloud2": "reliable"}
    sub = r2.rclpy(distro, "sub", *[f"{topic(c)}:{k}:{qos[k]}" for k, c in chans.items()],
                   "--want", str(N), "--timeout", "120",
                   "--graph-topics", *[topic(c) for c in chans.values()])
    sub.wait_line("^READY$", 120)
    to_ros_matched(br, chans.values())
    put_serialized(r2, distro, chans)
    res = sub.json(150)
    for kind, c in chans.items():
        got = res["got"][topic(c)]
        assert got["bad"] == 0, (kind, got)
        if qos[kind] == "reliable":
            assert got["idx"] == list(range(N)), (kind, got)
        else:
            # Best effort on loopback: whatever arrived is in order.
            assert got["n"] >= 1 and got["idx"] == sorted(got["idx"]), (kind, got)
    g = res["graph"]
    assert "/nerve_ros2" in g["nodes"], g["nodes"]
    for kind, c in chans.items():
        t = topic(c)
        assert g["topics"][t] == [KINDS[kind]]
        ep = g["endpoints"][t]
        assert ep["count_publishers"] == 1
        (pub,) = ep["publishers"]
        assert pub["node"] == endpoint_node(distro) and pub["type"] == KINDS[kind]
        assert pub["reliability"] == "RELIABLE" and pub["durability"] == "VOLATILE"
        if pub["hash"] is not None:
            assert catalog_hashes()[KINDS[kind]] in pub["hash"], pub
    assert br.stop() == 0
    for c in chans.values():
        assert f"to-ros {c} -> {topic(c)}: {N} sent" in br.output, br.output


@pytest.mark.parametrize("distro", DISTROS)
def test_from_ros(r2: Ros2Env, name, distro: str) -> None:
    """rclpy publishers to channels: type, cdr, the definition as schema,
    the wire bytes (rclpy's serialization but for padding), deserializable
    to the published values, commit times ordered within the test."""
    need_distro(distro)
    chans = {k: name(k.lower()) for k in KINDS}
    t0 = nerve.now_ns()
    br = r2.bridge(*[f"--from-ros={topic(c)}:{c}" for c in chans.values()])
    pub = r2.rclpy(distro, "pub", *[f"{topic(c)}:{k}" for k, c in chans.items()],
                   "--count", str(N), "--timeout", "120",
                   "--graph-topics", *[topic(c) for c in chans.values()], gate=True)
    r2.open_gate(br, [topic(c) for c in chans.values()])
    res = pub.json(150)
    assert res["matched"], pub.output
    t1 = nerve.now_ns()
    for kind, c in chans.items():
        msgs = read_all(c)
        assert len(msgs) == N, (kind, len(msgs), br.output)
        meta = nerve.open(c).metadata
        assert meta.type == KINDS[kind] and meta.encoding == "cdr"
        # rosbags' definition with the defaults its store drops put back
        # (as the bridge's catalogue and rclpy have them: Quaternion w = 1).
        assert meta.schema.decode() == ros2gen.with_store_defaults(
            STORE.generate_msgdef(KINDS[kind], ros_version=2)[0], KINDS[kind], "jazzy")
        times = [m.time_ns for m in msgs]
        assert times == sorted(times) and t0 <= times[0] and times[-1] <= t1
        d = r2.tmp / f"got-{kind}"
        d.mkdir()
        for i, m in enumerate(msgs):
            (d / f"{i}.cdr").write_bytes(bytes(m.data))
        chk = r2.rclpy_run(distro, "check", str(d), kind)
        assert chk == {"checked": N, "bad": []}, chk
        for i in range(N):
            equal_but_padding(KINDS[kind], (d / f"{i}.cdr").read_bytes(),
                              (d / f"{i}.ref").read_bytes())
    g = res["graph"]
    assert "/nerve_ros2" in g["nodes"], g
    for kind, c in chans.items():
        t = topic(c)
        assert g["topics"][t] == [KINDS[kind]]
        ep = g["endpoints"][t]
        assert ep["count_subscribers"] == 1 and ep["count_publishers"] == 1
        assert [s["node"] for s in ep["subscriptions"]] == [endpoint_node(distro)]
        assert ep["subscriptions"][0]["type"] == KINDS[kind]
    assert br.stop() == 0
    for c in chans.values():
        assert f"-> {c}: {N} received, {N} put" in br.output, br.output


def test_from_ros_grows_the_channel(r2: Ros2Env, name) -> None:
    """A topic whose samples outgrow the channel made for the first one:
    the bridge grows it (within --max-channel-size) and every sample
    arrives, in order, whole."""
    need_distro("jazzy")
    c = name("grow")
    br = r2.bridge(f"--from-ros={topic(c)}:{c}")
    pub = r2.rclpy("jazzy", "pub", f"{topic(c)}:Growing", "--count", "3", "--period", "0.3",
                   "--timeout", "120", gate=True)
    r2.open_gate(br, [topic(c)])
    assert pub.json(150)["matched"], pub.output
    msgs = read_all(c)
    assert br.stop() == 0
    sizes = [len(m.data) for m in msgs]
    # The first sample made a 1 MiB ring (the smallest); the others need more.
    assert len(msgs) == 3 and sizes == sorted(sizes) and sizes[1] > 1 << 20, (sizes, br.output)
    assert [bytes(m.data)[8:16] for m in msgs] == [b"hello 0 ", b"hello 1 ", b"hello 2 "]
    assert "grew channel" in br.output, br.output
    assert f"-> {c}: 3 received, 3 put" in br.output, br.output


def test_latch_late_joiner(r2: Ros2Env, name) -> None:
    """--latch: a transient-local subscriber that comes after the messages
    gets the newest one, a volatile one gets nothing old."""
    need_distro("jazzy")
    chans = make_channels(name, ["String"])
    put_serialized(r2, "jazzy", chans, count=3)
    br = r2.bridge("--latch", f"--to-ros={chans['String']}")
    br.wait_line("to-ros .* -> ")
    t = topic(chans["String"])
    late = r2.rclpy("jazzy", "sub", f"{t}:String:latched", "--want", "1", "--timeout", "90")
    res = late.json(120)
    assert res["got"][t]["idx"] == [2], res
    assert br.stop() == 0


def test_kill_restart(r2: Ros2Env, name) -> None:
    """The bridge SIGKILLed and started again: the subscriber that stayed
    gets the messages of both; a ROS 2 publisher that restarts (a new
    participant) is mirrored again."""
    need_distro("jazzy")
    chans = make_channels(name, ["String"])
    back = name("back")
    t = topic(chans["String"])
    br = r2.bridge(f"--to-ros={chans['String']}", f"--from-ros={topic(back)}:{back}")
    sub = r2.rclpy("jazzy", "sub", f"{t}:String", "--want", "6", "--timeout", "300")
    sub.wait_line("^READY$", 120)
    to_ros_matched(br, chans.values())
    put_serialized(r2, "jazzy", chans, 0, 3)
    first = r2.rclpy("jazzy", "pub", f"{topic(back)}:String", "--count", "3", gate=True)
    r2.open_gate(br, [topic(back)])
    assert first.json(150)["matched"]
    br.kill()
    br2 = r2.bridge(f"--to-ros={chans['String']}", f"--from-ros={topic(back)}:{back}")
    br2.wait_line("to-ros .* -> ")
    # Until the new writer has matched the subscriber, messages would be
    # lost for it (volatile).
    to_ros_matched(br2, chans.values())
    put_serialized(r2, "jazzy", chans, 3, 3)
    second = r2.rclpy("jazzy", "pub", f"{topic(back)}:String", "--count", "3", "--start", "3",
                      gate=True)
    r2.open_gate(br2, [topic(back)])
    assert second.json(150)["matched"]
    res = sub.json(300)
    assert res["got"][t]["idx"] == list(range(6)), res
    assert br2.stop() == 0
    msgs = read_all(back)
    # The first bridge's three messages, then the second's: a new
    # participant each time, none lost, none twice.
    assert len(msgs) == 6, br2.output
    ch = r2.tmp / "back"
    ch.mkdir()
    for i, m in enumerate(msgs):
        (ch / f"{i}.cdr").write_bytes(bytes(m.data))
    assert r2.rclpy_run("jazzy", "check", str(ch), "String") == {"checked": 6, "bad": []}


def test_type_mismatch(r2: Ros2Env, name) -> None:
    """A channel of another type than the topic, and a subscriber of
    another type than the channel: one clear line each; the other topic
    keeps flowing."""
    need_distro("jazzy")
    wrong = make_channels(name, ["Imu"])["Imu"]  # will be asked to carry String
    ok = name("ok")
    out = make_channels(name, ["String"])["String"]
    br = r2.bridge(f"--from-ros={topic(wrong)}:{wrong}", f"--from-ros={topic(ok)}:{ok}",
                   f"--to-ros={out}")
    sub = r2.rclpy("jazzy", "sub", f"{topic(out)}:Imu", "--want", "1", "--timeout", "8")
    pub = r2.rclpy("jazzy", "pub", f"{topic(wrong)}:String", f"{topic(ok)}:String",
                   "--count", "3", gate=True)
    r2.open_gate(br, [topic(wrong), topic(ok)])
    assert pub.json(150)["matched"]
    br.wait_line(rf"from-ros {topic(wrong)}: channel {wrong} holds type 'sensor_msgs/msg/Imu'.*"
                 r"'std_msgs/msg/String'", 60)
    br.wait_line(rf"type mismatch on {topic(out)}: channel {out} has std_msgs/msg/String, "
                 r"a remote endpoint uses sensor_msgs/msg/Imu", 60)
    assert len(read_all(ok)) == 3
    assert read_all(wrong) == []
    sub.json(120)
    assert br.stop() == 0


def test_rosbags_hashes_match_jazzy() -> None:
    """The type hashes the bridge announces (rosbags) are the ones ROS 2
    Jazzy's own type descriptions carry."""
    import json

    root = Path(__file__).resolve().parents[2] / ".venv-jazzy" / "share"
    if not root.is_dir():
        pytest.skip(".venv-jazzy missing (make ros2-venvs creates it)")
    hashes = catalog_hashes()
    # BatteryState and Gid have char fields, which ROS hashes as uint8.
    for t in (*KINDS.values(), "rmw_dds_common/msg/ParticipantEntitiesInfo",
              "sensor_msgs/msg/BatteryState", "std_msgs/msg/Header"):
        pkg, _, n = t.split("/")
        desc = json.loads((root / pkg / "msg" / f"{n}.json").read_text())
        assert desc["type_hashes"][0]["hash_string"] == hashes[t], t


def test_rmw_domain_names(r2: Ros2Env, name) -> None:
    """rmw_nerve's channels of the bridge's own domain N ("ros2-dN.<topic>",
    rmw_nerve/src/names.cpp) go out as /<topic>, not /ros2_dN/<topic>, and
    its service channels (encoding rmw_nerve-service) are neither
    published nor reported as errors, from one --to-ros glob."""
    need_distro("jazzy")
    pre = f"ros2-d{r2.domain}."
    msg = pre + name("chatter")
    svc = pre + name("svc") + ".request"
    made: List[str] = []
    try:
        ch = nerve.create(msg, slots=32, size=1 << 16, type=KINDS["String"], encoding="cdr",
                          schema=STORE.generate_msgdef(KINDS["String"], ros_version=2)[0])
        ch.close()
        made.append(msg)
        nerve.create(svc, slots=8, size=4096, type="example_interfaces/srv/AddTwoInts",
                     encoding="rmw_nerve-service").close()
        made.append(svc)
        t = "/" + msg[len(pre):].replace(".", "/").replace("-", "_")
        br = r2.bridge(f"--to-ros={pre}*")
        br.wait_line(f"to-ros {re.escape(msg)} -> {re.escape(t)} ")
        sub = r2.rclpy("jazzy", "sub", f"{t}:String", "--want", str(N), "--timeout", "120")
        sub.wait_line("^READY$", 120)
        to_ros_matched(br, [msg])
        put_serialized(r2, "jazzy", {"String": msg})
        got = sub.json(150)["got"][t]
        assert got["bad"] == 0 and got["idx"] == list(range(N)), got
        assert br.stop() == 0
        assert f"to-ros {msg} -> {t}: {N} sent" in br.output, br.output
        assert svc not in br.output and "error" not in br.output, br.output
    finally:
        for c in made:
            nerve.unlink(c)
