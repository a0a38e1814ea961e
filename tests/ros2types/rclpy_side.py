"""The rclpy side of test_ros2_types.py, run by the Python of the ROS 2
Jazzy venv (.venv-jazzy: rclpy and the ros-jazzy-*-msgs wheels, no nerve,
no rosbags). Reads JSON lines {"type": T, "fields": {...}, "cdr": HEX} on
stdin and answers one JSON line each:

  {"missing": true}                     the wheels have no class for T
  {"ser": HEX, "back": {...}}           ser: rclpy.serialization's bytes of
                                        the message built from "fields";
                                        back: the fields rclpy decodes from
                                        "cdr" (bytes nerve wrote)
  {"error": TEXT}                       rclpy refused the fields or bytes

A request {"type": T, "default": true} is answered {"fields": {...}}, the
fields of rclpy's default-constructed T (or {"missing": true}).
"""

import array
import importlib
import json
import sys

import numpy as np
from rclpy.serialization import deserialize_message, serialize_message
from rosidl_parser.definition import AbstractNestedType, BasicType, NamespacedType


def msg_class(typename):
    pkg, _, name = typename.split("/")
    try:
        return getattr(importlib.import_module(pkg + ".msg"), name)
    except (ImportError, AttributeError):
        return None


def ns_class(t):
    return getattr(importlib.import_module(".".join(t.namespaces)), t.name)


def conv(slot, v):
    if isinstance(slot, NamespacedType):
        return build(ns_class(slot), v)
    if isinstance(slot, AbstractNestedType):
        vt = slot.value_type
        if isinstance(vt, NamespacedType):
            return [build(ns_class(vt), x) for x in v]
        if isinstance(vt, BasicType) and vt.typename == "octet":
            return [bytes([x]) for x in v]
        return [conv(vt, x) for x in v]
    if isinstance(slot, BasicType) and slot.typename == "octet":
        return bytes([v])
    return v


def build(cls, d):
    m = cls()
    for (name, _), slot in zip(cls.get_fields_and_field_types().items(), cls.SLOT_TYPES):
        setattr(m, name, conv(slot, d[name]))
    return m


def plain(v):
    if hasattr(v, "get_fields_and_field_types"):
        return {f: plain(getattr(v, f)) for f in v.get_fields_and_field_types()}
    if isinstance(v, (np.ndarray, array.array)):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, bytes):
        return v[0]
    if isinstance(v, np.generic):
        return v.item()
    return v


def main():
    for line in sys.stdin:
        req = json.loads(line)
        cls = msg_class(req["type"])
        if cls is None:
            print(json.dumps({"missing": True}), flush=True)
            continue
        if req.get("default"):
            print(json.dumps({"fields": plain(cls())}), flush=True)
            continue
        try:
            ser = serialize_message(build(cls, req["fields"]))
            back = plain(deserialize_message(bytes.fromhex(req["cdr"]), cls))
            print(json.dumps({"ser": bytes(ser).hex(), "back": back}), flush=True)
        except Exception as e:  # noqa: BLE001 (reported to the test)
            print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)


if __name__ == "__main__":
    main()
