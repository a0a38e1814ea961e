"""The export/import machinery of ``nerve bridge`` (docs/bridge.md).

- :class:`LocalChannel`: what the exporter and the importers of one local
  channel share: the sequence numbers the bridge itself put (never exported
  again: no loops) under a lock that the importer holds from its put until
  the number is recorded, so the exporter, which checks after reading, can
  never miss one.
- :class:`Exporter`: one thread per exported channel. Reads every new
  message with the nerve reader API (zero-copy view, copied once into the
  Zenoh payload and validated before it is sent; a reader never blocks the
  local writer), publishes it with congestion control DROP (a slow link
  never blocks the bridge), and announces the channel with a liveliness
  token and a queryable answering its description.
- :class:`ImportStream`: one Zenoh subscriber per (origin host, channel).
  Checks the header, counts gaps in the origin's sequence numbers, and puts
  the message into the local channel with its origin time translated to
  this host's CLOCK_MONOTONIC (nerve_chan_put_at keeps ring times ordered).
- :class:`Bridge`: the session, the globs, the periodic scan of local
  channels (bounded: one nerve_list every ``scan`` seconds), the liveliness
  events of remote channels, counters and the registry for ``nerve top``.
"""

from __future__ import annotations

import fnmatch
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import zenoh

import nerve
from nerve import _nerve

from . import bridge_registry as registry
from .bridge_zenoh import (
    BridgeError,
    Description,
    data_key,
    live_key,
    meta_key,
    mono_to_real,
    pack_batch,
    pack_header,
    prefix,
    qos,
    query_descriptions,
    real_to_mono,
    short_error,
    split_key,
    unpack_header,
)

# How long an importer waits for the local writer lock (another local
# writer holding it) before it drops the message as an error.
PUT_TIMEOUT_S = 0.05
# An exporter's wait for a message is cut in slices of this length, so it
# notices a stop even if cancel() raced with the start of a wait.
READ_SLICE_S = 0.25
# Messages from this size on are read through a zero-copy view.
LARGE = 256 << 10
# A batch (bridge_zenoh.BATCH) holds messages smaller than BATCH_ITEM, at
# most BATCH_MAX of them and about BATCH_BYTES in all.
BATCH_ITEM = 16 << 10
BATCH_MAX = 256
BATCH_BYTES = 64 << 10


@dataclass
class ExportCounters:
    forwarded: int = 0      # messages published
    samples: int = 0        # Zenoh samples they went in (batches hold several)
    bytes: int = 0
    dropped_congestion: int = 0  # overwritten in the local ring before the bridge read them
    dropped_error: int = 0  # overwritten while read (stale view), or Zenoh refused them
    looped: int = 0         # messages the bridge itself imported: not sent back

    def as_dict(self) -> Dict[str, int]:
        return dict(self.__dict__)


@dataclass
class ImportCounters:
    forwarded: int = 0      # messages put into the local channel
    bytes: int = 0
    gaps: int = 0           # origin sequence numbers never received
    dropped_size: int = 0   # larger than the local ring
    dropped_error: int = 0  # bad header, local put failed
    duplicates: int = 0     # origin sequence number already seen
    clamped: int = 0        # origin time moved to keep the ring ordered

    def as_dict(self) -> Dict[str, int]:
        return dict(self.__dict__)


class LocalChannel:
    """The bridge's shared state for one local channel name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.own: Set[int] = set()
        self.writer: Optional[nerve.Channel] = None
        self.data_size = 0
        self.slots = 0

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


class Exporter:
    """Publishes one local channel (its own thread)."""

    def __init__(self, bridge: "Bridge", name: str, from_start: bool) -> None:
        self.bridge = bridge
        self.name = name
        self.local = bridge.local(name)
        self.counters = ExportCounters()
        self.stop_ev = threading.Event()
        self.error: Optional[str] = None
        self.ch = nerve.open(name)
        st = self.ch.stat()
        self.epoch = st.created_ns
        meta = self.ch.metadata
        self.desc = Description(host=bridge.ident, name=name, slots=st.slots, data_size=st.data_size,
                                type=meta.type, encoding=meta.encoding, schema=meta.schema,
                                epoch=st.created_ns)
        # New messages only, unless the channel appeared after the bridge
        # started (then everything still in its ring was written since).
        self.ch.seek(st.tail_seq - 1 if from_start else st.head_seq)
        s = bridge.session
        d = bridge.domain
        self.pub = s.declare_publisher(data_key(d, bridge.ident, name), **bridge.qos)
        self.queryable = s.declare_queryable(meta_key(d, bridge.ident, name), self._on_query)
        self.token = s.liveliness().declare_token(live_key(d, bridge.ident, name))
        self._rate: List[Tuple[int, int]] = []
        self._large = False
        self.thread = threading.Thread(target=self._run, name=f"export-{name}", daemon=True)
        self.thread.start()

    def _on_query(self, query: zenoh.Query) -> None:
        try:
            info = _nerve.stat(self.name)
            self.desc.head_seq = info.head_seq
        except nerve.Error:
            pass
        self.desc.rate_hz = self.rate()
        try:
            query.reply(meta_key(self.bridge.domain, self.bridge.ident, self.name), self.desc.to_json())
        except Exception:
            pass  # the querier left

    def sample_rate(self, now: int, head: int) -> None:
        self._rate.append((now, head))
        while len(self._rate) > 2 and now - self._rate[0][0] > 3_000_000_000:
            self._rate.pop(0)

    def rate(self) -> float:
        r = list(self._rate)
        if len(r) < 2 or r[-1][0] == r[0][0]:
            return 0.0
        return (r[-1][1] - r[0][1]) * 1e9 / (r[-1][0] - r[0][0])

    def _read(self, wait: bool) -> Optional[tuple]:
        """The next message as (seq, time, bytes), or None. Small messages
        are copied by get() (one validated copy, the cheapest call); once
        messages are large, through a zero-copy view that is copied once
        into the payload and validated before it is used."""
        ch, c = self.ch, self.counters
        if not wait and not self._large:
            m = ch.get()  # the common case of a burst: no keywords to parse
            if m is None:
                return None
            if m.missed:
                c.dropped_congestion += m.missed
            self._large = m.size >= LARGE
            return m.seq, m.time_ns, m.data, 0
        kw = dict(wait=True, timeout=READ_SLICE_S) if wait else {}
        if self._large:
            with ch.view(**kw) as m:
                if m is None:
                    return None
                out = (m.seq, m.time_ns, bytes(m.data), m.missed)
        else:
            m = ch.get(**kw)
            if m is None:
                return None
            out = (m.seq, m.time_ns, m.data, m.missed)
        self._large = len(out[2]) >= LARGE
        c.dropped_congestion += out[3]
        return out

    def _run(self) -> None:
        c = self.counters
        is_own = self.local.is_own
        while not self.stop_ev.is_set():
            batch: List[tuple] = []
            size = 0
            wait = True
            while True:
                try:
                    msg = self._read(wait)
                except nerve.Timeout:
                    break
                except nerve.StaleView:
                    c.dropped_error += 1  # overwritten while it was copied
                    continue
                except nerve.Cancelled:
                    self.stop_ev.set()
                    break
                except (nerve.Error, ValueError) as e:  # closed, corrupt channel
                    self.error = str(e)
                    self.stop_ev.set()
                    break
                if msg is None:
                    break
                wait = False
                seq, t, data, _missed = msg
                n = len(data)
                if is_own(seq):
                    c.looped += 1
                else:
                    batch.append((seq, t, data))
                    size += n
                # Take what is already waiting, small messages only, up to
                # a batch's worth; never wait for more.
                if size >= BATCH_BYTES or n >= BATCH_ITEM or len(batch) >= BATCH_MAX:
                    break
            if batch:
                self._send(batch)

    def _send(self, batch: List[tuple]) -> None:
        c = self.counters
        try:
            if len(batch) == 1:
                seq, t, data = batch[0]
                self.pub.put(data, attachment=pack_header(seq, mono_to_real(t), self.epoch))
                n = len(data)
            else:
                data = b"".join(d for _s, _t, d in batch)
                n = len(data)
                off = mono_to_real(0)
                self.pub.put(data, attachment=pack_batch(
                    [(s, t + off, len(d)) for s, t, d in batch], self.epoch))
        except Exception as e:
            c.dropped_error += len(batch)
            self.error = short_error(e)
            return
        c.forwarded += len(batch)
        c.samples += 1
        c.bytes += n

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

    def __init__(self, bridge: "Bridge", host: str, desc: Description, local: LocalChannel) -> None:
        self.bridge = bridge
        self.host = host
        self.name = desc.name
        self.desc = desc
        self.local = local
        self.counters = ImportCounters()
        self.last_seq = 0
        self.epoch: Optional[int] = None
        self.sub = bridge.session.declare_subscriber(
            data_key(bridge.domain, host, desc.name), self._on_sample,
            allowed_origin=zenoh.Locality.REMOTE)

    def _on_sample(self, sample: zenoh.Sample) -> None:
        c = self.counters
        payload = sample.payload
        try:
            att = sample.attachment
            epoch, entries = unpack_header(att.to_bytes() if att is not None else None, len(payload))
        except ValueError as e:
            c.dropped_error += 1
            self.bridge.report(f"{self.name} from {self.host}: message with a bad header dropped ({e})",
                               once="hdr")
            return
        if epoch != self.epoch:
            # First message, or the origin channel was recreated (its
            # sequence numbers start again): no gap to count.
            self.last_seq = entries[0][0] - 1 if self.epoch is None else 0
            self.epoch = epoch
        local = self.local
        data = memoryview(payload.to_bytes())
        offset = real_to_mono(0)
        last = self.last_seq
        fwd = nbytes = gaps = dups = clamped = big = errors = 0
        # One lock for the whole sample: the exporter of this channel waits
        # at most that long to check a sequence number (see LocalChannel).
        with local.lock:
            w = local.writer
            size = local.data_size
            own = local.own
            for seq, t_real, off, n in entries:
                if seq <= last:
                    dups += 1
                    continue
                if last and seq > last + 1:
                    gaps += seq - last - 1
                last = seq
                if n > size:
                    big += 1
                    continue
                if w is None:
                    errors += 1
                    continue
                t_mono = t_real + offset
                try:
                    got_seq, got_t = w.put_at(data[off:off + n], t_mono, timeout=PUT_TIMEOUT_S)
                except (nerve.Error, ValueError) as e:
                    errors += 1
                    self.bridge.report(f"{self.name}: local put failed: {e}", once="put")
                    continue
                own.add(got_seq)
                if got_t != t_mono:
                    clamped += 1
                fwd += 1
                nbytes += n
            if fwd:
                local.prune(last_put=got_seq)
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


class Bridge:
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
        self.log = log
        self.started_real = time.time_ns()
        self.locals: Dict[str, LocalChannel] = {}
        self.exporters: Dict[str, Exporter] = {}
        self.streams: Dict[Tuple[str, str], ImportStream] = {}
        self.departed: Dict[Tuple[str, str], ImportStream] = {}
        self.remote: Dict[Tuple[str, str], bool] = {}  # (host, name) -> token alive
        self.pending: Dict[Tuple[str, str], float] = {}  # next attach attempt (monotonic)
        self.conflicts: Dict[str, str] = {}
        self.events: "queue.Queue[Tuple[str, str, str]]" = queue.Queue()
        self._reported: Set[Tuple[str, str]] = set()
        self._registry_state: Any = None
        self._live_sub: Any = None
        self._next_scan = 0.0

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
        return lc

    def exports(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, g) for g in self.opts.exports)

    def imports(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, g) for g in self.opts.imports)

    # ---- lifecycle --------------------------------------------------------

    def start(self) -> None:
        registry.read_all(clean=True)
        if self.opts.imports:
            self._live_sub = self.session.liveliness().declare_subscriber(
                f"{prefix(self.domain)}/live/*/*", self._on_live, history=True)
        self.step(0)

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
            self._remote_event(kind, host, name)
        now = time.monotonic()
        for key, when in list(self.pending.items()):
            if now >= when:
                self._attach(*key)
        if now >= self._next_scan:
            self._next_scan = now + self.opts.scan_s
            self._scan()
            self._write_registry()

    def close(self) -> None:
        if self._live_sub is not None:
            try:
                self._live_sub.undeclare()
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
        for key, st in list(self.streams.items()):
            w = st.local.writer
            try:
                gone = w is None or _nerve.stat(st.name).created_ns != w.stat().created_ns
            except (nerve.Error, ValueError):
                gone = True
            if gone:
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
            try:
                info = _nerve.stat(name)
            except nerve.Error:
                continue
            ex = self.exporters.get(name)
            if ex is not None and (ex.epoch != info.created_ns or ex.error is not None):
                if ex.error:
                    self.report(f"{name}: export stopped: {ex.error}")
                ex.close()
                del self.exporters[name]
                ex = None
            if ex is None:
                try:
                    self.exporters[name] = Exporter(self, name, from_start=info.created_ns >= self.started_real)
                except nerve.Error as e:
                    self.report(f"{name}: cannot export: {e}", once="export")
                    continue
                except Exception as e:  # Zenoh declaration failed
                    self.report(f"{name}: cannot export: {short_error(e)}", once="export")
                    continue
            self.exporters[name].sample_rate(now, info.head_seq)
        for name in [n for n in self.exporters if n not in names]:
            self.exporters.pop(name).close()

    # ---- import -----------------------------------------------------------

    def _remote_event(self, kind: str, host: str, name: str) -> None:
        if host == self.ident or not self.imports(name):
            return
        key = (host, name)
        if kind == "up":
            if not self.remote.get(key):
                self.log(f"nerve bridge: {host} exports {name}")
            self.remote[key] = True
            self._attach(host, name)
        else:
            if self.remote.get(key):
                self.log(f"nerve bridge: {host} left: {name}")
            self.remote[key] = False
            self.pending.pop(key, None)
            st = self.streams.pop(key, None)
            if st is not None:
                st.close()
                self.departed[key] = st  # its counters go on if it returns

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
        err = self._ensure_local(lc, desc)
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

    def _ensure_local(self, lc: LocalChannel, desc: Description) -> Optional[str]:
        """Create the local channel with the remote's geometry and metadata,
        or reuse a compatible one (same metadata, ring at least as large).
        Returns why not, or None."""
        with lc.lock:
            if lc.writer is not None and not lc.writer.closed:
                try:
                    info = lc.writer.stat()
                    cur = _nerve.stat(lc.name)
                    if cur.created_ns == info.created_ns:
                        return self._compatible(lc.writer, desc)
                except nerve.Error:
                    pass
                lc.writer.close()
                lc.writer = None
            try:
                w = nerve.create(desc.name, slots=desc.slots, size=desc.data_size, type=desc.type,
                                 encoding=desc.encoding, schema=desc.schema, exist_ok=True)
            except (nerve.ChannelExists, nerve.ChannelMismatch):
                try:
                    w = nerve.open(desc.name, write=True)
                except nerve.Error as e:
                    return f"local channel cannot be opened for writing: {e}"
                why = self._compatible(w, desc)
                if why:
                    w.close()
                    return why
            except nerve.Error as e:
                return f"cannot create the local channel: {e}"
            st = w.stat()
            lc.writer, lc.data_size, lc.slots = w, st.data_size, st.slots
            return None

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
            "id": self.ident, "domain": self.domain,
            "export": {n: ex.counters.as_dict() for n, ex in sorted(self.exporters.items())},
            "import": {f"{h}/{n}": dict(st.counters.as_dict(), connected=(h, n) in self.streams)
                       for (h, n), st in sorted({**self.departed, **self.streams}.items())},
            "conflicts": dict(self.conflicts),
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
