"""The Zenoh side of ``nerve bridge``: session setup, key expressions, the
per-message header and the channel description (docs/bridge.md is the
specification others can speak).

The data path that speaks this protocol is the Rust program nerve-bridge-rs
(rust/nerve-bridge/src/wire.rs holds its side of these formats). This
module keeps what Python still needs of it: the session setup for `nerve
bridge --ros2` (rmw_zenoh's key expressions) and `nerve ls --remote`, the
description that ls decodes, and the header codec, with which the tests'
Zenoh peers speak to the Rust bridge as another implementation would.

Key expressions, for domain D, a bridge named HOST and a channel NAME::

    nerve/D/data/HOST/NAME   the messages (payload = the message bytes,
                             attachment = the 32-byte header below)
    nerve/D/live/HOST/NAME   liveliness token while HOST exports NAME
    nerve/D/meta/HOST/NAME   queryable: the channel's description (JSON)
    nerve/D/node/HOST/ZID    liveliness token of the bridge HOST, Zenoh
                             session id ZID (duplicate-id detection)
"""

from __future__ import annotations

import base64
import json
import re
import struct
import sys
import time
from array import array
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import zenoh

import nerve
from nerve import _nerve

#: Version of the header and of the description.
WIRE_VERSION = 1
# Header in the Zenoh attachment of every data sample, little-endian:
#   magic "NV" (2 bytes), version (u8), flags (u8), reserved (u32, 0),
#   origin sequence number (u64), origin commit time as CLOCK_REALTIME ns
#   (i64), origin channel epoch = its creation time, CLOCK_REALTIME ns (i64).
# flags 0: the payload is one message. flags BATCH: the payload is several
# messages back to back, and the header (whose seq and time are the first
# message's) is followed by one ENTRY per message: its sequence number,
# time and length. An exporter batches only messages that were already
# waiting when it sent the previous one, so batching never delays a
# message; it carries bursts of small messages at a fraction of the
# per-sample cost.
HEADER = struct.Struct("<2sBBIQqq")
ENTRY = struct.Struct("<Qqq")
MAGIC = b"NV"
BATCH = 0x1
_LITTLE = sys.byteorder == "little"
if array("q").itemsize != 8:  # the batch table is read and written as 8-byte items
    raise ImportError("nerve bridge needs 8-byte array('q') items")

#: How long (µs) a large message's fragments may wait for room in Zenoh's
#: transmission queue before the message is dropped (unless --config).
DROP_FRAGMENTS_WAIT_US = 250000

_CHUNK_BAD = re.compile(r"[^A-Za-z0-9_.-]")
_PORTED = ("tcp", "udp", "tls", "quic", "ws")
_PRIORITIES = ("REAL_TIME", "INTERACTIVE_HIGH", "INTERACTIVE_LOW", "DATA_HIGH", "DATA", "DATA_LOW", "BACKGROUND")


class BridgeError(Exception):
    """A usage or setup error with a message for the user."""


def short_error(e: BaseException) -> str:
    """Zenoh's error text without its Rust source locations."""
    s = str(e)
    s = re.sub(r" at /\S+\.rs:\d+\.?", "", s)
    return s.strip()


def prefix(domain: int) -> str:
    return f"nerve/{domain}"


def data_key(domain: int, host: str, name: str) -> str:
    return f"nerve/{domain}/data/{host}/{name}"


def live_key(domain: int, host: str, name: str) -> str:
    return f"nerve/{domain}/live/{host}/{name}"


def meta_key(domain: int, host: str, name: str) -> str:
    return f"nerve/{domain}/meta/{host}/{name}"


def check_endpoint(ep: str) -> None:
    """Refuse an endpoint that is not Zenoh's PROTO/ADDRESS syntax, or whose
    port is not a number in 1..65535, before Zenoh tries it."""
    core = ep.split("?", 1)[0].split("#", 1)[0]
    proto, sep, addr = core.partition("/")
    if not sep or not proto or not addr:
        raise BridgeError(f"bad endpoint {ep!r}: Zenoh endpoints are PROTOCOL/ADDRESS, "
                          "e.g. tcp/192.0.2.1:7447")
    if proto in _PORTED:
        host, colon, port = addr.rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise BridgeError(f"bad endpoint {ep!r}: {proto} needs HOST:PORT with a port in 1..65535")


@dataclass
class SessionOptions:
    """What the command line says about the Zenoh session. Flags override
    the configuration file; nothing is listened on or connected to unless
    given, and multicast scouting is off unless ``scout``."""

    config: Optional[str] = None
    listen: List[str] = field(default_factory=list)
    connect: List[str] = field(default_factory=list)
    scout: bool = False
    mode: Optional[str] = None


def make_config(opts: SessionOptions) -> zenoh.Config:
    """The Zenoh configuration: the file (any Zenoh JSON5 config), then the
    flags. Raises BridgeError with a readable message."""
    for ep in [*opts.listen, *opts.connect]:
        check_endpoint(ep)
    try:
        conf = zenoh.Config.from_file(opts.config) if opts.config else zenoh.Config()
    except Exception as e:  # zenoh raises ZError for unreadable / bad files
        raise BridgeError(f"bad --config {opts.config}: {short_error(e)}") from None

    def put(key: str, value: Any) -> None:
        try:
            conf.insert_json5(key, json.dumps(value))
        except Exception as e:
            raise BridgeError(f"bad {key} {value!r}: {short_error(e)}") from None

    default = zenoh.Config()

    def unset(key: str) -> bool:
        """The file leaves `key` at Zenoh's default: the bridge's own
        default applies."""
        try:
            return conf.get_json(key) == default.get_json(key)
        except Exception:
            return True

    if opts.mode:
        put("mode", opts.mode)
    elif unset("mode"):
        put("mode", "peer")
    # Nothing leaves the host unless asked: no multicast scouting unless
    # --scout, and no listening socket unless --listen or the file says so.
    put("scouting/multicast/enabled", bool(opts.scout))
    if opts.listen:
        put("listen/endpoints", opts.listen)
    elif unset("listen/endpoints"):
        put("listen/endpoints", [])
    if opts.connect:
        put("connect/endpoints", opts.connect)
    key = "transport/link/tx/queue/congestion_control/drop/max_wait_before_drop_fragments"
    if unset(key):
        # A large message goes in many fragments; Zenoh drops it when the
        # transmission queue stays full for this long (default 50 ms, too
        # short for an 8 MB image on a busy host). Only the bridge's
        # sending thread of that channel waits; local writers never do.
        put(key, DROP_FRAGMENTS_WAIT_US)
    if unset("transport/shared_memory/enabled"):
        # Zenoh's own shared-memory transport is for Zenoh peers on one
        # host; the bridge is for other hosts, and its segment files would
        # sit in /dev/shm beside the channels.
        put("transport/shared_memory/enabled", False)
    return conf


def open_session(opts: SessionOptions) -> zenoh.Session:
    conf = make_config(opts)
    try:
        return zenoh.open(conf)
    except Exception as e:
        why = short_error(e)
        if "Address already in use" in why:
            why += " (the port is taken: another nerve bridge or Zenoh program?)"
        raise BridgeError(f"cannot start Zenoh: {why}") from None


def connected(session: zenoh.Session) -> int:
    """How many peers and routers the session is connected to."""
    info = session.info
    return len(list(info.peers_zid())) + len(list(info.routers_zid()))


def wait_connected(session: zenoh.Session, timeout: float, want: int = 1) -> bool:
    """Wait (bounded) until the session has ``want`` peers or routers;
    whether it has at least one."""
    end = time.monotonic() + timeout
    while True:
        n = connected(session)
        if n >= want:
            return True
        if time.monotonic() >= end:
            return n > 0
        time.sleep(0.05)


# ---- time ---------------------------------------------------------------

def mono_to_real(t_mono: int) -> int:
    """A CLOCK_MONOTONIC time of this host as CLOCK_REALTIME ns (the form
    times travel in)."""
    return _nerve.mono_to_realtime_ns(t_mono)


def real_to_mono(t_real: int) -> int:
    """A CLOCK_REALTIME time (another host's, hence its clock's skew
    included) as this host's CLOCK_MONOTONIC ns."""
    return t_real - _nerve.mono_to_realtime_ns(0)


# ---- header -------------------------------------------------------------

def pack_header(seq: int, t_real: int, epoch: int) -> bytes:
    return HEADER.pack(MAGIC, WIRE_VERSION, 0, 0, seq, t_real, epoch)


def pack_table(table: "array[int]", epoch: int) -> bytes:
    """Attachment of a batch: ``table`` is an array('q') of (seq, t_real,
    len) per message, flat."""
    seq, t_real = table[0], table[1]
    if not _LITTLE:
        table = array("q", table)
        table.byteswap()
    return HEADER.pack(MAGIC, WIRE_VERSION, BATCH, 0, seq, t_real, epoch) + table.tobytes()


def pack_batch(entries: Sequence[tuple], epoch: int) -> bytes:
    """Attachment of a batch: entries are (seq, t_real, len)."""
    return pack_table(array("q", [x for e in entries for x in e]), epoch)


def unpack_table(att: Optional[bytes], payload_len: int) -> tuple:
    """(epoch, table) of a sample: table is an array('q') of (seq, t_real,
    len) per message, flat, the messages lying back to back in the
    payload. ValueError for a missing or bad header, or a batch table that
    does not match the payload (sequence numbers not increasing, lengths
    not adding up to the payload's)."""
    if att is None or len(att) < HEADER.size:
        raise ValueError("missing or short header")
    magic, ver, flags, _res, seq, t_real, epoch = HEADER.unpack_from(att)
    if magic != MAGIC or ver != WIRE_VERSION or seq == 0 or seq >= 1 << 63 or flags & ~BATCH:
        raise ValueError("bad header")
    if not flags & BATCH:
        if len(att) != HEADER.size:
            raise ValueError("bad header length")
        return epoch, array("q", (seq, t_real, payload_len))
    rest = len(att) - HEADER.size
    if rest <= 0 or rest % ENTRY.size:
        raise ValueError("bad batch table")
    table = array("q")
    table.frombytes(memoryview(att)[HEADER.size:])
    if not _LITTLE:
        table.byteswap()
    seqs, lens = table[0::3], table[2::3]
    if seqs[0] != seq or any(a >= b for a, b in zip(seqs, seqs[1:])):
        raise ValueError("bad batch entry: sequence numbers not increasing")
    if min(lens) < 0 or sum(lens) != payload_len:
        raise ValueError("batch table does not match the payload")
    return epoch, table


def unpack_header(att: Optional[bytes], payload_len: int) -> tuple:
    """(epoch, [(seq, t_real, offset, len)...]) of a sample (unpack_table
    as tuples)."""
    epoch, table = unpack_table(att, payload_len)
    out = []
    off = 0
    for i in range(0, len(table), 3):
        out.append((table[i], table[i + 1], off, table[i + 2]))
        off += table[i + 2]
    return epoch, out


# ---- description --------------------------------------------------------

@dataclass
class Description:
    """What a host says about a channel it exports (the queryable's JSON)."""

    host: str
    name: str
    slots: int
    data_size: int
    type: Optional[str]
    encoding: Optional[str]
    schema: Optional[bytes]
    epoch: int = 0
    head_seq: int = 0
    rate_hz: float = 0.0

    def to_json(self) -> str:
        return json.dumps({
            "version": WIRE_VERSION, "host": self.host, "name": self.name,
            "slots": self.slots, "data_size": self.data_size,
            "type": self.type, "encoding": self.encoding,
            "schema_base64": base64.b64encode(self.schema).decode() if self.schema else None,
            "epoch": self.epoch, "head_seq": self.head_seq, "rate_hz": round(self.rate_hz, 3),
        }, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Description":
        """Parse and validate; ValueError with the reason."""
        try:
            d = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"not JSON: {e}") from None
        if not isinstance(d, dict) or d.get("version") != WIRE_VERSION:
            raise ValueError("not a nerve channel description of version 1")

        def typed(key: str, kind: type, optional: bool = False) -> Any:
            v = d.get(key)
            if v is None and optional:
                return None
            if not isinstance(v, kind) or isinstance(v, bool):
                raise ValueError(f"field {key!r} missing or not {kind.__name__}")
            return v

        name, host = typed("name", str), typed("host", str)
        if not _valid_name(name) or not _CHUNK_BAD.sub("", host) == host or not host:
            raise ValueError(f"bad channel name {name!r} or host {host!r}")
        slots, size = typed("slots", int), typed("data_size", int)
        if not 1 <= slots <= 1 << 32 or not 1 <= size <= 1 << 40:
            raise ValueError("geometry out of range")
        schema_b64 = typed("schema_base64", str, True)
        try:
            schema = base64.b64decode(schema_b64, validate=True) if schema_b64 else None
        except ValueError:
            raise ValueError("schema_base64 is not base64") from None
        rate = d.get("rate_hz", 0.0)
        return cls(host=host, name=name, slots=slots, data_size=size,
                   type=typed("type", str, True), encoding=typed("encoding", str, True),
                   schema=schema, epoch=int(d.get("epoch") or 0),
                   head_seq=int(d.get("head_seq") or 0),
                   rate_hz=float(rate) if isinstance(rate, (int, float)) else 0.0)


def _valid_name(name: str) -> bool:
    try:
        _nerve.name_check(name)
    except nerve.Error:
        return False
    return True


def query_descriptions(session: zenoh.Session, selector: str, timeout: float) -> List[tuple]:
    """Ask every queryable matching ``selector`` for its description; a
    list of (key, Description or error text). Bounded by ``timeout``."""
    out: List[tuple] = []
    try:
        replies = session.get(selector, timeout=timeout)
        for reply in replies:
            ok = reply.ok
            if ok is None:
                continue
            try:
                out.append((str(ok.key_expr), Description.from_json(ok.payload.to_string())))
            except ValueError as e:
                out.append((str(ok.key_expr), str(e)))
    except Exception as e:  # a closed session, a bad selector
        raise BridgeError(f"query {selector}: {short_error(e)}") from None
    return out


def qos(priority: str = "data", express: bool = False) -> Dict[str, Any]:
    """Publisher settings of the bridge: newest first, never back-pressure
    (congestion control DROP: a full transmission queue drops the sample
    rather than blocking the bridge, and so its local readers)."""
    prio = {n.lower(): getattr(zenoh.Priority, n) for n in _PRIORITIES}
    if priority not in prio:
        raise BridgeError(f"bad priority {priority!r}: one of {', '.join(sorted(prio))}")
    return dict(congestion_control=zenoh.CongestionControl.DROP, priority=prio[priority], express=express)

