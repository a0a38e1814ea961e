"""Built-in schemas, so that common data is decoded and visualised out of the
box, and encode/decode helpers for them.

A nerve channel records what it carries in its metadata (type, encoding,
schema; see :func:`nerve.create`). Tools map it onto MCAP and Foxglove (see
``_common.to_mcap``). This module provides ready-made metadata for:

- JSON messages described by a JSON Schema (encoding ``json``);
- ROS 2 messages serialized as CDR (encoding ``cdr``, schema a ROS 2 .msg
  definition with its dependencies, the ``ros2msg`` form MCAP uses);
- ROS 1 messages (encoding ``ros1msg``, schema a ROS 1 .msg definition with
  its dependencies, the ``ros1msg`` form of ROS 1 bags and MCAP);

for any message type the `rosbags` library knows (ROS 2 Humble and ROS 1
Noetic), in particular :data:`BUILTIN_TYPES`. Serialization is done by
``rosbags``; nothing here reimplements CDR or ROS 1 serialization.

>>> import nerve, numpy as np
>>> from nerve_tools.codec import schemas
>>> with nerve.create("imu", **schemas.channel_options("sensor_msgs/msg/Imu")) as ch:
...     ch.put(schemas.encode(schemas.example("sensor_msgs/msg/Imu"), "sensor_msgs/msg/Imu"))
"""

from __future__ import annotations

import functools
import json
from typing import Any, Dict, NamedTuple, Optional, Union

import numpy as np
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from .. import ros2gen

__all__ = [
    "BUILTIN_TYPES",
    "Schema",
    "channel_options",
    "decode",
    "decode_json",
    "encode",
    "encode_json",
    "example",
    "json_schema",
    "ros_schema",
    "typestore",
]

#: The message types the tools are tested with, in their ROS 2 names.
BUILTIN_TYPES = (
    "sensor_msgs/msg/Imu",
    "sensor_msgs/msg/LaserScan",
    "sensor_msgs/msg/Image",
    "sensor_msgs/msg/PointCloud2",
)


class Schema(NamedTuple):
    """A schema as MCAP and Foxglove name it."""

    #: Type name: "sensor_msgs/msg/Imu" (ROS 2), "sensor_msgs/Imu" (ROS 1),
    #: the title of a JSON Schema.
    name: str
    #: Schema encoding: "ros2msg", "ros1msg" or "jsonschema".
    encoding: str
    #: The schema text.
    text: bytes


def _ros2_name(typename: str) -> str:
    """"sensor_msgs/Imu" -> "sensor_msgs/msg/Imu" (rosbags' spelling)."""
    parts = typename.split("/")
    if len(parts) == 2:
        return f"{parts[0]}/msg/{parts[1]}"
    return typename


def _ros1_name(typename: str) -> str:
    """"sensor_msgs/msg/Imu" -> "sensor_msgs/Imu" (ROS 1's spelling)."""
    parts = typename.split("/")
    if len(parts) == 3 and parts[1] == "msg":
        return f"{parts[0]}/{parts[2]}"
    return typename


def _ros_version(encoding: str) -> int:
    if encoding in ("cdr", "ros2msg"):
        return 2
    if encoding in ("ros1msg", "ros1"):
        return 1
    raise ValueError(f"not a ROS encoding: {encoding!r} (use 'cdr' or 'ros1msg')")


@functools.lru_cache(maxsize=None)
def typestore(ros_version: int = 2) -> Typestore:
    """The rosbags type store of ROS 2 Humble (2) or ROS 1 Noetic (1)."""
    return get_typestore(Stores.ROS2_HUMBLE if ros_version == 2 else Stores.ROS1_NOETIC)


@functools.lru_cache(maxsize=None)
def _ros2_registry() -> ros2gen.Registry:
    """The ROS 2 definitions of :func:`typestore` (2) as the generator reads them."""
    return ros2gen.Registry("humble")


def ros_schema(typename: str, ros_version: int = 2) -> Schema:
    """The MCAP schema of a ROS message type: its definition followed by the
    definitions it depends on, separated by '=' lines and "MSG: " headers
    (what ROS 1 bags, rosbag2's MCAP storage and Foxglove use)."""
    if ros_version == 2:
        # The generator's text: rosbags' generate_msgdef, plus the field
        # defaults its store drops (Quaternion's ``float64 w 1``).
        name = _ros2_name(typename)
        return Schema(name, "ros2msg", ros2gen.ros2msg(_ros2_registry(), name).encode())
    ts = typestore(ros_version)
    text, _md5 = ts.generate_msgdef(_ros2_name(typename), ros_version=ros_version)
    return Schema(_ros1_name(typename), "ros1msg", text.encode())


def json_schema(title: str, schema: Dict[str, Any]) -> Schema:
    """A JSON Schema (a dict, e.g. ``{"type": "object", "properties":
    {...}}``) as the schema of a ``json`` channel; ``title`` names it."""
    if not isinstance(schema, dict) or "type" not in schema:
        raise ValueError("a JSON Schema is an object with at least a 'type'")
    body = dict(schema)
    body.setdefault("title", title)
    return Schema(title, "jsonschema", json.dumps(body, sort_keys=True).encode())


def channel_options(
    typename: str, encoding: str = "cdr", schema: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """Keyword arguments of :func:`nerve.create` (``type``, ``encoding``,
    ``schema``) for a channel carrying ``typename``: a ROS message type with
    ``encoding`` "cdr" (ROS 2) or "ros1msg" (ROS 1), or a JSON type with
    ``encoding`` "json" and its JSON Schema as ``schema``."""
    if encoding == "json":
        if schema is None:
            return {"type": typename, "encoding": "json", "schema": None}
        s = json_schema(typename, schema)
        return {"type": s.name, "encoding": "json", "schema": s.text}
    s = ros_schema(typename, _ros_version(encoding))
    return {"type": s.name, "encoding": "cdr" if encoding == "ros2msg" else encoding, "schema": s.text}


def encode(msg: Any, typename: str, encoding: str = "cdr") -> bytes:
    """Serialize a rosbags message object (``encoding`` "cdr" or
    "ros1msg"), or any JSON-serializable object (``encoding`` "json")."""
    if encoding == "json":
        return encode_json(msg)
    v = _ros_version(encoding)
    ts = typestore(v)
    name = _ros2_name(typename)
    if v == 2:
        return bytes(ts.serialize_cdr(msg, name))
    return bytes(ts.serialize_ros1(msg, name))


@functools.lru_cache(maxsize=64)
def _store_for_schema(typename: str, ros_version: int, schema: bytes) -> Typestore:
    """A type store knowing ``typename`` as ``schema`` defines it (for types
    rosbags does not ship, or that a channel defines differently)."""
    ts = get_typestore(Stores.EMPTY)
    ts.register(get_types_from_msg(schema.decode(), _ros2_name(typename)))
    return ts


def decode(
    data: Union[bytes, memoryview],
    typename: str,
    encoding: str = "cdr",
    schema: Optional[bytes] = None,
) -> Any:
    """Deserialize a message: a rosbags message object for "cdr" and
    "ros1msg" (from the built-in type store, or from ``schema`` when the type
    is not in it), a Python object for "json"."""
    if encoding == "json":
        return decode_json(data)
    v = _ros_version(encoding)
    name = _ros2_name(typename)
    ts = typestore(v)
    if name not in ts.types:
        if not schema:
            raise KeyError(f"unknown message type {typename!r} and no schema given")
        ts = _store_for_schema(typename, v, bytes(schema))
    if v == 2:
        return ts.deserialize_cdr(data, name)
    return ts.deserialize_ros1(data, name)


def encode_json(obj: Any) -> bytes:
    """Compact UTF-8 JSON."""
    return json.dumps(obj, separators=(",", ":")).encode()


def decode_json(data: Union[bytes, memoryview]) -> Any:
    return json.loads(bytes(data))


def example(typename: str, ros_version: int = 2, seq: int = 0) -> Any:
    """A small, valid message of one of :data:`BUILTIN_TYPES` (for tests and
    demos): an IMU reading, a 16-ray scan, a 4x3 RGB image, a 5-point XYZ
    cloud. ``seq`` varies the values."""
    ts = typestore(ros_version)
    T = ts.types
    name = _ros2_name(typename)
    if ros_version == 2:
        stamp = T["builtin_interfaces/msg/Time"](sec=seq, nanosec=1000 * seq)
        header = T["std_msgs/msg/Header"](stamp=stamp, frame_id="base")
    else:
        stamp = T["builtin_interfaces/msg/Time"](sec=seq, nanosec=1000 * seq)
        header = T["std_msgs/msg/Header"](seq=seq, stamp=stamp, frame_id="base")
    f = float(seq)
    if name == "sensor_msgs/msg/Imu":
        V = T["geometry_msgs/msg/Vector3"]
        return T[name](
            header=header,
            orientation=T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0),
            orientation_covariance=np.zeros(9),
            angular_velocity=V(x=0.1 * f, y=0.0, z=0.0),
            angular_velocity_covariance=np.zeros(9),
            linear_acceleration=V(x=0.0, y=0.0, z=9.81),
            linear_acceleration_covariance=np.zeros(9),
        )
    if name == "sensor_msgs/msg/LaserScan":
        return T[name](
            header=header, angle_min=-1.0, angle_max=1.0, angle_increment=2.0 / 15,
            time_increment=0.0, scan_time=0.1, range_min=0.1, range_max=10.0,
            ranges=np.linspace(1.0, 2.0, 16, dtype=np.float32) + np.float32(f),
            intensities=np.ones(16, dtype=np.float32),
        )
    if name == "sensor_msgs/msg/Image":
        h, w = 3, 4
        data = (np.arange(h * w * 3, dtype=np.uint8) + np.uint8(seq % 256)).astype(np.uint8)
        return T[name](header=header, height=h, width=w, encoding="rgb8",
                       is_bigendian=0, step=w * 3, data=data)
    if name == "sensor_msgs/msg/PointCloud2":
        PF = T["sensor_msgs/msg/PointField"]
        fields = [PF(name=n, offset=4 * i, datatype=PF.FLOAT32, count=1)
                  for i, n in enumerate("xyz")]
        pts = np.arange(15, dtype=np.float32).reshape(5, 3) + np.float32(f)
        return T[name](header=header, height=1, width=5, fields=fields,
                       is_bigendian=False, point_step=12, row_step=60,
                       data=np.frombuffer(pts.tobytes(), np.uint8),
                       is_dense=True)
    raise KeyError(f"no example for {typename!r}; known: {', '.join(BUILTIN_TYPES)}")
