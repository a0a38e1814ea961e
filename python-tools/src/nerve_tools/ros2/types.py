"""ROS 2 messages on nerve channels from Python, as objects, with no ROS 2
installation: the Python side of nerve's ROS 2 message types (the C++ side
is include/nerve/cxx/ros2.hpp; see docs/ros2.md).

Messages are ``rosbags`` message classes (``typestore().types[...]``),
encoded and decoded here as the C++ codec does; on the channel they are
CDR exactly as a ROS 2 node puts them on the DDS wire
(encapsulation header ``00 01 00 00``, zeros as padding), with the channel
metadata the C++ API and ``nerve ros2`` use: type ``pkg/msg/Name``, encoding
``cdr``, schema the full definition in MCAP's ros2msg form (the generator's
text, so a channel made here and one made by C++ are alike).

>>> from nerve_tools.ros2 import types as ros2
>>> T = ros2.typestore().types
>>> with ros2.create("robot.imu", "sensor_msgs/msg/Imu") as ch:
...     ch.put(T["sensor_msgs/msg/Imu"](...))
>>> with ros2.open("robot.imu") as ch:
...     msg = ch.get(newest=True)            # a copy; arrays view it
...     with ch.view(newest=True) as cloud:  # arrays view the ring
...         ...

Copies. ``put`` sizes the message, reserves that much in the ring and
serializes straight into the reservation (no intermediate buffer). ``get``
copies the message out of the ring once; its primitive arrays (``uint8[]``
such as Image.data and PointCloud2.data, ``float32[]``, ...) are numpy
arrays over that copy, not copies of their own. ``view`` copies nothing:
the arrays are read-only numpy views into the ring, valid inside the
``with`` block, which validates on exit (:class:`nerve.StaleView` if a
writer overwrote the message meanwhile).

Errors. Bytes that do not decode as the channel's type (truncated, lengths
past the end, a big-endian or unknown encapsulation) raise :class:`nerve.DecodeFailed`; a channel of another type
or encoding raises :class:`nerve.ChannelMismatch` at open. ROS 2 ``wstring``
fields are not supported by rosbags, so not here (the C++ types have them).
"""

from __future__ import annotations

import functools
import struct
from typing import Any, Dict, Iterator, Optional, Tuple, Union

import numpy as np
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

import nerve

from .. import ros2gen

__all__ = [
    "Ros2Channel",
    "channel_options",
    "create",
    "decode",
    "encode",
    "open",
    "schema",
    "typestore",
]

_STORES = {"jazzy": Stores.ROS2_JAZZY, "humble": Stores.ROS2_HUMBLE}
ENCAPSULATION = b"\x00\x01\x00\x00"


@functools.lru_cache(maxsize=None)
def typestore(distro: str = "jazzy") -> Typestore:
    """rosbags' type store of a ROS 2 distribution ("jazzy" or "humble")."""
    if distro not in _STORES:
        raise ValueError(f"unknown ROS 2 distribution {distro!r}; known: {', '.join(_STORES)}")
    return get_typestore(_STORES[distro])


@functools.lru_cache(maxsize=None)
def _registry(distro: str) -> ros2gen.Registry:
    return ros2gen.Registry(distro)


@functools.lru_cache(maxsize=256)
def schema(typename: str, distro: str = "jazzy") -> str:
    """The full definition of ``typename`` ("pkg/msg/Name"), as the C++
    types record it (ros2msg form)."""
    return ros2gen.ros2msg(_registry(distro), typename)


def channel_options(typename: str, distro: str = "jazzy") -> Dict[str, Any]:
    """``type``, ``encoding`` and ``schema`` keyword arguments of
    :func:`nerve.create` for a channel of ROS 2 messages ``typename``."""
    return {"type": typename, "encoding": "cdr", "schema": schema(typename, distro)}


@functools.lru_cache(maxsize=64)
def _store_for_schema(typename: str, text: bytes) -> Typestore:
    """A type store knowing ``typename`` as a channel's schema defines it
    (for types rosbags' store does not have)."""
    ts = get_typestore(Stores.EMPTY)
    ts.register(get_types_from_msg(text.decode(), typename))
    return ts


_FMT = {"bool": "?", "byte": "B", "char": "B", "int8": "b", "uint8": "B", "int16": "h",
        "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q",
        "float32": "f", "float64": "d"}
_STRUCT = {t: struct.Struct("<" + f) for t, f in _FMT.items()}
_DTYPE = {t: np.dtype("<" + f) if t != "bool" else np.dtype(np.bool_) for t, f in _FMT.items()}
_U32 = struct.Struct("<I")


def _align(pos: int, a: int) -> int:
    return (pos + a - 1) & ~(a - 1)


class _Codec:
    """CDR of one type store's messages, as include/nerve/cxx/ros2.hpp
    writes it (the field model is the generator's). Not rosbags' own
    serializer: rosbags 0.11.9 leaves out the alignment of an empty
    sequence of 8-byte numbers that Fast-CDR (rclpy, rmw_fastrtps) writes,
    (nor does rclpy: its serialize_message output may carry junk after the
    message, which rosbags refuses and nerve ignores).
    Positions are counted from the first byte after the encapsulation."""

    def __init__(self, reg: ros2gen.Registry, ts: Typestore) -> None:
        self.reg = reg
        self.ts = ts

    # -- encoding (buf None: only the size) --------------------------------
    def put(self, name: str, msg: Any, buf: Optional[memoryview], pos: int) -> int:
        for f in self.reg.get(name).fields:
            try:
                v = getattr(msg, f.name)
            except AttributeError:
                raise TypeError(f"{name}: the message has no field {f.name!r}") from None
            pos = self._field(f, v, buf, pos)
        return pos

    def _field(self, f: ros2gen.Field, v: Any, buf: Optional[memoryview], pos: int) -> int:
        if f.container is None:
            return self._one(f, v, buf, pos)
        n = len(v)
        if f.container == "array" and n != f.length:
            raise ValueError(f"{f.name}: {n} elements for an array of {f.length}")
        if f.container == "sequence":
            if f.length and n > f.length:
                raise ValueError(f"{f.name}: {n} elements over the bound {f.length}")
            pos = _align(pos, 4)
            if buf is not None:
                _U32.pack_into(buf, pos, n)
            pos += 4
        if f.base in _FMT:
            dt = _DTYPE[f.base]
            a = min(dt.itemsize, 8)
            if n:
                pos = _align(pos, a)
            nb = n * dt.itemsize
            if buf is not None and nb:
                arr = np.ascontiguousarray(v, dtype=dt)
                np.frombuffer(buf, np.uint8, nb, pos)[:] = arr.view(np.uint8).reshape(-1)
            return pos + nb
        for x in v:
            pos = self._one(f, x, buf, pos)
        return pos

    def _one(self, f: ros2gen.Field, v: Any, buf: Optional[memoryview], pos: int) -> int:
        t = f.base
        if t in _FMT:
            st = _STRUCT[t]
            pos = _align(pos, min(st.size, 8))
            if buf is not None:
                st.pack_into(buf, pos, v)
            return pos + st.size
        if t == "string":
            b = v.encode()
            if f.str_bound and len(b) > f.str_bound:
                raise ValueError(f"{f.name}: {len(b)} bytes over the bound {f.str_bound}")
            pos = _align(pos, 4)
            if buf is not None:
                _U32.pack_into(buf, pos, len(b) + 1)
                buf[pos + 4:pos + 4 + len(b)] = b
                buf[pos + 4 + len(b)] = 0
            return pos + 5 + len(b)
        if t == "wstring":
            raise TypeError(f"{f.name}: wstring fields are not supported in Python")
        return self.put(t, v, buf, pos)

    # -- decoding ------------------------------------------------------------
    def get(self, name: str, buf: memoryview, pos: int) -> Tuple[Any, int]:
        kw = {}
        for f in self.reg.get(name).fields:
            kw[f.name], pos = self._get_field(f, buf, pos)
        return self.ts.types[name](**kw), pos

    def _get_field(self, f: ros2gen.Field, buf: memoryview, pos: int) -> Tuple[Any, int]:
        if f.container is None:
            return self._get_one(f, buf, pos)
        if f.container == "array":
            n = f.length
        else:
            pos = _align(pos, 4)
            if pos + 4 > len(buf):
                raise nerve.DecodeFailed(f"{f.name}: the count runs past the end")
            (n,) = _U32.unpack_from(buf, pos)
            pos += 4
            if f.length and n > f.length:
                raise nerve.DecodeFailed(f"{f.name}: {n} elements over the bound {f.length}")
            if n > len(buf) - pos:
                raise nerve.DecodeFailed(f"{f.name}: {n} elements in {len(buf) - pos} bytes")
        if f.base in _FMT:
            dt = _DTYPE[f.base]
            if n:
                pos = _align(pos, min(dt.itemsize, 8))
            nb = n * dt.itemsize
            if pos + nb > len(buf):
                raise nerve.DecodeFailed(f"{f.name}: the elements run past the end")
            if f.base == "bool":
                raw = np.frombuffer(buf, np.uint8, n, pos)
                if n and raw.max() > 1:
                    raise nerve.DecodeFailed(f"{f.name}: a bool is not 0 or 1")
                return raw.view(np.bool_), pos + nb
            # A view of buf: no copy (numpy arrays over the ring or the copy).
            return np.frombuffer(buf, dt, n, pos), pos + nb
        out = []
        for _ in range(n):
            x, pos = self._get_one(f, buf, pos)
            out.append(x)
        return out, pos

    def _get_one(self, f: ros2gen.Field, buf: memoryview, pos: int) -> Tuple[Any, int]:
        t = f.base
        if t in _FMT:
            st = _STRUCT[t]
            pos = _align(pos, min(st.size, 8))
            if pos + st.size > len(buf):
                raise nerve.DecodeFailed(f"{f.name}: runs past the end")
            if t == "bool":
                b = buf[pos]
                if b > 1:
                    raise nerve.DecodeFailed(f"{f.name}: a bool is not 0 or 1")
                return bool(b), pos + 1
            return st.unpack_from(buf, pos)[0], pos + st.size
        if t == "string":
            pos = _align(pos, 4)
            if pos + 4 > len(buf):
                raise nerve.DecodeFailed(f"{f.name}: the length runs past the end")
            (n,) = _U32.unpack_from(buf, pos)
            pos += 4
            if n == 0:
                return "", pos
            if n > len(buf) - pos or buf[pos + n - 1] != 0:
                raise nerve.DecodeFailed(f"{f.name}: a string of {n} bytes without its NUL")
            raw = bytes(buf[pos:pos + n - 1])
            if b"\x00" in raw:
                raise nerve.DecodeFailed(f"{f.name}: a NUL inside the string")
            if f.str_bound and len(raw) > f.str_bound:
                raise nerve.DecodeFailed(f"{f.name}: over the bound {f.str_bound}")
            try:
                return raw.decode(), pos + n
            except UnicodeDecodeError as e:
                raise nerve.DecodeFailed(f"{f.name}: {e}") from None
        if t == "wstring":
            raise nerve.DecodeFailed(f"{f.name}: wstring fields are not supported in Python")
        return self.get(t, buf, pos)


@functools.lru_cache(maxsize=None)
def _codec(distro: str) -> _Codec:
    return _Codec(_registry(distro), typestore(distro))


@functools.lru_cache(maxsize=64)
def _codec_for_schema(typename: str, text: bytes) -> _Codec:
    """A codec (and rosbags classes) for a type defined only by a channel's
    schema."""
    reg = ros2gen.Registry("jazzy")
    sections = text.decode().split("=" * 80 + "\n")
    reg.messages[typename] = ros2gen.parse_msg(sections[0], typename)
    for sec in sections[1:]:
        head, _, body = sec.partition("\n")
        if not head.startswith("MSG: "):
            raise ValueError(f"bad schema section {head!r}")
        n = ros2gen.full_name(head[5:].strip(), "")
        reg.messages[n] = ros2gen.parse_msg(body, n)
    return _Codec(reg, _store_for_schema(typename, text))


def _codec_of(typename: str, text: Optional[bytes], distro: str) -> _Codec:
    c = _codec(distro)
    if typename in c.ts.fielddefs:
        return c
    if not text:
        raise KeyError(f"unknown ROS 2 message type {typename!r} and no schema to define it")
    return _codec_for_schema(typename, bytes(text))


def _size(msg: Any, typename: str, c: _Codec) -> int:
    return 4 + c.put(typename, msg, None, 0)


def _write(buf: memoryview, msg: Any, typename: str, c: _Codec) -> None:
    """Serialize into ``buf`` (exactly the message's size); the padding is
    zeroed first."""
    np.frombuffer(buf, np.uint8)[:] = 0
    buf[:4] = ENCAPSULATION
    c.put(typename, msg, buf[4:], 0)


def encode(msg: Any, typename: str, distro: str = "jazzy") -> bytes:
    """The CDR bytes of a rosbags message object of ``typename``."""
    c = _codec(distro)
    out = bytearray(_size(msg, typename, c))
    _write(memoryview(out), msg, typename, c)
    return bytes(out)


def _decode(data: Union[bytes, memoryview], typename: str, c: _Codec) -> Any:
    mv = memoryview(data)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    if len(mv) < 4 or bytes(mv[:2]) != b"\x00\x01":
        raise nerve.DecodeFailed(
            f"{typename}: not little-endian CDR (encapsulation {bytes(mv[:4]).hex() or 'missing'})")
    body = mv[4:]
    try:
        msg, pos = c.get(typename, body, 0)
    except (struct.error, ValueError) as e:
        if isinstance(e, nerve.Error):
            raise
        raise nerve.DecodeFailed(f"{typename}: {e}") from None
    # Bytes after the message are ignored, as ros2.hpp says why.
    return msg


def decode(data: Union[bytes, memoryview], typename: str, distro: str = "jazzy",
           schema_text: Optional[bytes] = None) -> Any:
    """A rosbags message object from CDR bytes; its primitive arrays are
    numpy views of ``data``. Raises :class:`nerve.DecodeFailed`."""
    return _decode(data, typename, _codec_of(typename, schema_text, distro))


class Ros2Channel:
    """A nerve channel of ROS 2 messages of one type (made by :func:`create`
    or :func:`open`); a context manager that closes the channel."""

    def __init__(self, ch: nerve.Channel, typename: str, codec: "_Codec") -> None:
        self.channel = ch
        self.typename = typename
        self._codec = codec

    def __enter__(self) -> "Ros2Channel":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    @property
    def message_class(self) -> Any:
        """The rosbags class of the channel's messages."""
        return self._codec.ts.types[self.typename]

    def put(self, msg: Any, timeout: Optional[float] = None) -> int:
        """Publish ``msg``, serialized straight into a reservation; returns
        its sequence number."""
        n = _size(msg, self.typename, self._codec)
        res = self.channel.reserve(n, timeout=timeout)
        with res as buf:
            _write(buf, msg, self.typename, self._codec)
        return int(res.seq)

    def get(self, **kw: Any) -> Optional[Any]:
        """One message as an object (a copy out of the ring), or None when
        there is nothing (new); keyword arguments as
        :meth:`nerve.Channel.get` (``newest``, ``wait``, ``timeout``, ...).
        Raises :class:`nerve.DecodeFailed` for bytes that do not decode
        (the message is consumed)."""
        m = self.channel.get(**kw)
        if m is None:
            return None
        return _decode(m.data, self.typename, self._codec)

    def view(self, **kw: Any) -> "_View":
        """``with ch.view(...) as msg:`` a message whose arrays are
        read-only numpy views into the ring (None when there is nothing
        new); validated when the block ends. Arguments as :meth:`get`."""
        return _View(self, self.channel.view(**kw))

    def follow(self, **kw: Any) -> Iterator[Any]:
        """Messages as they arrive (see :meth:`nerve.Channel.follow`)."""
        for m in self.channel.follow(**kw):
            yield _decode(m.data, self.typename, self._codec)


class _View:
    def __init__(self, rc: Ros2Channel, v: nerve.View) -> None:
        self._rc = rc
        self._v = v

    def __enter__(self) -> Optional[Any]:
        m = self._v.__enter__()
        if m is None:
            return None
        try:
            return _decode(m.data, self._rc.typename, self._rc._codec)
        except BaseException as e:
            self._v.__exit__(type(e), e, e.__traceback__)
            raise

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        self._v.__exit__(et, ev, tb)


def _check(ch: nerve.Channel, typename: Optional[str]) -> Tuple[str, Optional[bytes]]:
    md = ch.metadata
    if md.encoding != "cdr" or not md.type or md.type.count("/") != 2:
        ch.close()
        raise nerve.ChannelMismatch(
            f"{ch.name!r} carries {md.type or 'no type'!s} as {md.encoding or 'no encoding'!s}, "
            "not ROS 2 messages (encoding cdr, type pkg/msg/Name)")
    if typename is not None and md.type != typename:
        ch.close()
        raise nerve.ChannelMismatch(f"{ch.name!r} carries {md.type}, not {typename}")
    return md.type, md.schema


def create(name: str, typename: str, slots: Optional[int] = None, size: Optional[int] = None,
           mode: Optional[int] = None, exist_ok: bool = False,
           distro: str = "jazzy") -> Ros2Channel:
    """Create channel ``name`` for ROS 2 messages ``typename`` (recording
    the type, ``cdr`` and the definition) and open it for writing;
    geometry as :func:`nerve.create`."""
    c = _codec(distro)
    if typename not in c.ts.fielddefs:
        raise KeyError(f"unknown ROS 2 message type {typename!r} in the {distro} store")
    ch = nerve.create(name, slots=slots, size=size, mode=mode, exist_ok=exist_ok,
                      **channel_options(typename, distro))
    return Ros2Channel(ch, typename, c)


def open(name: str, typename: Optional[str] = None, write: bool = False,
         distro: str = "jazzy") -> Ros2Channel:
    """Open channel ``name`` of ROS 2 messages (of ``typename`` if given,
    else of whatever type it records). Raises :class:`nerve.ChannelMismatch`
    when it carries something else. A type rosbags does not know is
    defined from the channel's schema."""
    ch = nerve.open(name, write=write)
    t, text = _check(ch, typename)
    try:
        c = _codec_of(t, text, distro)
    except Exception as e:  # rosbags raises its own parse errors
        ch.close()
        raise nerve.ChannelMismatch(f"{name!r}: cannot use the definition of {t}: {e}") from None
    return Ros2Channel(ch, t, c)
