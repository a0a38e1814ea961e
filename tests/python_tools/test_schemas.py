"""Built-in schemas: ROS 1 / ROS 2 definitions and (de)serialization through
rosbags, JSON Schema; a recorded channel's MCAP schema decodes its data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nerve
from nerve_tools.codec import schemas
from nerve_tools.recording.record import Recorder

from conftest import read_mcap


@pytest.mark.parametrize("typename", schemas.BUILTIN_TYPES)
@pytest.mark.parametrize("encoding", ["cdr", "ros1msg"])
def test_builtin_types_round_trip(typename: str, encoding: str) -> None:
    v = 2 if encoding == "cdr" else 1
    msg = schemas.example(typename, v, seq=3)
    data = schemas.encode(msg, typename, encoding)
    back = schemas.decode(data, typename, encoding)
    assert schemas.encode(back, typename, encoding) == data
    assert back.header.frame_id == "base" and back.header.stamp.sec == 3
    opts = schemas.channel_options(typename, encoding)
    s = schemas.ros_schema(typename, v)
    assert opts == {"type": s.name, "encoding": encoding, "schema": s.text}
    if v == 2:
        assert (s.name, s.encoding) == (typename, "ros2msg")
        assert s.text.startswith(b"std_msgs/Header header")
    else:
        assert (s.name, s.encoding) == (typename.replace("/msg/", "/"), "ros1msg")
        assert b"MSG: std_msgs/Header\nuint32 seq\ntime stamp" in s.text


def test_json_schema_and_errors() -> None:
    s = schemas.json_schema("demo.Pose", {"type": "object", "properties": {"x": {"type": "number"}}})
    assert (s.name, s.encoding) == ("demo.Pose", "jsonschema")
    assert json.loads(s.text)["title"] == "demo.Pose"
    assert schemas.decode(schemas.encode({"x": 1.5}, "demo.Pose", "json"), "demo.Pose", "json") == {"x": 1.5}
    with pytest.raises(ValueError):
        schemas.json_schema("bad", {"properties": {}})
    with pytest.raises(ValueError):
        schemas.channel_options("sensor_msgs/msg/Imu", "protobuf")
    with pytest.raises(KeyError):
        schemas.decode(b"", "my_pkg/msg/Unknown", "cdr")


@pytest.mark.parametrize("encoding", ["cdr", "ros1msg"])
def test_recorded_schema_decodes_the_data(name, tmp_path: Path, encoding: str) -> None:
    """What a reader of the MCAP file has (schema text, encodings) is enough
    to decode every recorded message of every built-in type."""
    v = 2 if encoding == "cdr" else 1
    chans = {}
    for t in schemas.BUILTIN_TYPES:
        n = name(t.rsplit("/", 1)[1].lower())
        nerve.create(n, slots=8, size=1 << 16, **schemas.channel_options(t, encoding)).close()
        chans[n] = t
    path = tmp_path / "types.mcap"
    with Recorder(str(path), list(chans)) as rec:
        for n, t in chans.items():
            with nerve.open(n, write=True) as w:
                w.put(schemas.encode(schemas.example(t, v, seq=7), t, encoding))
        assert rec.poll() == 4
    out = read_mcap(path)
    assert len(out["messages"]) == 4
    for schema, chan, msg in out["messages"]:
        assert chan.message_encoding == ("cdr" if v == 2 else "ros1")
        assert schema.encoding == ("ros2msg" if v == 2 else "ros1msg")
        # Decode with a type store built from the file's schema text only.
        m = schemas._store_for_schema(schema.name, v, schema.data)
        obj = (m.deserialize_cdr if v == 2 else m.deserialize_ros1)(
            msg.data, schemas._ros2_name(schema.name))
        assert obj.header.stamp.sec == 7
        assert schema.name.split("/")[-1] == chans[chan.topic].split("/")[-1]
