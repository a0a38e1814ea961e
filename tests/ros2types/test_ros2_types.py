"""ROS 2 message types, byte for byte, between nerve's C++ codec (through
tests/ros2types/ros2types_peer), nerve_tools.ros2.types (Python), rosbags and rclpy (the
ROS 2 Jazzy wheels of .venv-jazzy, run as a separate process: that venv has
no nerve and no rosbags, so bytes and fields travel as JSON lines).

NERVE_ROS2TYPES_PEER names ros2types_peer and NERVE_ROS2_JAZZY_PY the Jazzy venv's
Python (make test-ros2-types sets both). A missing one is a skip that says why.

What is checked, for every message of the shipped packages that rosbags'
Jazzy store has (three random messages each, one with every sequence
empty), and for the test package tests/ros2types/nerve_test_msgs:

- nerve_tools.ros2.types' bytes == what C++ decodes and re-encodes == rosbags';
- rclpy's serialize_message of the same fields == nerve's bytes except at
  padding (nerve writes zeros there, rclpy leaves what was in its buffer)
  and after the message (rclpy returns its size estimate, which exceeds
  the message by 4 or 8 bytes of junk per empty sequence of 8-byte
  numbers; decoders ignore bytes after the message);
- C++ and Python decode rclpy's bytes to the same fields (C++: re-encoded
  to nerve's bytes), and rclpy decodes nerve's bytes to the same fields;
- truncated and corrupt bytes are decode errors on both nerve sides;
- the schema text the C++ types record is the Python one and rosbags'.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from dataclasses import MISSING, is_dataclass
from dataclasses import fields as dc_fields
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.base import Nodetype

import nerve
import nerve.testing
from nerve_tools import ros2gen
from nerve_tools.codec.payload import Codec, example_value
from nerve_tools.ros2 import types as ros2

HERE = Path(__file__).resolve().parent
TEST_MSGS = HERE / "nerve_test_msgs" / "msg"
PREFIX = nerve.testing.PREFIX + "ros2"

_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "uint8": (0, 255),
    # rosbags packs a single byte as signed (ROS 1's meaning), rclpy as an
    # octet: values both read alike.
    "byte": (0, 127), "char": (0, 255),
    "int16": (-(1 << 15), (1 << 15) - 1), "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1), "uint64": (0, (1 << 64) - 1),
}
_NP = {"bool": np.bool_, "byte": np.uint8, "char": np.uint8, "int8": np.int8, "uint8": np.uint8,
       "int16": np.int16, "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32,
       "int64": np.int64, "uint64": np.uint64, "float32": np.float32, "float64": np.float64}


# ---- helpers ----------------------------------------------------------------

class Peer:
    """ros2types_peer as a line-oriented subprocess."""

    def __init__(self, path: str) -> None:
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, lines: List[str]) -> List[str]:
        out, _ = self.p.communicate("".join(line + "\n" for line in lines), timeout=120)
        self.p = None
        got = out.splitlines()
        assert len(got) == len(lines)
        return got


def peer_answers(lines: List[str]) -> List[str]:
    path = os.environ.get("NERVE_ROS2TYPES_PEER")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("NERVE_ROS2TYPES_PEER does not name the built tests/ros2types/ros2types_peer "
                    "(make test-ros2-types)")
    return Peer(path).ask(lines)


def rclpy_answers(reqs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    py = os.environ.get("NERVE_ROS2_JAZZY_PY")
    if not py or not os.access(py, os.X_OK):
        pytest.skip("NERVE_ROS2_JAZZY_PY does not name the Jazzy venv's python (make test-ros2-types)")
    p = subprocess.run([py, str(HERE / "rclpy_side.py")], input="".join(
        json.dumps(r) + "\n" for r in reqs), capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]
    out = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(out) == len(reqs), p.stderr[-2000:]
    return out


def plain(v: Any) -> Any:
    if is_dataclass(v) and not isinstance(v, type):
        # rosbags' constants (and __msgtype__) are fields with a default.
        # rclpy has no field for an empty message's placeholder byte.
        return {f.name: plain(getattr(v, f.name)) for f in dc_fields(v)
                if f.default is MISSING and f.name != ros2gen.DUMMY_MEMBER}
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


class Gen:
    """Random messages of a rosbags type store."""

    def __init__(self, ts, seed: int, empty: bool = False) -> None:
        self.ts = ts
        self.rng = random.Random(seed)
        self.empty = empty

    def text(self, bound: int) -> str:
        n = self.rng.randint(0, bound or 6)
        return "".join(self.rng.choice("abcxyz_ AZ09é") for _ in range(n))[: bound or None] \
            if not bound else "".join(self.rng.choice("abcxyz09") for _ in range(n))

    def base(self, t: str, bound: int) -> Any:
        r = self.rng
        if t == "bool":
            return r.random() < 0.5
        if t in _INT_RANGES:
            lo, hi = _INT_RANGES[t]
            return r.choice([lo, hi, 0, r.randint(lo, hi)])
        if t == "float32":
            return float(np.float32(r.uniform(-1e6, 1e6)))
        if t == "float64":
            return r.choice([r.uniform(-1e9, 1e9), -0.0, 1e-300])
        if t == "string":
            return self.text(bound)
        raise AssertionError(t)

    def value(self, node) -> Any:
        kind, arg = node
        if kind == Nodetype.BASE:
            return self.base(*arg)
        if kind == Nodetype.NAME:
            return self.msg(arg)
        sub, n = arg
        if kind == Nodetype.SEQUENCE:
            n = 0 if self.empty else self.rng.randint(0, min(n, 4) if n else 4)
        vals = [self.value(sub) for _ in range(n)]
        if sub[0] == Nodetype.BASE and sub[1][0] != "string":
            return np.array(vals, dtype=_NP[sub[1][0]])
        return vals

    def msg(self, name: str) -> Any:
        _consts, fdefs = self.ts.fielddefs[name]
        # rclpy writes an empty message's placeholder byte as 0.
        return self.ts.types[name](**{f: 0 if f == ros2gen.DUMMY_MEMBER else self.value(node)
                                      for f, node in fdefs})


def shipped_types() -> List[str]:
    fd = ros2.typestore("jazzy").fielddefs
    return sorted(n for n in fd if n.split("/")[0] in ros2gen.SHIPPED_PACKAGES)


def samples(ts, names: List[str]) -> List[Tuple[str, Any]]:
    out = []
    for i, n in enumerate(names):
        for k in range(3):
            out.append((n, Gen(ts, seed=1000 * i + k, empty=(k == 0)).msg(n)))
    return out


@pytest.fixture(scope="module")
def test_store():
    """Jazzy's store plus the test package (all but WStrings: rosbags knows
    no wstring)."""
    ts = get_typestore(Stores.ROS2_JAZZY)
    for f in sorted(TEST_MSGS.glob("*.msg")):
        if f.stem != "WStrings":
            ts.register(get_types_from_msg(f.read_text(), f"nerve_test_msgs/msg/{f.stem}"))
    return ts


def rclpy_slack(name: str, msg: Any) -> bool:
    """Whether msg has an empty sequence of 8-byte numbers (where rclpy's
    size estimate exceeds the message)."""
    reg = ros2gen.Registry("jazzy")

    def walk(n: str, m: Any) -> bool:
        for f in reg.get(n).fields:
            v = getattr(m, f.name)
            if f.container == "sequence" and f.base in ("float64", "int64", "uint64") and len(v) == 0:
                return True
            if f.is_message and any(walk(f.base, x) for x in (v if f.container else [v])):
                return True
        return False

    return walk(name, msg)


# ---- tests ------------------------------------------------------------------

def test_shipped_packages_are_all_there():
    names = shipped_types()
    for pkg in ros2gen.SHIPPED_PACKAGES:
        assert any(n.startswith(pkg + "/") for n in names), pkg
    assert "sensor_msgs/msg/PointCloud2" in names and "tf2_msgs/msg/TFMessage" in names


@pytest.mark.parametrize("distro", ["jazzy", "humble"])
def test_schema_text_is_rosbags_msgdef(distro):
    """The generator's ros2msg text is rosbags' generate_msgdef with the
    defaults its store drops written back, for every message of the
    distribution."""
    ts = ros2.typestore(distro)
    reg = ros2gen.Registry(distro)
    bad = [n for n in ts.fielddefs
           if "/msg/" in n and ros2gen.ros2msg(reg, n) != ros2gen.with_store_defaults(
               ts.generate_msgdef(n, ros_version=2)[0], n, distro)]
    assert not bad, bad[:5]



def tools_default(reg: ros2gen.Registry, n: str) -> Any:
    """The fields of the all-default message that `nerve pub --example`
    prints (example_value) for a channel of type n with the generator's
    schema, without the constants it also shows."""
    codec = Codec("cdr", n, ros2gen.ros2msg(reg, n).encode())
    assert example_value(codec) is not None
    return plain(codec._to_ros({}, codec._name, ""))


def test_defaults_are_rclpy_defaults():
    """Every message of rosbags' Jazzy store that the ROS 2 Jazzy wheels
    have: rclpy's default-constructed message == the tools' all-default
    value (`nerve pub --example`, a channel of the generator's schema) and,
    for the shipped packages, == the C++ type's default-constructed value
    (its bytes, decoded by rosbags)."""
    ts = ros2.typestore("jazzy")
    reg = ros2gen.Registry("jazzy")
    humble = ros2.typestore("humble").fielddefs
    names = sorted(n for n in ts.fielddefs if "/msg/" in n)
    compared = 0
    answers = rclpy_answers([{"type": n, "default": True} for n in names])
    have = {n: a["fields"] for n, a in zip(names, answers) if not a.get("missing")}
    # The wheels carry every shipped package but tf2_msgs (no wheel of it);
    # TFMessage is made of geometry_msgs types, which are compared.
    assert {n for n in shipped_types() if not n.startswith("tf2_msgs/")} <= set(have)
    assert have["geometry_msgs/msg/Quaternion"]["w"] == 1.0  # what the issue was about
    for n, fields in have.items():
        # The tools decode a type that ROS 2 Humble has with Humble's
        # definition (nerve_tools.codec.schemas.typestore): where Jazzy's
        # differs (16 types, e.g. sensor_msgs/Range, and the types that hold
        # them), only C++ is compared.
        if all(m.name not in humble or humble[m.name][1] == ts.fielddefs[m.name][1]
               for m in reg.closure([n])):
            assert tools_default(reg, n) == fields, n
            compared += 1
    assert compared >= len(have) - 30, (compared, len(have))
    shipped = shipped_types()
    got = peer_answers([f"DEFAULT {n}" for n in shipped])
    for n, line in zip(shipped, got):
        assert line.startswith("OK "), (n, line)
        value = plain(ts.deserialize_cdr(bytes.fromhex(line[3:]), n))
        if n in have:
            assert value == have[n], n
        else:
            assert value == tools_default(reg, n), n


def test_cxx_records_the_same_schema():
    names = shipped_types() + ["nerve_test_msgs/msg/AllKinds"]
    got = peer_answers([f"SCHEMA {n}" for n in names])
    reg = ros2gen.Registry("jazzy")
    reg.add_msg_file(str(TEST_MSGS / "AllKinds.msg"))
    reg.add_msg_file(str(TEST_MSGS / "Nested.msg"))
    for n, line in zip(names, got):
        assert line.startswith("OK "), (n, line)
        assert bytes.fromhex(line[3:]).decode() == ros2gen.ros2msg(reg, n), n


def _roundtrip(ts, reg, items: List[Tuple[str, Any]]) -> None:
    """nerve_tools.ros2.types' bytes == C++'s re-encoding of them == rosbags'
    (where rosbags writes ROS 2's bytes); both nerve sides decode them to
    the message's fields."""
    codec = ros2._Codec(reg, ts)
    ours = []
    for n, m in items:
        b = bytearray(ros2._size(m, n, codec))
        ros2._write(memoryview(b), m, n, codec)
        ours.append(bytes(b))
    for (n, m), b in zip(items, ours):
        assert bytes(ts.serialize_cdr(m, n)) == b, n
        assert plain(ros2._decode(b, n, codec)) == plain(m), n
    answers = peer_answers([f"{n} {b.hex()}" for (n, _), b in zip(items, ours)])
    for (n, _m), b, a in zip(items, ours, answers):
        assert a.startswith("OK "), (n, a)
        _ok, hexed, _mask, view = a.split(" ")
        assert bytes.fromhex(hexed) == b, n
        assert view == "same", n


def test_every_field_kind_cxx_python_rosbags(test_store):
    reg = ros2gen.Registry("jazzy")
    for f in sorted(TEST_MSGS.glob("*.msg")):
        reg.add_msg_file(str(f))
    names = ["nerve_test_msgs/msg/AllKinds", "nerve_test_msgs/msg/Nested",
             "nerve_test_msgs/msg/Empty", "nerve_test_msgs/msg/Blob"]
    items = []
    for seed in range(12):
        for n in names:
            items.append((n, Gen(test_store, seed, empty=(seed % 4 == 0)).msg(n)))
    _roundtrip(test_store, reg, items)


def test_shipped_messages_cxx_python_rosbags():
    ts = ros2.typestore()
    _roundtrip(ts, ros2gen.Registry("jazzy"), samples(ts, shipped_types()))


def test_shipped_messages_against_rclpy():
    """rclpy (Jazzy wheels) and nerve: equal bytes but for padding, and
    each side decodes the other's bytes to equal fields."""
    ts = ros2.typestore()
    items = samples(ts, shipped_types())
    ours = [ros2.encode(m, n) for n, m in items]
    answers = rclpy_answers([{"type": n, "fields": plain(m), "cdr": b.hex()}
                             for (n, m), b in zip(items, ours)])
    masks = peer_answers([f"{n} {b.hex()}" for (n, _), b in zip(items, ours)])
    carried, missing, back_lines = [], set(), []
    for (n, m), b, a, pm in zip(items, ours, answers, masks):
        if a.get("missing"):
            missing.add(n)
            continue
        assert "error" not in a, (n, a)
        theirs = bytes.fromhex(a["ser"])
        mask = bytes.fromhex(pm.split(" ")[2])
        assert len(theirs) >= len(b), (n, theirs.hex(), b.hex())
        # rclpy pads to a multiple of 4, and more where its estimate is.
        assert len(theirs) - len(b) <= 3 or rclpy_slack(n, m), (n, theirs.hex(), b.hex())
        diff = [i for i in range(len(b)) if theirs[i] != b[i] and not mask[i]]
        assert not diff, (n, diff, theirs.hex(), b.hex())
        # rclpy read nerve's bytes as the fields nerve wrote.
        assert a["back"] == plain(m), n
        # Python reads rclpy's bytes as the same fields.
        assert plain(ros2.decode(theirs, n)) == plain(m), n
        carried.append(n)
        back_lines.append((n, theirs, b))
    # C++ reads rclpy's bytes as the same fields: it re-encodes nerve's.
    got = peer_answers([f"{n} {t.hex()}" for n, t, _ in back_lines])
    for (n, _t, b), g in zip(back_lines, got):
        assert g.startswith("OK ") and bytes.fromhex(g.split(" ")[1]) == b, (n, g)
    # Every shipped package but tf2_msgs is in the wheels.
    pkgs = {n.split("/")[0] for n in carried}
    assert pkgs == set(ros2gen.SHIPPED_PACKAGES) - {"tf2_msgs"}, pkgs
    print(f"\nrclpy compared {len(set(carried))} types ({len(carried)} messages); "
          f"not in the Jazzy wheels: {sorted({n.split('/')[0] for n in missing})}")


def test_bad_bytes_are_decode_errors(test_store):
    items = [("nerve_test_msgs/msg/AllKinds", Gen(test_store, 7).msg("nerve_test_msgs/msg/AllKinds")),
             ("sensor_msgs/msg/PointCloud2", Gen(test_store, 8).msg("sensor_msgs/msg/PointCloud2"))]
    lines = []
    for n, m in items:
        b = bytes(test_store.serialize_cdr(m, n))
        for cut in range(0, len(b)):
            lines.append((n, b[:cut]))
        lines.append((n, b"\x00\x00" + b[2:]))  # big endian
    # A string length far past the end (AllKinds.s is at body offset 56).
    b = bytearray(test_store.serialize_cdr(items[0][1], items[0][0]))
    b[60:64] = (0x7FFFFFF0).to_bytes(4, "little")
    lines.append((items[0][0], bytes(b)))
    reg = ros2gen.Registry("jazzy")
    for f in sorted(TEST_MSGS.glob("*.msg")):
        reg.add_msg_file(str(f))
    codec = ros2._Codec(reg, test_store)
    answers = peer_answers([f"{n} {d.hex()}" for n, d in lines])
    for (n, d), a in zip(lines, answers):
        assert a == "ERR EDECODE", (n, len(d), a)
        with pytest.raises(nerve.DecodeFailed):
            ros2._decode(d, n, codec)


# ---- channels ---------------------------------------------------------------

@pytest.fixture
def names():
    made: List[str] = []

    def make(tag: str) -> str:
        n = f"{PREFIX}-{os.getpid()}-{len(made)}-{tag}"
        made.append(n)
        return n

    yield make
    for n in made:
        try:
            nerve.unlink(n)
        except nerve.ChannelNotFound:
            pass


def test_channel_metadata_and_round_trip(names):
    n = names("imu")
    T = ros2.typestore().types
    imu = Gen(ros2.typestore(), 3).msg("sensor_msgs/msg/Imu")
    with ros2.create(n, "sensor_msgs/msg/Imu") as w:
        md = w.channel.metadata
        assert (md.type, md.encoding) == ("sensor_msgs/msg/Imu", "cdr")
        assert md.schema.decode() == ros2.schema("sensor_msgs/msg/Imu")
        seq = w.put(imu)
        assert seq == 1
        with ros2.open(n) as r:
            got = r.get()
            assert plain(got) == plain(imu)
            assert r.get() is None
            raw = r.channel.get(seq=1)
            assert bytes(raw.data) == ros2.encode(imu, "sensor_msgs/msg/Imu")
        with pytest.raises(nerve.ChannelMismatch):
            ros2.open(n, "sensor_msgs/msg/LaserScan")
    assert T["sensor_msgs/msg/Imu"] is type(imu)


def test_not_a_ros2_channel(names):
    n = names("raw")
    with nerve.create(n, size=1 << 16):
        with pytest.raises(nerve.ChannelMismatch):
            ros2.open(n)


def test_bad_message_in_channel_is_decode_failed(names):
    n = names("bad")
    with ros2.create(n, "sensor_msgs/msg/Imu") as w:
        w.channel.put(b"\x00\x01\x00\x00\x01\x02")
        with ros2.open(n) as r:
            with pytest.raises(nerve.DecodeFailed):
                r.get()


def test_pointcloud_arrays_view_the_ring(names):
    n = names("cloud")
    ts = ros2.typestore()
    T = ts.types
    hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=1, nanosec=2),
                                   frame_id="lidar")
    data = (np.arange(1 << 20) * 7).astype(np.uint8)
    cloud = T["sensor_msgs/msg/PointCloud2"](
        header=hdr, height=1, width=(1 << 20) // 16,
        fields=[T["sensor_msgs/msg/PointField"](name="x", offset=0, datatype=7, count=1)],
        is_bigendian=False, point_step=16, row_step=1 << 20, data=data, is_dense=True)
    with ros2.create(n, "sensor_msgs/msg/PointCloud2", slots=4, size=8 << 20) as w:
        w.put(cloud)
        with ros2.open(n) as r:
            got = r.get(newest=True, repeat=True)
            assert np.array_equal(got.data, data)
            with r.view(newest=True, repeat=True) as m:
                assert isinstance(m.data, np.ndarray) and not m.data.flags.writeable
                assert np.array_equal(m.data, data)
                addr = m.data.__array_interface__["data"][0]
                with r.channel.view(newest=True, repeat=True) as raw:
                    ring = np.frombuffer(raw.data, np.uint8).__array_interface__["data"][0]
                    # The array starts inside the message in the ring.
                    assert ring < addr < ring + raw.size
                    del ring
                del m
