"""The export/import machinery of ``nerve bridge`` (docs/bridge.md).

- :class:`LocalChannel`: what the exporter and the importers of one local
  channel share: the sequence numbers the bridge itself put (never exported
  again: no loops) under a lock that the importer holds from its put until
  the number is recorded, so the exporter, which checks after reading, can
  never miss one.
- :class:`Exporter`: one thread per exported channel. Sleeps in nerve's
  blocking wait (no polling), then takes every message already waiting
  (one wake-up drains a burst into one batch) with the nerve reader API
  (a validated copy, or for large messages a zero-copy view copied once
  and validated before it is sent; a reader never blocks the local
  writer), publishes with congestion control DROP (a slow link never
  blocks the bridge), and announces the channel with a liveliness token
  and a queryable answering its description.
- :class:`ImportStream`: one Zenoh subscriber per (origin host, channel).
  Checks the header, counts gaps in the origin's sequence numbers, and puts
  the message into the local channel with its origin time translated to
  this host's CLOCK_MONOTONIC (nerve_chan_put_at keeps ring times ordered).
- :class:`HostBridge`: the session, the globs, the periodic scan of local
  channels (bounded: one directory listing and one stat(2) per channel
  every ``scan`` seconds; never nerve_chan_stat_name, which maps the whole ring),
  the liveliness events of remote channels, counters and the registry for
  ``nerve top``.
"""

from __future__ import annotations

import collections
import fnmatch
import os
import queue
import sys
import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import zenoh

import nerve
from nerve import _nerve

from .._limits import ImportBudget, fmt_size
from .._text import escape
from . import registry
from .wire import (
    BridgeError,
    Description,
    data_key,
    live_key,
    meta_key,
    mono_to_real,
    node_key,
    pack_header,
    pack_table,
    prefix,
    qos,
    query_descriptions,
    real_to_mono,
    short_error,
    split_key,
    unpack_table,
)

# How long an importer waits for the local writer lock (another local
# writer holding it) before it drops the message as an error.
PUT_TIMEOUT_S = 0.05
# An exporter's wait for a message is cut in slices of this length, so it
# notices a stop even if cancel() raced with the start of a wait.
READ_SLICE_S = 0.25
# The prefix of _ensure_local's answer for a description over the import
# bounds, and how often such a channel is tried again.
REFUSED = "refused: "
REFUSED_RETRY_S = 2.0
# Messages from this size on are read through a zero-copy view.
LARGE = 256 << 10
# Samples whose ages the counters summarise (per channel and direction).
AGES_KEPT = 1024
# A batch (bridge.wire.BATCH) holds messages smaller than BATCH_ITEM, at
# most BATCH_MAX of them and about BATCH_BYTES in all.
BATCH_ITEM = 16 << 10
BATCH_MAX = 256
BATCH_BYTES = 64 << 10


class Ages:
    """The ages of the latest AGES_KEPT samples (ns, CLOCK_MONOTONIC now
    minus a message's commit time), summarised in the counters: where a
    channel's latency goes, hop by hop, without a benchmark. Added to by
    one thread; read by another (list() of a deque holds the GIL)."""

    def __init__(self) -> None:
        self._ns: "collections.deque[int]" = collections.deque(maxlen=AGES_KEPT)

    def add(self, ns: int) -> None:
        self._ns.append(ns)

    def summary(self) -> Dict[str, float]:
        v = sorted(self._ns)
        if not v:
            return {"n": 0}
        return {"n": len(v), "p50": v[len(v) // 2] / 1e3, "p99": v[min(len(v) - 1, len(v) * 99 // 100)] / 1e3,
                "max": v[-1] / 1e3}


@dataclass
class ExportCounters:
    forwarded: int = 0      # messages published
    samples: int = 0        # Zenoh samples they went in (batches hold several)
    bytes: int = 0
    dropped_congestion: int = 0  # overwritten in the local ring before the bridge read them
    dropped_error: int = 0  # overwritten while read (stale view), or Zenoh refused them
    looped: int = 0         # messages the bridge itself imported: not sent back
    # Per sample, the age of its oldest message when Zenoh's put()
    # returned: the exporter's wake-up, read, copy and put.
    send_age: Ages = field(default_factory=Ages)

    def as_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {k: v for k, v in self.__dict__.items() if k != "send_age"}
        d["send_age_us"] = self.send_age.summary()
        return d


@dataclass
class ImportCounters:
    forwarded: int = 0      # messages put into the local channel
    bytes: int = 0
    gaps: int = 0           # origin sequence numbers never received
    dropped_size: int = 0   # larger than the local ring
    dropped_error: int = 0  # bad header, local put failed
    duplicates: int = 0     # origin sequence number already seen
    clamped: int = 0        # origin time moved to keep the ring ordered
    # Per sample, the age of its oldest message once it is in the local
    # channel: origin commit to local commit, the whole way but the local
    # reader's wake-up (between hosts, plus the error of the clocks'
    # offset).
    put_age: Ages = field(default_factory=Ages)

    def as_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {k: v for k, v in self.__dict__.items() if k != "put_age"}
        d["put_age_us"] = self.put_age.summary()
        return d


class LocalChannel:
    """The bridge's shared state for one local channel name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.own: Set[int] = set()
        self.writer: Optional[nerve.Channel] = None
        self.ino: Optional[int] = None  # inode of the writer's channel file
        self.data_size = 0
        self.slots = 0
        # Set (for good) before the first import into this channel: only
        # then can an exported message be one of the bridge's own, and the
        # exporter takes the lock to ask.
        self.imported = False
        # Whether this bridge exports the channel: only then does the
        # importer remember the sequence numbers it put.
        self.exported = False
        # Whether the bridge created the channel from a peer's description
        # (then its file is charged to the import budget until it is gone).
        self.charged = False

    def prune(self, last_put: int) -> None:
        """Called holding ``lock`` after adding to ``own``: forget numbers
        that the ring no longer holds (bounded memory)."""
        keep = max(self.slots, 64)
        if len(self.own) > 2 * keep:
            keep_from = last_put - keep
            self.own = {s for s in self.own if s > keep_from}

    def is_own(self, seq: int) -> bool:
        with self.lock:
            if seq in self.own:
                self.own.discard(seq)
                return True
            return False


def chan_ino(name: str) -> Optional[int]:
    """The inode of channel ``name``'s file, or None when there is none. A
    recreated channel is a new file: a cheap test (one stat(2)) where
    nerve_chan_stat_name would map and populate the channel's whole ring.
    The file is where the library says (nerve.path)."""
    try:
        return os.stat(nerve.path(name)).st_ino
    except (OSError, nerve.Error):
        return None


class _Stop(Exception):
    """The exporter's handle was cancelled, or its channel failed."""


class Exporter:
    """Publishes one local channel (its own thread).

    Per wake-up of the blocking wait, every message already in the ring is
    taken: small ones go out together in batches (one Zenoh sample each),
    a large one in a sample of its own. Nothing ever waits for more
    messages to fill a batch, so batching adds no latency."""

    def __init__(self, bridge: "HostBridge", name: str) -> None:
        self.bridge = bridge
        self.name = name
        self.local = bridge.local(name)
        self.counters = ExportCounters()
        self.stop_ev = threading.Event()
        self.error: Optional[str] = None
        ino = chan_ino(name)
        self.ch = nerve.open(name)
        st = self.ch.stat()
        # Replaced while it was opened: the next scan exports it again.
        self.ino = ino if chan_ino(name) == ino else None
        self.epoch = st.created_ns
        meta = self.ch.metadata
        self.desc = Description(host=bridge.ident, name=name, slots=st.slots, data_size=st.data_size,
                                type=meta.type, encoding=meta.encoding, schema=meta.schema,
                                epoch=st.created_ns)
        # New messages only, unless the channel appeared after the bridge
        # started (then everything still in its ring was written since).
        from_start = st.created_ns >= bridge.started_real
        self.ch.seek(st.tail_seq - 1 if from_start else st.head_seq)
        # The newest sequence number this exporter has seen (written by its
        # thread only; the description and the rate read it).
        self.head_seq = st.head_seq
        s = bridge.session
        d = bridge.domain
        self.pub = s.declare_publisher(data_key(d, bridge.ident, name), **bridge.qos)
        self.queryable = s.declare_queryable(meta_key(d, bridge.ident, name), self._on_query)
        self.token = s.liveliness().declare_token(live_key(d, bridge.ident, name))
        self._rate: List[Tuple[int, int]] = []
        p = bridge.opts.poll_us * 1e-6
        # How the exporter waits: with --poll, a lead of p and a spin of 2p.
        self._wait_kw: Dict[str, Any] = dict(wait=True, timeout=READ_SLICE_S)
        if p > 0:
            self._wait_kw.update(spin=2 * p, lead=p)
        self._large = False
        self._buf = bytearray()
        self._bufmv = memoryview(self._buf)
        self.thread = threading.Thread(target=self._run, name=f"export-{name}", daemon=True)
        self.thread.start()

    def _on_query(self, query: zenoh.Query) -> None:
        self.desc.head_seq = self.head_seq
        self.desc.rate_hz = self.rate()
        try:
            query.reply(meta_key(self.bridge.domain, self.bridge.ident, self.name), self.desc.to_json())
        except Exception:
            pass  # the querier left

    def sample_rate(self, now: int) -> None:
        self._rate.append((now, self.head_seq))
        while len(self._rate) > 2 and now - self._rate[0][0] > 3_000_000_000:
            self._rate.pop(0)

    def rate(self) -> float:
        r = list(self._rate)
        if len(r) < 2 or r[-1][0] == r[0][0]:
            return 0.0
        return (r[-1][1] - r[0][1]) * 1e9 / (r[-1][0] - r[0][0])

    # ---- reading ------------------------------------------------------------

    def _read(self, wait: bool) -> Optional[tuple]:
        """The next message as (seq, time, data, missed, size), or None
        (nothing new; with ``wait``, nothing within READ_SLICE_S). Small
        messages: get(), one validated copy, the cheapest call. Once
        messages are large: a zero-copy view, copied once (into a buffer
        kept for the next message when the message goes out alone) and
        validated before it is used. Raises _Stop."""
        ch = self.ch
        try:
            if not self._large:
                m = ch.get(**self._wait_kw) if wait else ch.get()
                if m is not None and m[4] >= LARGE:
                    self._large = True
                return m
            with ch.view(**self._wait_kw) if wait else ch.view() as v:
                if v is None:
                    return None
                n = v.size
                if n >= BATCH_ITEM:
                    # Sent alone, before the next read: the copy goes into
                    # a buffer kept from one message to the next (warm
                    # memory, no allocation), which Zenoh copies in put().
                    if len(self._buf) != n:
                        self._buf = bytearray(n)
                        self._bufmv = memoryview(self._buf)
                    self._bufmv[:] = v.data  # one memcpy
                    m = (v.seq, v.time_ns, self._buf, v.missed, n)
                else:
                    m = (v.seq, v.time_ns, bytes(v.data), v.missed, n)
            if m[4] < LARGE:
                self._large = False
            return m
        except nerve.Timeout:
            return None
        except nerve.StaleView:
            self.counters.dropped_error += 1  # overwritten while it was copied
            return None if wait else self._read(False)
        except nerve.Cancelled:
            raise _Stop() from None
        except (nerve.Error, ValueError) as e:  # closed, corrupt channel
            self.error = str(e)
            raise _Stop() from None

    def _run(self) -> None:
        stop = self.stop_ev
        try:
            while not stop.is_set():
                m = self._read(True)
                if m is not None:
                    self._drain(m)
        except _Stop:
            pass
        stop.set()

    def _drain(self, m: tuple) -> None:
        """Forward ``m`` and every message already waiting behind it."""
        c = self.counters
        local = self.local
        off = mono_to_real(0)  # this host's CLOCK_REALTIME - CLOCK_MONOTONIC
        datas: List[bytes] = []
        table = array("q")  # (seq, t_real, length) per message of the batch
        size = 0
        t0 = 0  # commit time of the batch's oldest message
        seq = self.head_seq
        while m is not None:
            seq, t, data, missed, n = m
            if missed:
                c.dropped_congestion += missed
            if local.imported and local.is_own(seq):
                c.looped += 1
            elif n >= BATCH_ITEM:
                if datas:
                    self._send(datas, table, size, t0)
                    datas, table, size = [], array("q"), 0
                self._send([data], array("q", (seq, t + off, n)), n, t)
            else:
                if not datas:
                    t0 = t
                datas.append(data)
                table.extend((seq, t + off, n))
                size += n
                if size >= BATCH_BYTES or len(datas) >= BATCH_MAX:
                    self._send(datas, table, size, t0)
                    datas, table, size = [], array("q"), 0
            m = self._read(False)
        if datas:
            self._send(datas, table, size, t0)
        self.head_seq = seq

    def _send(self, datas: List[bytes], table: "array[int]", size: int, t0: int) -> None:
        """One Zenoh sample: a message alone, or several as a batch (t0:
        the commit time of the oldest)."""
        c = self.counters
        k = len(datas)
        try:
            if k == 1:
                self.pub.put(datas[0], attachment=pack_header(table[0], table[1], self.epoch))
            else:
                self.pub.put(b"".join(datas), attachment=pack_table(table, self.epoch))
        except Exception as e:
            c.dropped_error += k
            self.error = short_error(e)
            return
        c.send_age.add(nerve.now_ns() - t0)
        c.forwarded += k
        c.samples += 1
        c.bytes += size

    def close(self) -> None:
        self.stop_ev.set()
        self.ch.cancel()
        self.thread.join(timeout=5)
        for obj in (self.token, self.queryable, self.pub):
            try:
                obj.undeclare()
            except Exception:
                pass
        if not self.thread.is_alive():
            self.ch.close()


class ImportStream:
    """Mirrors channel ``name`` of remote ``host`` into the local channel."""

    def __init__(self, bridge: "HostBridge", host: str, desc: Description, local: LocalChannel) -> None:
        self.bridge = bridge
        self.host = host
        self.name = desc.name
        self.desc = desc
        self.local = local
        self.counters = ImportCounters()
        self.last_seq = 0
        self.epoch: Optional[int] = None
        local.imported = True  # before any put (see LocalChannel)
        self.sub = bridge.session.declare_subscriber(
            data_key(bridge.domain, host, desc.name), self._on_sample,
            allowed_origin=zenoh.Locality.REMOTE)

    def _on_sample(self, sample: zenoh.Sample) -> None:
        payload = sample.payload
        att = sample.attachment
        # The one copy out of Zenoh (its ZBytes offers no buffer to read
        # in place); put_at copies it into the ring.
        self.on_message(payload.to_bytes(), att.to_bytes() if att is not None else None)

    def on_message(self, data: bytes, att: Optional[bytes]) -> None:
        """Check the header and put the message(s) of one sample into the
        local channel (in the order of their origin sequence numbers)."""
        c = self.counters
        try:
            epoch, table = unpack_table(att, len(data))
        except ValueError as e:
            c.dropped_error += 1
            self.bridge.report(f"{self.name} from {self.host}: message with a bad header dropped ({e})",
                               once="hdr")
            return
        if epoch != self.epoch:
            # First message, or the origin channel was recreated (its
            # sequence numbers start again): no gap to count.
            self.last_seq = table[0] - 1 if self.epoch is None else 0
            self.epoch = epoch
        local = self.local
        offset = real_to_mono(0)
        last = self.last_seq
        fwd = nbytes = gaps = dups = clamped = big = errors = 0
        single = len(table) == 3
        view = data if single else memoryview(data)
        pos = 0
        # One lock for the whole sample: the exporter of this channel waits
        # at most that long to check a sequence number (see LocalChannel).
        with local.lock:
            w = local.writer
            size = local.data_size
            own = local.own if local.exported else None
            put_at = w.put_at if w is not None else None
            got_seq = 0
            t_first = 0  # origin commit time of the first message put
            for i in range(0, len(table), 3):
                seq, n = table[i], table[i + 2]
                start, pos = pos, pos + n
                if seq <= last:
                    dups += 1
                    continue
                if last and seq > last + 1:
                    gaps += seq - last - 1
                last = seq
                if n > size:
                    big += 1
                    continue
                if put_at is None:
                    errors += 1
                    continue
                t_mono = table[i + 1] + offset
                try:
                    got_seq, got_t = put_at(view if single else view[start:pos], t_mono,
                                            timeout=PUT_TIMEOUT_S)
                except (nerve.Error, ValueError) as e:
                    errors += 1
                    self.bridge.report(f"{self.name}: local put failed: {e}", once="put")
                    continue
                if own is not None:
                    own.add(got_seq)
                if got_t != t_mono:
                    clamped += 1
                if not fwd:
                    t_first = t_mono
                fwd += 1
                nbytes += n
            if fwd and own is not None:
                local.prune(last_put=got_seq)
        if fwd:
            c.put_age.add(nerve.now_ns() - t_first)
        self.last_seq = last
        c.forwarded += fwd
        c.bytes += nbytes
        c.gaps += gaps
        c.duplicates += dups
        c.clamped += clamped
        c.dropped_error += errors
        if big:
            c.dropped_size += big
            self.bridge.report(f"{self.name} from {self.host}: message larger than the local ring "
                               f"({size} bytes): dropped", once="size")

    def close(self) -> None:
        try:
            self.sub.undeclare()
        except Exception:
            pass


@dataclass
class BridgeOptions:
    domain: int = 0
    ident: str = "host"
    exports: List[str] = field(default_factory=list)
    imports: List[str] = field(default_factory=list)
    scan_s: float = 0.5
    priority: str = "data"
    express: bool = False
    query_timeout_s: float = 2.0
    # Exporters read with a WaitPolicy (nerve.Channel.get's spin and
    # lead): poll from poll_us before a message is due to poll_us after.
    poll_us: float = 0.0
    # What peers' descriptions may make this host allocate (_limits.py).
    budget: ImportBudget = field(default_factory=ImportBudget)
    # RECLAIM: how long a channel made for a peer that left is kept.
    import_grace_s: float = 10.0


def import_grace_s() -> float:
    """$NERVE_IMPORT_GRACE seconds (default 10), as the Rust data path
    reads it: how long a channel made for a peer that left is kept before
    it is removed and its import budget returned."""
    v = os.environ.get("NERVE_IMPORT_GRACE")
    if v is None:
        return 10.0
    try:
        s = float(v)
    except ValueError:
        s = -1.0
    if not 0.0 <= s <= 86400.0:
        raise BridgeError(f"bad NERVE_IMPORT_GRACE {v!r}: seconds from 0 to 86400")
    return s


def split_import(glob: str) -> Tuple[Optional[str], str]:
    """``"robot1/cam*"`` -> ("robot1", "cam*"); ``"cam*"`` -> (None, "cam*").
    Channel names have no '/', so the first part of a glob that has one
    is the origin (a glob of bridge ids)."""
    origin, sep, name = glob.partition("/")
    if not sep:
        return None, glob
    if not origin or not name or "/" in name:
        raise BridgeError(f"bad --import {glob!r}: NAMEGLOB or ORIGINGLOB/NAMEGLOB")
    return origin, name


class HostBridge:
    """Exports and imports channels over one Zenoh session. Call
    :meth:`start`, then :meth:`step` repeatedly (or :meth:`run`), then
    :meth:`close`."""

    def __init__(self, session: zenoh.Session, opts: BridgeOptions,
                 log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> None:
        self.session = session
        self.opts = opts
        self.domain = opts.domain
        self.ident = opts.ident
        self.qos = qos(opts.priority, opts.express)
        # Peer ids, channel names and keys come from the network: every
        # line is escaped (_text.escape, the rules of the nerve command's).
        self.log: Callable[[str], None] = lambda s: log(escape(s))
        self.started_real = time.time_ns()
        self.locals: Dict[str, LocalChannel] = {}
        self.exporters: Dict[str, Exporter] = {}
        self.streams: Dict[Tuple[str, str], ImportStream] = {}
        self.departed: Dict[Tuple[str, str], ImportStream] = {}
        self.remote: Dict[Tuple[str, str], bool] = {}  # (host, name) -> token alive
        self.pending: Dict[Tuple[str, str], float] = {}  # next attach attempt (monotonic)
        self.gone: Dict[Tuple[str, str], float] = {}  # RECLAIM: left -> when its channel goes
        self.conflicts: Dict[str, str] = {}
        self.budget = opts.budget
        # (host, name) -> the geometry last refused for its size, so that a
        # refusal is counted and reported once, not at every retry.
        self.refused: Dict[Tuple[str, str], Tuple[int, int]] = {}
        self.events: "queue.Queue[Tuple[str, str, str]]" = queue.Queue()
        self._reported: Set[Tuple[str, str]] = set()
        self._registry_state: Any = None
        self._live_sub: Any = None
        self._next_scan = 0.0
        self._import_globs = [split_import(g) for g in opts.imports]
        # Other bridges claiming this bridge's id on the domain: their Zenoh
        # session ids (from their node tokens).
        self.zid = str(session.info.zid())
        self.clashes: Set[str] = set()
        self._node_token: Any = None
        self._node_sub: Any = None

    # ---- helpers ----------------------------------------------------------

    def report(self, msg: str, once: Optional[str] = None) -> None:
        """Log a problem (each kind once per channel when ``once``)."""
        if once is not None:
            key = (once, msg.split(":", 1)[0])
            if key in self._reported:
                return
            self._reported.add(key)
        self.log(f"nerve bridge: {msg}")

    def local(self, name: str) -> LocalChannel:
        lc = self.locals.get(name)
        if lc is None:
            lc = self.locals[name] = LocalChannel(name)
            lc.exported = self.exports(name)
        return lc

    def exports(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, g) for g in self.opts.exports)

    def imports(self, host: str, name: str) -> bool:
        """Whether channel ``name`` exported by the bridge ``host`` is to
        be imported: an --import glob ``NAMEGLOB`` takes it from any origin,
        ``ORIGINGLOB/NAMEGLOB`` only from bridges whose id matches."""
        return any((origin is None or fnmatch.fnmatchcase(host, origin)) and fnmatch.fnmatchcase(name, g)
                   for origin, g in self._import_globs)

    # ---- lifecycle --------------------------------------------------------

    def start(self) -> None:
        registry.read_all(clean=True)
        # Announce this bridge and watch for another one with its id (both
        # ends see the other's token, so both report it).
        live = self.session.liveliness()
        self._node_sub = live.declare_subscriber(node_key(self.domain, self.ident, "*"), self._on_node,
                                                 history=True)
        self._node_token = live.declare_token(node_key(self.domain, self.ident, self.zid))
        if self.opts.imports:
            self._live_sub = self.session.liveliness().declare_subscriber(
                f"{prefix(self.domain)}/live/*/*", self._on_live, history=True)
        self.step(0)

    def _on_node(self, sample: zenoh.Sample) -> None:
        parts = split_key(sample.key_expr)
        if parts is None or parts[2] != self.ident or parts[3] == self.zid:
            return
        self.events.put(("clash" if sample.kind == zenoh.SampleKind.PUT else "unclash", parts[2], parts[3]))

    def _clash(self, up: bool, zid: str) -> None:
        if up and zid not in self.clashes:
            self.clashes.add(zid)
            self.log(f"nerve bridge: ERROR: another bridge (Zenoh id {zid}) also calls itself "
                     f"{self.ident!r} on domain {self.domain}: each drops the other's channels as its "
                     f"own echo and importers cannot tell them apart; give each bridge its own --id")
        elif not up and zid in self.clashes:
            self.clashes.discard(zid)
            self.log(f"nerve bridge: the other bridge called {self.ident!r} (Zenoh id {zid}) left")

    def _on_live(self, sample: zenoh.Sample) -> None:
        parts = split_key(sample.key_expr)
        if parts is None or parts[0] != self.domain:
            return
        kind = "up" if sample.kind == zenoh.SampleKind.PUT else "down"
        self.events.put((kind, parts[2], parts[3]))

    def run(self, stop: threading.Event, stats_s: Optional[float] = None,
            on_stats: Optional[Callable[[dict], None]] = None) -> None:
        next_stats = time.monotonic() + stats_s if stats_s else None
        while not stop.is_set():
            self.step(0.1)
            if next_stats is not None and time.monotonic() >= next_stats:
                next_stats += stats_s  # type: ignore[operator]
                if on_stats:
                    on_stats(self.stats())

    def step(self, wait_s: float) -> None:
        """Handle remote events for up to ``wait_s`` seconds, then the
        periodic work that is due."""
        end = time.monotonic() + wait_s
        while True:
            try:
                kind, host, name = self.events.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                break
            if kind in ("clash", "unclash"):
                self._clash(kind == "clash", name)
            else:
                self._remote_event(kind, host, name)
        now = time.monotonic()
        for key, when in list(self.pending.items()):
            if now >= when:
                self._attach(*key)
        for key, when in list(self.gone.items()):
            if now >= when:
                self._reclaim(key)
        if now >= self._next_scan:
            self._next_scan = now + self.opts.scan_s
            self._scan()
            self._write_registry()

    def close(self) -> None:
        for obj in (self._live_sub, self._node_sub, self._node_token):
            if obj is not None:
                try:
                    obj.undeclare()
                except Exception:
                    pass
        for ex in self.exporters.values():
            ex.close()
        self.exporters.clear()
        for st in self.streams.values():
            st.close()
        self.streams.clear()
        for lc in self.locals.values():
            with lc.lock:
                if lc.writer is not None:
                    lc.writer.close()
                    lc.writer = None
        registry.remove(os.getpid())

    # ---- export -----------------------------------------------------------

    def _scan(self) -> None:
        """Start exporters for new matching channels, stop those whose
        channel went away or was recreated; sample rates. Re-attach imports
        whose local channel was removed or recreated meanwhile."""
        for lc in self.locals.values():
            if lc.charged and (lc.ino is None or chan_ino(lc.name) != lc.ino):
                lc.charged = False  # its file is gone: no longer counted
                self.budget.release(lc.name)
        for key, st in list(self.streams.items()):
            lc = st.local
            if lc.writer is None or lc.ino is None or chan_ino(st.name) != lc.ino:
                self.report(f"{st.name}: the local channel was removed or recreated; importing it again")
                self.pending[key] = 0.0
        if not self.opts.exports:
            return
        try:
            names = set(_nerve.list_names())
        except nerve.Error as e:
            self.report(f"cannot list /dev/shm: {e}", once="list")
            return
        now = nerve.now_ns()
        for name in sorted(names):
            if not self.exports(name):
                continue
            ino = chan_ino(name)
            if ino is None:
                continue  # removed since the listing
            ex = self.exporters.get(name)
            if ex is not None and (ex.ino != ino or ex.error is not None):
                if ex.error:
                    self.report(f"{name}: export stopped: {ex.error}")
                ex.close()
                del self.exporters[name]
                ex = None
            if ex is None:
                try:
                    self.exporters[name] = Exporter(self, name)
                except nerve.Error as e:
                    self.report(f"{name}: cannot export: {e}", once="export")
                    continue
                except Exception as e:  # Zenoh declaration failed
                    self.report(f"{name}: cannot export: {short_error(e)}", once="export")
                    continue
            self.exporters[name].sample_rate(now)
        for name in [n for n in self.exporters if n not in names]:
            self.exporters.pop(name).close()

    # ---- import -----------------------------------------------------------

    def _remote_event(self, kind: str, host: str, name: str) -> None:
        if host == self.ident or not self.imports(host, name):
            return
        key = (host, name)
        if kind == "up":
            if not self.remote.get(key):
                self.log(f"nerve bridge: {host} exports {name}")
            self.gone.pop(key, None)
            self.remote[key] = True
            self._attach(host, name)
        else:
            if self.remote.get(key):
                self.log(f"nerve bridge: {host} left: {name}")
                self.gone[key] = time.monotonic() + self.opts.import_grace_s
            self.remote[key] = False
            self.pending.pop(key, None)
            st = self.streams.pop(key, None)
            if st is not None:
                st.close()
                self.departed[key] = st  # its counters go on if it returns

    def _reclaim(self, key: Tuple[str, str]) -> None:
        """RECLAIM (as the Rust data path's engine.rs): a channel this
        bridge made from a peer's description is removed once that peer
        has been gone for the grace period and no other peer exports the
        name, and its bytes return to the import budget. A channel that
        existed before is never removed; local readers keep their mapping,
        and the channel is made again if the peer comes back."""
        self.gone.pop(key, None)
        host, name = key
        lc = self.locals.get(name)
        if lc is None or any(up and n == name for (_, n), up in self.remote.items()):
            return
        with lc.lock:
            if not lc.charged or lc.ino is None or chan_ino(name) != lc.ino:
                return
            if lc.writer is not None:
                lc.writer.close()
                lc.writer = None
            try:
                nerve.unlink(name)
            except nerve.Error as e:
                self.report(f"{name}: cannot remove the channel made for {host}: {e}", once="reclaim")
                return
            lc.charged, lc.ino = False, None
        before = self.budget.charged
        self.budget.release(name)
        self.log(f"nerve bridge: {name}: {host} left {self.opts.import_grace_s:.1f} s ago; removed "
                 f"the channel made for it ({fmt_size(before - self.budget.charged)} returned to "
                 f"the import budget)")

    def _attach(self, host: str, name: str) -> None:
        """Learn the description of host's channel, make the local channel
        and subscribe. Retried every second while the remote is there."""
        key = (host, name)
        self.pending.pop(key, None)
        if not self.remote.get(key):
            return
        replies = []
        try:
            replies = query_descriptions(self.session, meta_key(self.domain, host, name),
                                         self.opts.query_timeout_s)
        except BridgeError as e:
            self.report(f"{name} from {host}: {e}", once="query")
        desc = next((d for _k, d in replies if isinstance(d, Description)), None)
        if desc is None:
            bad = next((d for _k, d in replies if isinstance(d, str)), None)
            if bad:
                self.report(f"{name} from {host}: bad description ({bad}); retrying", once="desc")
            self.pending[key] = time.monotonic() + 1.0
            return
        if desc.name != name or desc.host != host:
            self.report(f"{name} from {host}: description names {desc.host}/{desc.name}", once="desc")
            self.pending[key] = time.monotonic() + 1.0
            return
        lc = self.local(name)
        geom = (desc.slots, desc.data_size)
        err = self._ensure_local(lc, desc, count=self.refused.get(key) != geom)
        if err and err.startswith(REFUSED):
            # Over the bounds: refused before anything was allocated. Counted
            # and reported once per geometry; retried now and then (a local
            # channel removed frees budget; a remote recreated smaller is
            # announced afresh).
            if self.refused.get(key) != geom:
                self.refused[key] = geom
                self.report(f"{name}: not imported from {host}: {err}")
            self.pending[key] = time.monotonic() + REFUSED_RETRY_S
            return
        self.refused.pop(key, None)
        if err:
            if self.conflicts.get(name) != err:
                self.report(f"{name}: not imported from {host}: {err}")
            self.conflicts[name] = err
            self.pending[key] = time.monotonic() + 1.0
            return
        self.conflicts.pop(name, None)
        old = self.streams.pop(key, None) or self.departed.pop(key, None)
        if old is not None:
            old.close()
        stream = ImportStream(self, host, desc, lc)
        if old is not None:  # the remote came back: keep counting on
            stream.counters = old.counters
            stream.last_seq, stream.epoch = old.last_seq, old.epoch
        self.streams[key] = stream
        self.log(f"nerve bridge: importing {name} from {host}")

    def _ensure_local(self, lc: LocalChannel, desc: Description, count: bool = True) -> Optional[str]:
        """Create the local channel with the remote's geometry and metadata,
        or reuse a compatible one (same metadata, ring at least as large).
        Returns why not, or None."""
        with lc.lock:
            if lc.writer is not None and not lc.writer.closed:
                if lc.ino is not None and chan_ino(lc.name) == lc.ino:
                    return self._compatible(lc.writer, desc)
                lc.writer.close()
                lc.writer = None
            if lc.charged:
                lc.charged = False
                self.budget.release(lc.name)
            w = None
            if chan_ino(desc.name) is None:
                # Made from the peer's word: within the bounds or not at
                # all (_limits.py), checked before anything is allocated.
                meta = len((desc.type or "").encode()) + len((desc.encoding or "").encode()) + len(desc.schema or b"")
                why = self.budget.admit(desc.name, desc.slots, desc.data_size, meta, count=count)
                if why:
                    return f"{REFUSED}{why}"
                try:
                    w = nerve.create(desc.name, slots=desc.slots, size=desc.data_size, type=desc.type,
                                     encoding=desc.encoding, schema=desc.schema)
                    lc.charged = True
                except (nerve.ChannelExists, nerve.ChannelMismatch):
                    self.budget.release(desc.name)  # made meanwhile by someone else
                except nerve.Error as e:
                    self.budget.release(desc.name)
                    return f"cannot create the local channel: {e}"
            if w is None:
                # A local channel exists: used if compatible, nothing allocated.
                try:
                    w = nerve.open(desc.name, write=True)
                except nerve.Error as e:
                    return f"local channel cannot be opened for writing: {e}"
                why = self._compatible(w, desc)
                if why:
                    w.close()
                    return why
            st = w.stat()
            lc.writer, lc.data_size, lc.slots = w, st.data_size, st.slots
            lc.ino = self._file_of(w)
            return None

    @staticmethod
    def _file_of(w: nerve.Channel) -> Optional[int]:
        """The inode of the file handle ``w`` has open, or None if the
        channel was replaced meanwhile (the next scan then imports it
        again). Once per attach: nerve_chan_stat_name maps the channel."""
        ino = chan_ino(w.name)
        try:
            same = _nerve.stat(w.name).created_ns == w.stat().created_ns
        except nerve.Error:
            return None
        return ino if same and chan_ino(w.name) == ino else None

    @staticmethod
    def _compatible(w: nerve.Channel, desc: Description) -> Optional[str]:
        m = w.metadata
        st = w.stat()
        mine = (m.type or None, m.encoding or None, m.schema or None)
        theirs = (desc.type or None, desc.encoding or None, desc.schema or None)
        if mine != theirs:
            return (f"the local channel has other metadata (type {mine[0]!r}, encoding {mine[1]!r}) "
                    f"than the remote (type {theirs[0]!r}, encoding {theirs[1]!r})")
        if st.data_size < desc.data_size:
            return (f"the local ring ({st.data_size} bytes) is smaller than the remote's "
                    f"({desc.data_size} bytes)")
        return None

    # ---- facts ------------------------------------------------------------

    def stats(self) -> dict:
        return {
            "id": self.ident, "domain": self.domain, "zid": self.zid,
            # Other bridges claiming this id on the domain (their Zenoh ids).
            "id_clashes": sorted(self.clashes),
            "export": {n: ex.counters.as_dict() for n, ex in sorted(self.exporters.items())},
            "import": {f"{h}/{n}": dict(st.counters.as_dict(), connected=(h, n) in self.streams)
                       for (h, n), st in sorted({**self.departed, **self.streams}.items())},
            "conflicts": dict(self.conflicts),
            "refused_size": self.budget.refused,
            "import_bytes": self.budget.charged,
        }

    def _write_registry(self) -> None:
        exported = set(self.exporters)
        imported: Dict[str, Set[str]] = {}
        for (h, n) in self.streams:
            imported.setdefault(n, set()).add(h)
        state = (sorted(exported), sorted((k, sorted(v)) for k, v in imported.items()))
        if state == self._registry_state:
            return
        self._registry_state = state
        try:
            registry.write(os.getpid(), self.ident, self.domain, exported, imported)
        except OSError as e:
            self.report(f"cannot write the registry for nerve top: {e}", once="registry")
