"""Decode and encode a channel's messages by its metadata (encoding, type,
schema), as plain Python values (dicts, lists, numbers, strings), for
``nerve echo``, ``nerve pub``, ``nerve delay`` and the Foxglove bridge's
client publishing.

Encodings:

- ``json``: UTF-8 JSON (the schema, a JSON Schema, is not enforced);
- ``cdr`` (ROS 2) and ``ros1msg`` (ROS 1): the channel's type is a ROS
  message type; the schema is its .msg definition with dependencies (the
  ``ros2msg``/``ros1msg`` form MCAP uses, see :mod:`nerve_tools.codec.schemas`).
  Serialization is done by ``rosbags``; a type that is not in its ROS 2
  Humble / ROS 1 Noetic store is built from the schema;
- ``protobuf``: the type is the full message name (``pkg.Msg``), the schema
  a serialized ``FileDescriptorSet`` (``protoc --include_imports
  --descriptor_set_out``); done by the ``protobuf`` package;
- anything else (no encoding, ``raw``, an encoding nerve does not know):
  the bytes as they are.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import time
from typing import Any, List, Optional, Tuple, Union

import numpy as np

from .. import ros2gen
from .._text import escape, has_control
from ..codec import schemas

Bytes = Union[bytes, bytearray, memoryview]

ROS_ENCODINGS = ("cdr", "ros2msg", "ros1msg", "ros1")


class CodecError(Exception):
    """The channel's metadata does not allow decoding or encoding (no type,
    an unparsable schema), or a value does not fit the type."""


def _plain(v: Any) -> Any:
    """A rosbags message (dataclass), numpy value or list as plain Python."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _plain(getattr(v, f.name)) for f in dataclasses.fields(v)
                if not f.name.startswith("__")}
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


_INT = {"bool", "byte", "char", "int8", "uint8", "int16", "uint16", "int32",
        "uint32", "int64", "uint64"}
_FLOAT = {"float32", "float64"}
_NP = {"bool": np.bool_, "byte": np.uint8, "char": np.uint8, "int8": np.int8,
       "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16,
       "int32": np.int32, "uint32": np.uint32, "int64": np.int64,
       "uint64": np.uint64, "float32": np.float32, "float64": np.float64}


class Codec:
    """Decoder and encoder of one channel's messages."""

    def __init__(self, encoding: Optional[str], typename: Optional[str],
                 schema: Optional[bytes]) -> None:
        self.encoding = (encoding or "").strip()
        self.typename = typename or ""
        self.schema = bytes(schema or b"")
        self.kind = "raw"
        if self.encoding == "json":
            self.kind = "json"
        elif self.encoding in ROS_ENCODINGS:
            self.kind = "ros"
            self._init_ros()
        elif self.encoding == "protobuf":
            self.kind = "protobuf"
            self._init_protobuf()

    @classmethod
    def for_channel(cls, ch: Any) -> "Codec":
        m = ch.metadata
        return cls(m.encoding, m.type, m.schema)

    @property
    def raw(self) -> bool:
        return self.kind == "raw"

    # ---- ROS ---------------------------------------------------------------

    def _init_ros(self) -> None:
        if not self.typename:
            raise CodecError(f"a {self.encoding} channel needs a type (its ROS message type)")
        self._v = 2 if self.encoding in ("cdr", "ros2msg") else 1
        self._name = schemas._ros2_name(self.typename)
        ts = schemas.typestore(self._v)
        if self._name not in ts.types:
            if not self.schema:
                raise CodecError(f"unknown message type {self.typename!r} and the channel has no schema")
            try:
                ts = schemas._store_for_schema(self.typename, self._v, self.schema)
            except Exception as e:  # rosbags raises its own parse errors
                raise CodecError(f"cannot parse the {self.encoding} schema of "
                                 f"{self.typename!r}: {e}") from None
        self._ts = ts
        # Field defaults (ROS 2 only; ROS 1 has none): from the channel's
        # schema where it has one (a user's own .msg keeps its defaults),
        # else from the definitions of the store.
        self._defaults: dict = {}
        if self._v == 2:
            text = self.schema.decode("utf-8", "replace") if self.schema else \
                schemas.ros_schema(self._name).text.decode()
            try:
                self._defaults = ros2gen.schema_defaults(text, self._name)
            except (ros2gen.DefinitionError, ValueError):
                pass  # rosbags parsed the schema; without defaults, fields are zero

    def _to_ros(self, value: Any, typename: str, path: str) -> Any:
        ts = self._ts
        if typename not in ts.fielddefs:
            raise CodecError(f"{path or 'value'}: unknown type {typename!r}")
        if typename == "builtin_interfaces/msg/Time" and value == "now":
            ns = time.time_ns()
            value = {"sec": ns // 1_000_000_000, "nanosec": ns % 1_000_000_000}
        if value is None:
            value = {}
        if not isinstance(value, dict):
            raise CodecError(f"{path or 'value'}: {typename} needs a mapping, got {value!r}")
        _consts, fields = ts.fielddefs[typename]
        known = {f for f, _ in fields}
        extra = sorted(set(value) - known)
        if extra:
            raise CodecError(f"{path or typename}: no field {', '.join(map(repr, extra))} "
                             f"(fields: {', '.join(sorted(known))})")
        kw = {}
        defaults = self._defaults.get(typename, {})
        for fname, desc in fields:
            p = f"{path}.{fname}" if path else fname
            kw[fname] = self._field(value.get(fname, defaults.get(fname)), desc, p)
        return ts.types[typename](**kw)

    def _base(self, v: Any, typ: str, path: str) -> Any:
        if typ == "string" or typ == "wstring":
            if v is None:
                return ""
            if not isinstance(v, str):
                raise CodecError(f"{path}: a string is needed, got {v!r}")
            return v
        if typ in _FLOAT:
            if v is None:
                return 0.0
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise CodecError(f"{path}: a number is needed, got {v!r}")
            return float(v)
        if typ == "bool":
            if v is None:
                return False
            if not isinstance(v, (bool, int)):
                raise CodecError(f"{path}: true or false is needed, got {v!r}")
            return bool(v)
        if typ in _INT:
            if v is None:
                return 0
            if isinstance(v, bool) or not isinstance(v, int):
                raise CodecError(f"{path}: an integer is needed, got {v!r}")
            info = np.iinfo(_NP[typ])
            if not info.min <= v <= info.max:
                raise CodecError(f"{path}: {v} does not fit {typ}")
            return v
        raise CodecError(f"{path}: unsupported base type {typ!r}")

    def _field(self, v: Any, desc: Tuple[Any, Any], path: str) -> Any:
        kind, detail = desc
        k = int(kind)
        if k == 1:  # BASE: (type, max string length)
            return self._base(v, detail[0], path)
        if k == 2:  # NAME: a nested message
            return self._to_ros(v, detail, path)
        # ARRAY (3, fixed length) or SEQUENCE (4, bounded or not)
        sub, length = detail
        items = [] if v is None else v
        if isinstance(items, (str, bytes)) or not isinstance(items, (list, tuple)):
            raise CodecError(f"{path}: a list is needed, got {v!r}")
        if k == 3:
            if v is None:
                items = [None] * length
            elif len(items) != length:
                raise CodecError(f"{path}: {length} items are needed, got {len(items)}")
        elif length and len(items) > length:
            raise CodecError(f"{path}: at most {length} items, got {len(items)}")
        if int(sub[0]) == 1 and sub[1][0] in _NP:
            vals = [self._base(x, sub[1][0], f"{path}[{i}]") for i, x in enumerate(items)]
            return np.array(vals, dtype=_NP[sub[1][0]])
        return [self._field(x, sub, f"{path}[{i}]") for i, x in enumerate(items)]

    # ---- protobuf ------------------------------------------------------------

    def _init_protobuf(self) -> None:
        try:
            from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
        except ImportError:  # pragma: no cover - a pinned dependency
            raise CodecError("protobuf channels need the 'protobuf' package") from None
        if not self.typename:
            raise CodecError("a protobuf channel needs a type (the full message name)")
        if not self.schema:
            raise CodecError("a protobuf channel needs a schema (a FileDescriptorSet)")
        try:
            fds = descriptor_pb2.FileDescriptorSet.FromString(self.schema)
            pool = descriptor_pool.DescriptorPool()
            for fd in fds.file:
                pool.Add(fd)
            desc = pool.FindMessageTypeByName(self.typename)
        except Exception as e:
            raise CodecError(f"the protobuf schema does not describe {self.typename!r}: {e}") from None
        self._pb_class = message_factory.GetMessageClass(desc)

    # ---- the interface ---------------------------------------------------------

    def decode(self, data: Bytes) -> Any:
        """A message as plain Python values; raises CodecError (with the
        reason) when the bytes do not decode."""
        data = bytes(data)
        try:
            if self.kind == "json":
                return json.loads(data)
            if self.kind == "ros":
                if self._v == 2:
                    obj = self._ts.deserialize_cdr(data, self._name)
                else:
                    obj = self._ts.deserialize_ros1(data, self._name)
                return _plain(obj)
            if self.kind == "protobuf":
                from google.protobuf import json_format

                msg = self._pb_class.FromString(data)
                return json_format.MessageToDict(
                    msg, preserving_proto_field_name=True,
                    always_print_fields_with_no_presence=True)
        except CodecError:
            raise
        except Exception as e:
            raise CodecError(f"not a valid {self.encoding} {self.typename or 'message'}: "
                             f"{type(e).__name__}: {e}") from None
        return data

    def encode(self, value: Any) -> bytes:
        """A plain value (as from JSON or YAML) as message bytes; fields left
        out take their default (0, "", empty); a ROS Time field may be
        ``"now"``. For raw channels the value must be bytes or a string
        (published as UTF-8)."""
        if self.kind == "json":
            return json.dumps(value, separators=(",", ":")).encode()
        if self.kind == "ros":
            msg = self._to_ros(value, self._name, "")
            try:
                if self._v == 2:
                    return bytes(self._ts.serialize_cdr(msg, self._name))
                return bytes(self._ts.serialize_ros1(msg, self._name))
            except Exception as e:
                raise CodecError(f"cannot serialize {self.typename}: {e}") from None
        if self.kind == "protobuf":
            from google.protobuf import json_format

            try:
                return json_format.ParseDict(value, self._pb_class()).SerializeToString()
            except json_format.ParseError as e:
                raise CodecError(f"not a {self.typename}: {e}") from None
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        if isinstance(value, str):
            return value.encode()
        raise CodecError("a raw channel takes the bytes as given (a string), not a structured value")


def header_stamp_ns(value: Any) -> Optional[int]:
    """The ``header.stamp`` of a decoded message as wall-clock nanoseconds,
    when it has one (ROS ``std_msgs/Header``: sec + nanosec; protobuf
    ``google.protobuf.Timestamp`` as a dict: seconds + nanos)."""
    if not isinstance(value, dict):
        return None
    h = value.get("header")
    st = h.get("stamp") if isinstance(h, dict) else None
    if not isinstance(st, dict):
        return None
    if "sec" in st:
        return int(st.get("sec", 0)) * 1_000_000_000 + int(st.get("nanosec", st.get("nsec", 0)))
    if "seconds" in st:
        return int(st.get("seconds", 0)) * 1_000_000_000 + int(st.get("nanos", 0))
    return None


def field(value: Any, path: str) -> Any:
    """``a.b.c`` (list items by index, ``a.3.b``) of a decoded value;
    KeyError naming what is missing."""
    cur = value
    done: List[str] = []
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            where = ".".join(done) or "the message"
            have = ", ".join(sorted(cur)) if isinstance(cur, dict) else type(cur).__name__
            raise KeyError(f"{where} has no field {part!r} (it has: {have})")
        done.append(part)
    return cur


class Elided(str):
    """A placeholder printed as it is (not quoted) in YAML-like text."""


def strip_arrays(value: Any) -> Any:
    """Lists replaced by ``<N items>`` (``--no-arrays``)."""
    if isinstance(value, dict):
        return {k: strip_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return Elided(f"<{len(value)} items>")
    return value


def hexdump(data: bytes, limit: int = 256) -> str:
    shown = data[:limit]
    lines = []
    for off in range(0, len(shown), 16):
        chunk = shown[off:off + 16]
        hx = " ".join(f"{b:02x}" for b in chunk)
        asc = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)
        lines.append(f"{off:08x}  {hx:<47}  |{asc}|")
    if len(data) > limit:
        lines.append(f"... {len(data) - limit} more bytes")
    return "\n".join(lines)


def raw_value(data: bytes) -> Any:
    """A raw payload for display: its text when it is printable UTF-8,
    else a ``{"hex": ...}`` mapping."""
    try:
        text = data.decode()
        if all(c.isprintable() or c in "\t\n" for c in text):
            return text
    except UnicodeDecodeError:
        pass
    return {"size": len(data), "hex": data.hex()}


def jsonable(value: Any) -> Any:
    """JSON-safe: bytes as base64, NaN/inf as strings."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(value).decode()}
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    s = str(v)
    if isinstance(v, Elided):
        return s
    if (s == "" or s != s.strip() or any(c in s for c in ":#{}[],&*!|>'\"%@`\n")
            or has_control(s)
            or s.lower() in ("true", "false", "null", "yes", "no", "~")
            or _looks_numeric(s)):
        # Quoted as JSON writes it, with DEL and C1 escaped too: no decoded
        # string reaches the terminal with a control character in it.
        return '"' + escape(s, quote=True) + '"'
    return s


def _looks_numeric(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def to_yaml(value: Any, indent: int = 0) -> str:
    """YAML-like text as ``ros2 topic echo`` prints it: mappings one key a
    line, lists of numbers inline, lists of mappings as ``-`` items."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return pad + "{}"
        out = []
        for k, v in value.items():
            if isinstance(v, dict) and v:
                out.append(f"{pad}{escape(str(k))}:\n{to_yaml(v, indent + 1)}")
            elif isinstance(v, list) and v and any(isinstance(x, (dict, list)) for x in v):
                out.append(f"{pad}{escape(str(k))}:\n{to_yaml(v, indent + 1)}")
            else:
                out.append(f"{pad}{escape(str(k))}: {_inline(v)}")
        return "\n".join(out)
    if isinstance(value, list) and value and any(isinstance(x, (dict, list)) for x in value):
        out = []
        for v in value:
            if isinstance(v, (dict, list)) and v:
                body = to_yaml(v, indent + 1)
                out.append(f"{pad}- {body.lstrip()}")
            else:
                out.append(f"{pad}- {_inline(v)}")
        return "\n".join(out)
    return pad + _inline(value)


def _inline(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{escape(str(k))}: {_inline(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_inline(x) for x in v) + "]"
    if isinstance(v, (bytes, bytearray)):
        return _scalar(v.hex())
    return _scalar(v)


def parse_value(text: str) -> Any:
    """A value given on the command line or in a file: YAML (JSON is
    YAML), e.g. ``'{linear: {x: 0.5}}'`` or ``'{"x": 1}'``."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return _unyaml(YAML(typ="safe", pure=True).load(text))
    except YAMLError as e:
        raise CodecError(f"not JSON or YAML: {e}") from None


def _unyaml(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _unyaml(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_unyaml(x) for x in v]
    return v


def example_value(codec: Codec) -> Any:
    """The all-default value of a channel's type (``nerve pub --example``)."""
    if codec.kind == "ros":
        return _plain(codec._to_ros({}, codec._name, ""))
    if codec.kind == "protobuf":
        return codec.decode(b"")
    return None


__all__ = ["Codec", "CodecError", "example_value", "field", "header_stamp_ns",
           "hexdump", "jsonable", "parse_value", "raw_value", "strip_arrays", "to_yaml"]
