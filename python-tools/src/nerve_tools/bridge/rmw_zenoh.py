"""ROS 2 over rmw_zenoh for ``nerve bridge --ros2`` (docs/ros.md, "ROS 2
over rmw_zenoh").

Maps nerve channels with encoding ``cdr`` and a ROS 2 type onto the wire
protocol of rmw_zenoh (its docs/design.md), written from its documented
facts:

- data key ``<domain>/<topic without leading />/<pkg>::msg::dds_::<Name>_/RIHS01_<hex>``,
  payload the CDR bytes as they are (4-byte encapsulation header included);
- attachment of 33 bytes, little-endian: int64 sequence number, int64
  source timestamp (CLOCK_REALTIME ns), one byte GID length (16), the GID;
- liveliness tokens ``@ros2_lv/<domain>/<zid>/<node id>/<entity id>/<NN|MP|MS>/
  <enclave>/<namespace>/<node>[/<topic>/<type>/<hash>/<qos>]``, names mangled
  (``/`` -> ``%``, an empty namespace or enclave is ``%``).

Type hashes (REP-2011, RIHS01) come from rosbags' ROS 2 type store
(``hash_rihs01``) or from the user (``--ros2-hash TYPE=RIHS01_...``).
Export: a channel matching an --export glob becomes a topic of node
``nerve_bridge`` (channel ``robot.imu`` is topic ``/robot/imu``). Import: a
ROS 2 publisher (``MP`` token) whose channel name (topic ``/a/b`` is
channel ``a.b``) matches an --import glob becomes that channel (type ``pkg/msg/Name``, encoding ``cdr``, schema the
message definition when rosbags knows it). Channels created by an import
are never exported and our own publishers are never imported: no loops.
"""

from __future__ import annotations

import os
import re
import select
import struct
import sys
import threading
import time
from typing import Callable, Dict, Optional, Sequence, Set, Tuple

import zenoh

import nerve
import nerve.bridge as kernel

from .. import ros2gen
from .wire import mono_to_real, real_to_mono, short_error

ADMIN = "@ros2_lv"
GID_LEN = 16
ATTACHMENT = struct.Struct("<qqB16s")  # 33 bytes
# rmw_zenoh's QoS string with every field at its default except the depth
# (reliable, volatile, keep last 10 as rclcpp's default publisher).
DEFAULT_QOS = "::,10:,:,:,,"
NODE_NAME = "nerve_bridge"
SCAN_S = 0.5
READ_SLICE_S = 0.25
PUT_TIMEOUT_S = 0.05
_HASH_RE = re.compile(r"^RIHS01_[0-9a-f]{64}$")
_TYPE_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)/(?:msg/)?([A-Za-z][A-Za-z0-9_]*)$")
_DDS_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)::msg::dds_::([A-Za-z][A-Za-z0-9_]*)_$")


class Ros2Error(Exception):
    """Bad input for the ROS 2 mapping (type, hash, name)."""


# ---- names ---------------------------------------------------------------

def ros_type(type_name: str) -> Optional[str]:
    """``pkg/msg/Name`` (or ``pkg/Name``) as ``pkg/msg/Name``; None if not a message type."""
    m = _TYPE_RE.match(type_name or "")
    return f"{m.group(1)}/msg/{m.group(2)}" if m else None


def dds_type(type_name: str) -> str:
    t = ros_type(type_name)
    if t is None:
        raise Ros2Error(f"not a ROS 2 message type: {type_name!r}")
    pkg, _, name = t.split("/")
    return f"{pkg}::msg::dds_::{name}_"


def from_dds_type(dds: str) -> Optional[str]:
    m = _DDS_RE.match(dds)
    return f"{m.group(1)}/msg/{m.group(2)}" if m else None


def mangle(name: str) -> str:
    return name.replace("/", "%") if name else "%"


def demangle(name: str) -> str:
    return name.replace("%", "/")


def topic_of_channel(name: str, domain: int = 0) -> str:
    """Channel ``robot.imu`` is topic ``/robot/imu`` (``-`` as ``_``); in
    domain N > 0, rmw_nerve's ``ros2-dN.robot.imu`` too: the bridge
    kernel's one rule (docs/bridge-kernel.md), as every bridge maps it."""
    return kernel.topic_of_channel(name, domain)


def channel_of_topic(topic: str) -> str:
    """Topic ``/robot/imu`` is channel ``robot.imu`` (the bridge kernel's
    rule); nerve.InvalidArgument when that is no channel name."""
    return kernel.channel_of_topic(topic)


def data_key(domain: int, topic: str, type_name: str, type_hash: str) -> str:
    return f"{domain}/{topic.strip('/')}/{dds_type(type_name)}/{type_hash}"


def node_token(domain: int, zid: str, node_id: int, node: str, namespace: str = "") -> str:
    return f"{ADMIN}/{domain}/{zid}/{node_id}/{node_id}/NN/%/{mangle(namespace)}/{node}"


def endpoint_token(domain: int, zid: str, node_id: int, entity_id: int, kind: str, node: str,
                   topic: str, type_name: str, type_hash: str, qos: str = DEFAULT_QOS,
                   namespace: str = "") -> str:
    return (f"{ADMIN}/{domain}/{zid}/{node_id}/{entity_id}/{kind}/%/{mangle(namespace)}/{node}/"
            f"{mangle('/' + topic.strip('/'))}/{dds_type(type_name)}/{type_hash}/{qos}")


def parse_token(key: str) -> Optional[dict]:
    """A publisher/subscription token as a dict (domain, zid, kind, topic,
    type, dds_type, hash, qos, node); None for other tokens."""
    parts = key.split("/")
    if len(parts) != 13 or parts[0] != ADMIN or parts[5] not in ("MP", "MS"):
        return None
    t = from_dds_type(parts[10])
    if t is None or not parts[1].isdigit():
        return None
    return dict(domain=int(parts[1]), zid=parts[2], kind=parts[5], node=parts[8],
                topic=demangle(parts[9]), type=t, dds_type=parts[10], hash=parts[11], qos=parts[12])


# ---- attachment ----------------------------------------------------------

def pack_attachment(seq: int, t_real: int, gid: bytes) -> bytes:
    if len(gid) != GID_LEN:
        raise Ros2Error(f"GID must be {GID_LEN} bytes, not {len(gid)}")
    return ATTACHMENT.pack(seq, t_real, GID_LEN, gid)


def unpack_attachment(att: Optional[bytes]) -> Tuple[int, int, bytes]:
    """(sequence number, source timestamp ns, GID); ValueError if malformed."""
    if att is None or len(att) != ATTACHMENT.size:
        raise ValueError(f"attachment of {0 if att is None else len(att)} bytes, "
                         f"expected {ATTACHMENT.size}")
    seq, t, n, gid = ATTACHMENT.unpack(att)
    if n != GID_LEN:
        raise ValueError(f"GID length {n}, expected {GID_LEN}")
    return seq, t, gid


# ---- types ---------------------------------------------------------------

class Types:
    """RIHS01 hashes and message definitions, from rosbags' ROS 2 type store,
    the channel's schema, or user overrides."""

    def __init__(self, overrides: Optional[Dict[str, str]] = None) -> None:
        from rosbags.typesys import Stores, get_typestore
        self.store = get_typestore(Stores.ROS2_JAZZY)
        self.overrides: Dict[str, str] = {}
        for k, v in (overrides or {}).items():
            t = ros_type(k)
            if t is None:
                raise Ros2Error(f"--ros2-hash: not a ROS 2 message type: {k!r}")
            if not _HASH_RE.match(v):
                raise Ros2Error(f"--ros2-hash: {v!r} is not RIHS01_ and 64 hex digits")
            self.overrides[t] = v
        self.lock = threading.Lock()

    def type_hash(self, type_name: str, schema: Optional[str] = None) -> str:
        t = ros_type(type_name)
        if t is None:
            raise Ros2Error(f"not a ROS 2 message type: {type_name!r}")
        if t in self.overrides:
            return self.overrides[t]
        with self.lock:
            if t not in self.store.fielddefs and schema:
                from rosbags.typesys import get_types_from_msg
                try:
                    self.store.register(get_types_from_msg(schema, t))
                except Exception as e:
                    raise Ros2Error(f"{t}: cannot parse the schema as a .msg definition: {e}") from e
            if t not in self.store.fielddefs:
                raise Ros2Error(f"{t}: unknown type; give its hash with --ros2-hash {t}=RIHS01_...")
            return self.store.hash_rihs01(t)

    def definition(self, type_name: str) -> Optional[str]:
        t = ros_type(type_name)
        with self.lock:
            if t is None or t not in self.store.fielddefs:
                return None
            return ros2gen.with_store_defaults(self.store.generate_msgdef(t, ros_version=2)[0], t)


def parse_hash_overrides(items: Sequence[str]) -> Dict[str, str]:
    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep:
            raise Ros2Error(f"--ros2-hash wants TYPE=RIHS01_<hex>, not {it!r}")
        out[k] = v
    return out


# ---- the bridge ----------------------------------------------------------

class _Export:
    def __init__(self, br: "Ros2Bridge", name: str, entity_id: int) -> None:
        self.br, self.name = br, name
        self.ch = nerve.open(name)
        meta = self.ch.metadata
        self.type = ros_type(meta.type)
        self.hash = br.types.type_hash(meta.type, meta.schema)
        self.gid = os.urandom(GID_LEN)
        self.seq = 0
        self.sent = 0
        self.topic = topic_of_channel(name, br.domain)
        self.key = data_key(br.domain, self.topic, self.type, self.hash)
        s = br.session
        self.pub = s.declare_publisher(self.key)
        self.token = s.liveliness().declare_token(
            endpoint_token(br.domain, br.zid, br.node_id, entity_id, "MP", br.node, self.topic,
                           self.type, self.hash))
        self.ch.seek(self.ch.stat().head_seq)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"ros2-export-{name}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                m = self.ch.get(wait=True, timeout=READ_SLICE_S)
            except nerve.Timeout:
                continue  # a quiet slice: look at the stop flag, wait again
            except nerve.Error as e:
                self.br.report(f"{self.name}: export stopped: {e}")
                return
            if m is None:
                continue
            self.seq += 1
            try:
                self.pub.put(bytes(m.data), attachment=pack_attachment(self.seq, mono_to_real(m.time_ns), self.gid))
                self.sent += 1
            except Exception as e:  # Zenoh closed under us
                self.br.report(f"{self.name}: put failed: {short_error(e)}", once="put")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(READ_SLICE_S * 4 + 1)
        for x in (self.token, self.pub):
            try:
                x.undeclare()
            except Exception:
                pass
        self.ch.close()


class _Import:
    def __init__(self, br: "Ros2Bridge", name: str, tok: dict, key: str) -> None:
        self.br, self.name, self.tok = br, name, tok
        self.received = self.forwarded = self.dropped = 0
        schema = br.types.definition(tok["type"])
        self.w = nerve.create(name, slots=br.slots, size=br.size, type=tok["type"], encoding="cdr",
                              schema=schema, exist_ok=True)
        m = self.w.metadata
        if (m.type, m.encoding) != (tok["type"], "cdr"):
            self.w.close()
            raise Ros2Error(f"{name}: the local channel has type {m.type!r}, encoding {m.encoding!r}; "
                            f"the ROS 2 topic is {tok['type']} over cdr")
        br.imported.add(name)
        self.sub = br.session.declare_subscriber(key, self._on_sample)

    def _on_sample(self, sample: zenoh.Sample) -> None:
        self.received += 1
        att = sample.attachment
        try:
            _, t_real, _ = unpack_attachment(att.to_bytes() if att is not None else None)
        except ValueError as e:
            self.dropped += 1
            self.br.report(f"{self.name}: message with a bad attachment dropped ({e})", once="att")
            return
        data = sample.payload.to_bytes()
        try:
            self.w.put_at(data, real_to_mono(t_real), timeout=PUT_TIMEOUT_S)
            self.forwarded += 1
        except (nerve.Error, ValueError) as e:
            self.dropped += 1
            self.br.report(f"{self.name}: local put failed: {e}", once="put")

    def close(self) -> None:
        try:
            self.sub.undeclare()
        except Exception:
            pass
        self.w.close()


class Ros2Bridge:
    """Exports and imports between nerve channels and rmw_zenoh topics on
    one Zenoh session (``nerve bridge --ros2``)."""

    def __init__(self, session: zenoh.Session, domain: int, exports: Sequence[str],
                 imports: Sequence[str], types: Types, node: str = NODE_NAME,
                 slots: int = 16, size: int = 1 << 20) -> None:
        self.session, self.domain, self.types = session, domain, types
        self.export_globs, self.import_globs = list(exports), list(imports)
        for g in self.export_globs + self.import_globs:
            try:
                kernel.glob_check(g)
            except nerve.Error as e:
                raise Ros2Error(f"glob {g!r}: {e}") from None
        self.node, self.slots, self.size = node, slots, size
        self.zid = str(session.info.zid())
        self.node_id = 0
        self._next_entity = 1
        self.exports: Dict[str, _Export] = {}
        self.imports: Dict[str, _Import] = {}
        self.imported: Set[str] = set()
        self.failed: Set[str] = set()
        self._said: Set[str] = set()
        self.lock = threading.Lock()
        # The exported channels' directory: inotify on /dev/shm, or a scan
        # every 500 ms without it (the bridge kernel's ChannelDir).
        self.dir = kernel.ChannelDir(self.export_globs) if self.export_globs else None
        self.node_tok = session.liveliness().declare_token(node_token(domain, self.zid, self.node_id, node))
        self.live_sub = None

    def report(self, msg: str, once: Optional[str] = None) -> None:
        if once is not None:
            if (once, msg) in self._said:
                return
            self._said.add((once, msg))
        print(f"nerve bridge --ros2: {msg}", file=sys.stderr, flush=True)

    def start(self) -> None:
        if self.import_globs:
            self.live_sub = self.session.liveliness().declare_subscriber(
                f"{ADMIN}/{self.domain}/**", self._on_live, history=True)

    def _on_live(self, sample: zenoh.Sample) -> None:
        if sample.kind != zenoh.SampleKind.PUT:
            return
        tok = parse_token(str(sample.key_expr))
        if tok is None or tok["kind"] != "MP" or tok["zid"] == self.zid or tok["domain"] != self.domain:
            return
        try:
            name = channel_of_topic(tok["topic"])
        except nerve.Error as e:
            self.report(f"topic {tok['topic']} not imported: {e}", once="name")
            return
        if not any(kernel.glob_match(g, name) for g in self.import_globs):
            return
        key = f"{self.domain}/{tok['topic'].strip('/')}/{tok['dds_type']}/{tok['hash']}"
        with self.lock:
            if name in self.imports or name in self.failed:
                return
            try:
                self.imports[name] = _Import(self, name, tok, key)
                self.report(f"importing ROS 2 topic {tok['topic']} ({tok['type']}) into channel {name}")
            except (nerve.Error, Ros2Error, ValueError) as e:
                self.failed.add(name)
                self.report(f"{name}: cannot import: {e}")

    def scan(self) -> None:
        """Export the channels that appeared, stop those that went (a
        replaced file: stopped, then exported again)."""
        if self.dir is None:
            return
        with self.lock:
            while True:
                try:
                    ev = self.dir.next()
                except nerve.Error as e:
                    self.report(f"cannot list channels: {e}", once="list")
                    return
                if ev is None:
                    return
                kind, name = ev
                if kind == "removed":
                    ex = self.exports.pop(name, None)
                    if ex is not None:
                        ex.close()
                    self.failed.discard(name)  # a new file is a new try
                elif name not in self.imported and name not in self.failed:
                    self._export(name)

    def _export(self, name: str) -> None:
        try:
            meta = nerve.open(name)
            m = meta.metadata
            meta.close()
        except nerve.Error:
            return
        if m.encoding != "cdr" or ros_type(m.type) is None:
            self.report(f"{name}: not exported to ROS 2: encoding {m.encoding!r}, type {m.type!r} "
                        "(wants cdr and pkg/msg/Name)", once="skip")
            self.failed.add(name)
            return
        try:
            self.exports[name] = _Export(self, name, self._next_entity)
            self._next_entity += 1
            self.report(f"exporting channel {name} as ROS 2 topic "
                        f"{topic_of_channel(name, self.domain)} ({ros_type(m.type)})")
        except (nerve.Error, Ros2Error) as e:
            self.failed.add(name)
            self.report(f"{name}: cannot export: {e}")

    def stats(self) -> dict:
        with self.lock:
            return {"ros2_exported": {n: e.sent for n, e in self.exports.items()},
                    "ros2_imported": {n: i.forwarded for n, i in self.imports.items()},
                    "ros2_dropped": sum(i.dropped for i in self.imports.values())}

    def run(self, stop: threading.Event, stats_s: Optional[float] = None,
            on_stats: Optional[Callable[[dict], None]] = None) -> None:
        next_stats = time.monotonic() + (stats_s or 0)
        while not stop.is_set():
            self.scan()
            if stats_s and on_stats and time.monotonic() >= next_stats:
                on_stats(self.stats())
                next_stats += stats_s
            if self.dir is None:
                stop.wait(SCAN_S)
            else:  # a change wakes it at once; the stop flag every SCAN_S
                select.select([self.dir], [], [], SCAN_S)

    def close(self) -> None:
        if self.live_sub is not None:
            try:
                self.live_sub.undeclare()
            except Exception:
                pass
        with self.lock:
            for x in list(self.exports.values()) + list(self.imports.values()):
                x.close()
            self.exports.clear()
            self.imports.clear()
        if self.dir is not None:
            self.dir.close()
        try:
            self.node_tok.undeclare()
        except Exception:
            pass
