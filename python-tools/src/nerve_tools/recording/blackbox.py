"""nerve blackbox: a flight recorder that copies the rings out on a trigger.

Every nerve channel already holds its recent past in shared memory. While
armed, the recorder reads nothing of the watched channels: it copies no
message, makes no system call, allocates nothing and is not woken per
published message. It sleeps in poll(2) on the events it waits for: a
pidfd of a watched process becoming readable, a message on the trigger
channel (a thread blocked on the channel's futex passes it on through a
pipe), a signal (SIGUSR1, through the same pipe: signal.set_wakeup_fd),
a writer's release of a watched channel's file (inotify; then that
channel's writer lock is looked at: see OpenWatch and LOCK_BACKSTOP_S);
an open or close of a watched file while holders are watched (inotify;
after one, the recorder does not poll for them for ``OPENS_READ_S``, so
tools that stat every channel each second wake it at most that often);
and on a timer only for what has no event: every writer lock every
``LOCK_BACKSTOP_S``, the next silence deadline of a --silence channel,
the holder rescan, and, only with --when, --shadow or a task statistics
channel, which read every message, ``TICK_S``.

At a trigger at CLOCK_MONOTONIC time T, each watched channel is copied
oldest-first: the newest message committed at or before T - pre (the last
known state), then every message with commit time in (T - pre, T + post],
read by sequence number as any reader does (each read validated by the
library; a message overwritten before it was copied raises Overwritten and
is counted, exactly, as missed). When the ring no longer holds T - pre,
the window achieved starts at its oldest message and the file says so. The
channels are followed until T + post has passed and every message
committed until then was read.

The MCAP file (one per incident) is what ``nerve record`` writes (channel
metadata that ``nerve play`` recreates channels from, ``nerve.recording``
with the clock offset) plus a metadata record ``nerve.blackbox.trigger``:
kind, source, time, note, the windows requested and achieved and the
missed count of every channel. A trigger that comes while an incident's
post window is still open is merged into it (the post window extends to
the later trigger's T + post; the record lists every trigger).

``nerve blackbox dump --at TIME`` writes the same file later from what the
rings still hold (after the recorder was killed mid-dump, for one).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import errno
import fnmatch
import functools
import importlib
import json
import os
import re
import select
import signal
import struct
import sys
import threading
import time
from typing import TYPE_CHECKING, Dict, List, NamedTuple, Optional, Sequence, Tuple

import nerve
from nerve import _nerve

from .. import __version__
from .._common import (
    META_DATA_SIZE,
    META_ENCODING,
    META_NAME,
    META_SLOTS,
    META_TYPE,
    die,
    human_bytes,
    realtime_offset_ns,
    to_mcap,
)
from .._common import (
    select as select_channels,
)

# Imported where used: the value conditions (--when) with their decoders,
# subprocess (--ros2-service), datetime (an incident's file name, dump
# --at), and mcap_fast with zlib (at the first incident), so that the armed
# recorder without them stays small (dataclasses, with inspect, is not
# imported at all; nor is shutil: see _help_width).
if TYPE_CHECKING:
    import subprocess

    from . import condition, mcap_fast
else:

    class _FirstUse:
        """A module imported when one of its attributes is first used."""

        def __init__(self, name: str) -> None:
            self._name = name

        def __getattr__(self, attr: str) -> object:
            return getattr(importlib.import_module(self._name, __package__), attr)

    mcap_fast = _FirstUse(".mcap_fast")

PROG = "nerve blackbox"
LIBRARY = f"nerve-tools {__version__}"
#: The wake-up period of a recorder that reads every message of some
#: channels (--when, --shadow, task statistics); without those it sleeps
#: until an event or the next deadline below.
TICK_S = 0.05
#: Holders of watched channels are looked up again (a scan of every
#: process's mappings, as `nerve who`: tens of milliseconds on a busy host)
#: when a process opened one of their files and still has it open (inotify
#: IN_OPEN not matched by an IN_CLOSE: tools that only stat every channel,
#: `nerve top` and `nerve ls`, close them at once and cause no scan), at
#: most every RESCAN_MIN_S, and at the latest after RESCAN_S (a process
#: that inherited a mapping by fork opened nothing).
RESCAN_S = 120.0
RESCAN_MIN_S = 1.0
RESCAN_SETTLE_S = 0.5
#: The writer lock of a watched channel is looked at when a writer's file
#: of it was released (OpenWatch.WRITERS: a writer that died holding the
#: lock released its file as it died), all of them when a watched process
#: died or inotify lost events, and all every --lock-backstop (default
#: LOCK_BACKSTOP_S) for what has no such event: a thread that died holding
#: the lock in a process that lives on, a writer whose file a forked child
#: still holds. Without inotify, every LOCK_POLL_S.
LOCK_BACKSTOP_S = 60.0
LOCK_POLL_S = 2.0
#: After the opens and closes of the watched files (for the holder rescan)
#: woke the recorder, it reads the next ones this long later: tools that
#: stat every channel each second wake it at most this often, and a quiet
#: host not at all.
OPENS_READ_S = 2.0
#: --ros2-service: the most seconds its helper process (rclpy) may take to start.
ROS2_START_S = 30
#: The channel `nerve blackbox trigger` publishes to (and any process may).
TRIGGER_CHANNEL = "blackbox.trigger"
TRIGGER_META = "nerve.blackbox.trigger"
#: The type of a channel a nerve_task publishes its statistics to
#: (NERVE_TASK_STATS_TYPE, nerve_task_publish_stats in nerve/rt.h).
TASK_STATS_TYPE = "nerve/task_stats"
#: struct nerve_task_stats begins with cycles, overruns, skipped, timeouts,
#: missed (uint64, the host's byte order).
_TASK_STATS = struct.Struct("=5Q")
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(ms|s|m|min)?\s*$")


def duration(text: str) -> float:
    """``10s``, ``500ms``, ``2m``, ``1.5`` (seconds) -> seconds."""
    m = _DURATION.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 10s, 500ms, 2m)")
    v = float(m.group(1)) * {"ms": 1e-3, "s": 1.0, None: 1.0, "m": 60.0, "min": 60.0}[m.group(2)]
    return v


def positive_duration(text: str) -> float:
    v = duration(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
    return v


def _spec(text: str) -> Tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected GLOB=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    if not k:
        raise argparse.ArgumentTypeError(f"empty channel pattern in {text!r}")
    return k, v


def window_spec(text: str) -> Tuple[str, float, float]:
    """``GLOB=PRE,POST`` (per-channel windows)."""
    k, v = _spec(text)
    parts = v.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected GLOB=PRE,POST, got {text!r}")
    return k, duration(parts[0]), duration(parts[1])


def silence_spec(text: str) -> Tuple[str, float]:
    k, v = _spec(text)
    return k, duration(v)


def when_spec(text: str) -> condition.Condition:
    from . import condition

    try:
        return condition.parse(text)
    except condition.ConditionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class Trigger(NamedTuple):
    kind: str     # signal, channel, process-death, lock-owner-death, silence, value, task, dump
    source: str
    time_ns: int  # CLOCK_MONOTONIC
    note: str = ""

    def record(self, offset: int) -> Dict[str, object]:
        return {"kind": self.kind, "source": self.source, "time_ns": self.time_ns,
                "wall_time_ns": self.time_ns + offset, "note": self.note}


class OpenWatch:
    """inotify on the watched channels' files, for two jobs.

    HOLDERS (IN_OPEN, IN_CLOSE): readable when a process opens or closes
    one. A holder keeps its file open (the library maps it: a mapping holds
    the file until it is unmapped), so only opens not matched by a close
    can be a new holder; scanning every process's mappings (as `nerve who`
    does) costs tens of milliseconds on a busy host, so the recorder does
    it only then. Polled, but after each wake-up by it not for
    OPENS_READ_S (tools that stat every channel each second would wake
    the recorder each time); its events are read at every wake-up.

    WRITERS (IN_CLOSE_WRITE, IN_ATTRIB, IN_DELETE_SELF): polled, the
    moments a writer lock's owner can have died. Only writers take the
    lock, and a writer opens its channel's file for writing; a process's
    death releases its mappings and descriptors, and the kernel marks its
    robust locks "owner died" before (exit_mm() handles the robust list,
    then the mappings and files go), so the file's last release by a
    writer, IN_CLOSE_WRITE, comes after the mark. Readers' and tools'
    read-only opens (IN_CLOSE_NOWRITE) do not wake it. IN_ATTRIB and
    IN_DELETE_SELF say that the name may now name another file (a channel
    grown, or removed and made anew), to be watched again."""

    IN_ATTRIB = 0x04
    IN_CLOSE_WRITE = 0x08
    IN_CLOSE = IN_CLOSE_WRITE | 0x10  # | IN_CLOSE_NOWRITE
    IN_OPEN = 0x20
    IN_DELETE_SELF = 0x400
    IN_Q_OVERFLOW = 0x4000
    IN_IGNORED = 0x8000  # the watch is gone (its file was freed)
    HOLDERS = IN_OPEN | IN_CLOSE
    WRITERS = IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF
    EVENT = struct.Struct("=iIII")  # struct inotify_event: wd, mask, cookie, len

    def __init__(self, paths: Sequence[str], mask: int = HOLDERS) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.mask = mask
        self.fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), "inotify_init1")
        self.paths: Dict[int, str] = {}  # watch descriptor -> path
        self.overflow = False  # the kernel's queue overflowed: events were lost
        self.read = 0  # events read by the last drain()
        try:
            for p in paths:
                self.add(p)
        except OSError:
            os.close(self.fd)
            raise

    def add(self, path: str) -> bool:
        """Watch the file the path names now (again: an inotify watch is
        on a file, not a name). False if there is none; OSError if inotify
        refuses (its limits)."""
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), self.mask)
        if wd < 0:
            e = ctypes.get_errno()
            if e == errno.ENOENT:
                return False
            raise OSError(e, os.strerror(e), path)
        self.paths[wd] = path
        return True

    def events(self) -> List[Tuple[str, int]]:
        """Every pending event: (path, mask)."""
        out = []
        while True:
            try:
                buf = os.read(self.fd, 4096)
            except BlockingIOError:
                return out
            if not buf:
                return out
            at = 0
            while at + self.EVENT.size <= len(buf):
                wd, mask, _cookie, n = self.EVENT.unpack_from(buf, at)
                self.overflow = self.overflow or bool(mask & self.IN_Q_OVERFLOW)
                path = self.paths.pop(wd, None) if mask & self.IN_IGNORED else self.paths.get(wd)
                if path is not None:
                    out.append((path, mask))
                at += self.EVENT.size + n

    def drain(self) -> int:
        """Read every pending event; the opens less the closes among them
        (``read``: how many events there were)."""
        ev = self.events()
        self.read = len(ev)
        return sum(bool(m & self.IN_OPEN) - bool(m & self.IN_CLOSE) for _, m in ev)

    def close(self) -> None:
        os.close(self.fd)


class TriggerWaiter:
    """The trigger channel, waited on by a thread of its own (blocked on
    the channel's futex with the GIL released). Each message is queued and
    a byte written to ``wake_fd``, the write end of the pipe the armed
    recorder polls, so a trigger message wakes it at once without a timer.
    The Python binding waits in slices of 50 ms (it looks for signals
    between them, even on a thread that never handles one), so this
    thread wakes 20 times a second without running any Python: about
    0.1 % of a core on the development VM, most of the armed cost."""

    def __init__(self, ch: nerve.Channel, wake_fd: int) -> None:
        self.ch = ch
        self.wake_fd = wake_fd
        self.messages: "collections.deque[nerve.Message]" = collections.deque()
        self.error: Optional[str] = None
        self.thread = threading.Thread(target=self._run, name="blackbox-trigger", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                msg = self.ch.get(wait=True)
            except nerve.Cancelled:
                return
            except nerve.Error as e:  # the channel went bad: say so once, stop
                self.error = str(e)
                msg = None
            if msg is not None:
                self.messages.append(msg)
            try:
                os.write(self.wake_fd, b"t")
            except BlockingIOError:
                pass  # the pipe is full: the recorder has wake-ups pending
            if msg is None:
                return

    def take(self) -> List[nerve.Message]:
        out = []
        while self.messages:
            out.append(self.messages.popleft())
        return out

    def close(self) -> None:
        self.ch.cancel()
        self.thread.join()
        self.ch.close()


class Shadow:
    """The opt-in shadow buffer (--shadow) of a channel whose ring cannot
    hold its pre window: every message is copied out as it comes (a reader
    handle of its own, read at each wake-up) into a cache trimmed to the
    window, the way rosbag2's snapshot mode keeps every channel. Only the
    channels the plan says are too short get one."""

    def __init__(self, name: str, pre_s: float) -> None:
        self.name = name
        # The window, and a second more: a trigger's time may be a little
        # in the past (a message's commit time, seen at the next wake-up).
        self.keep_ns = int((pre_s + 1.0) * 1e9)
        self.ch = nerve.open(name)
        self.cache: "collections.deque[nerve.Message]" = collections.deque()
        self.missed = 0  # messages overwritten before they were copied

    def pump(self) -> None:
        while True:
            msg = self.ch.get()
            if msg is None:
                break
            self.missed += msg.missed
            self.cache.append(msg._replace(data=bytes(msg.data)))
        # Keep one message at or before the window's start: the last state.
        limit = nerve.now_ns() - self.keep_ns
        while len(self.cache) > 1 and self.cache[1].time_ns <= limit:
            self.cache.popleft()


class TaskWatch:
    """A channel of a task's statistics (one struct nerve_task_stats per
    cycle): every message is read in order, and a cycle whose overruns,
    skipped releases or timeouts went up is a trigger at its commit time."""

    COUNTERS = ("overruns", "skipped", "timeouts")

    def __init__(self, name: str) -> None:
        self.name = name
        self.ch = nerve.open(name)
        head = self.ch.stat().head_seq
        self.last: Optional[Tuple[int, ...]] = None
        if head:
            try:
                self.last = self._unpack(self.ch.get(seq=head))
            except nerve.Overwritten:
                pass
        self.ch.seek(head)
        self.missed = 0

    @staticmethod
    def _unpack(msg: Optional[nerve.Message]) -> Optional[Tuple[int, ...]]:
        if msg is None or len(msg.data) < _TASK_STATS.size:
            return None
        return _TASK_STATS.unpack_from(msg.data)

    def poll(self) -> List[Tuple[nerve.Message, str]]:
        """(message, what went up) of each cycle that missed a deadline."""
        fired = []
        while True:
            msg = self.ch.get()
            if msg is None:
                return fired
            self.missed += msg.missed
            now = self._unpack(msg)
            if now is None:
                continue
            base = self.last
            if base is None or now[0] <= base[0]:
                # No message before, or a task started again (counting from
                # 0): its first cycle is compared with zeros, a later one
                # becomes the base.
                base = (0,) * 5 if now[0] == 1 else None
            if base is not None:
                up = [f"{c} {a} -> {b}" for c, a, b in zip(self.COUNTERS, base[1:4], now[1:4]) if b > a]
                if up:
                    fired.append((msg, f"cycle {now[0]}: {', '.join(up)}"))
            self.last = now


class ChannelDump:
    """One channel's part of an incident."""

    __slots__ = ("name", "pre_s", "post_s", "ch", "to_file", "next_seq", "mcap_id", "messages",
                 "missed", "last_state_seq", "first_ns", "last_ns", "done")

    def __init__(self, name: str, pre_s: float, post_s: float, ch: nerve.Channel, to_file: bool) -> None:
        self.name = name
        self.pre_s = pre_s
        self.post_s = post_s
        self.ch = ch
        self.to_file = to_file   # payloads copied file to file (large messages)
        self.next_seq = 0        # next sequence number to copy
        self.mcap_id = 0
        self.messages = 0
        self.missed = 0
        self.last_state_seq = 0  # 0: none before the window
        self.first_ns = 0        # commit time of the first message in the window
        self.last_ns = 0
        self.done = False


class PlanRow(NamedTuple):
    name: str
    rate_hz: float
    holds_s: float      # the window the ring holds at that rate
    pre_s: float
    shorter: bool
    type: str = ""      # the channel's type (metadata)


def _oldest_time(ch: nerve.Channel, seq: int) -> Optional[int]:
    """The commit time of message seq, read through a view: a copy of an
    image would cost its size in the recorder's heap for good (glibc
    keeps a freed block of a few MB), and the close unmaps the ring at
    once (no buffer of the mapping is kept). The time is validated when
    the view is taken, so a message overwritten before the view ends
    (StaleView) still has it."""
    t = None
    try:
        with ch.view(seq=seq) as msg:
            t = msg.time_ns if msg is not None else None
    except nerve.StaleView:
        pass
    return t


#: The plan reads a channel's oldest message as the stat found it; on a
#: busy ring a writer may overwrite it in between: the plan looks again
#: (a ring that turns over faster than a stat and a read, every time,
#: is left out of the plan, as a channel gone is).
PLAN_TRIES = 8


def plan(names: Sequence[str], windows: "Windows") -> List[PlanRow]:
    """For each channel: the rate over what its ring holds and the window
    (in seconds) the ring holds at that rate (slots and data ring both
    bound it: it is their oldest message's age, as the ring is full once
    it has wrapped)."""
    rows = []
    now = nerve.now_ns()
    for name in names:
        pre, _post = windows.of(name)
        try:
            with nerve.open(name, lazy=True) as ch:  # reads one message
                typ = ch.metadata.type or ""
                for attempt in range(PLAN_TRIES):
                    st = ch.stat()
                    n = st.head_seq - st.tail_seq + 1 if st.head_seq else 0
                    try:
                        oldest_ns = _oldest_time(ch, st.tail_seq) if n > 0 else None
                        break
                    except nerve.Overwritten:  # a busy ring moved on since the stat
                        if attempt == PLAN_TRIES - 1:
                            raise
        except nerve.Error:
            continue
        if oldest_ns is None or n < 2 or st.newest_time_ns <= oldest_ns:
            rows.append(PlanRow(name, 0.0, float("inf"), pre, False, typ))
            continue
        rate = (n - 1) * 1e9 / (st.newest_time_ns - oldest_ns)
        wrapped = st.tail_seq > 1
        holds = (now - oldest_ns) / 1e9 if wrapped else float("inf")
        rows.append(PlanRow(name, rate, holds, pre, holds < pre, typ))
    return rows


def render_plan(rows: Sequence[PlanRow]) -> str:
    out = []
    for r in rows:
        holds = "all so far" if r.holds_s == float("inf") else f"{r.holds_s:.2f} s"
        warn = f"  WARNING: shorter than --pre {r.pre_s:g} s" if r.shorter else ""
        out.append(f"  {r.name}: {r.rate_hz:.1f} Hz, ring holds {holds}{warn}")
    return "\n".join(out)


class Windows(NamedTuple):
    pre: float
    post: float
    overrides: Sequence[Tuple[str, float, float]] = ()

    def of(self, name: str) -> Tuple[float, float]:
        for glob, pre, post in self.overrides:
            if fnmatch.fnmatchcase(name, glob):
                return pre, post
        return self.pre, self.post


class DumpHeap:
    """glibc's malloc held for a dump, and given back after it.

    A dump's chunk buffers (records of up to a MiB, or one large message)
    are freed once written. By default glibc returns such memory to the
    kernel at once (an mmap'ed block, or the heap's top beyond 128 KiB),
    so every chunk's buffer is fresh pages: a page fault every 4 KiB, a
    third of the time of a dump of small messages. While a dump runs,
    blocks up to MMAP_MAX come from the heap and the heap is not trimmed;
    after it, malloc_trim gives it all back, so that the armed recorder
    stays small. Elsewhere than glibc this does nothing."""

    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # malloc.h
    MMAP_MAX = 64 << 20
    TRIM_DEFAULT = 128 << 10
    _libc: Optional[ctypes.CDLL] = None

    @classmethod
    def _glibc(cls) -> Optional[ctypes.CDLL]:
        if cls._libc is None:
            try:
                libc = ctypes.CDLL(None)
                libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
                libc.malloc_trim.argtypes = [ctypes.c_size_t]
                cls._libc = libc
            except (OSError, AttributeError):
                return None
        return cls._libc

    @classmethod
    def hold(cls) -> None:
        libc = cls._glibc()
        if libc is not None:
            libc.mallopt(cls.M_MMAP_THRESHOLD, cls.MMAP_MAX)
            libc.mallopt(cls.M_TRIM_THRESHOLD, 1 << 30)

    @classmethod
    def give_back(cls) -> None:
        libc = cls._glibc()
        if libc is not None:
            libc.mallopt(cls.M_TRIM_THRESHOLD, cls.TRIM_DEFAULT)
            libc.malloc_trim(0)


#: A channel whose messages average this many bytes or more has them
#: copied file to file (Incident._copy): no copy through this process and
#: no page of its ring mapped (the ring is opened lazily), so a window of
#: a GB costs one kernel copy into the file; such chunks carry no CRC.
FILE_COPY_MIN = 64 << 10


class Incident:
    """One MCAP file: the windows of every watched channel around one or
    more (merged) triggers."""

    def __init__(self, path: str, names: Sequence[str], windows: Windows, trigger: Trigger,
                 offset: int, compression: str = "none", shadows: Optional[Dict[str, Shadow]] = None) -> None:
        self.path = path
        self.shadows = shadows or {}
        self.triggers = [trigger]
        self.offset = offset
        self.t0 = trigger.time_ns
        self.channels: List[ChannelDump] = []
        self.missing: List[str] = []
        self._stream = open(path, "wb")
        self._writer = mcap_fast.Writer(self._stream, LIBRARY, compression)
        self._closed = False
        DumpHeap.hold()
        for name in names:
            pre, post = windows.of(name)
            try:
                ch = nerve.open(name, lazy=True)
            except nerve.Error:
                self.missing.append(name)
                continue
            st = ch.stat()
            to_file = not self._writer.compression and bool(st.head_seq) and (
                st.bytes_total // st.head_seq >= FILE_COPY_MIN)
            d = ChannelDump(name, pre, post, ch, to_file)
            self._register(d)
            self._start(d)
            self.channels.append(d)

    def end_ns(self, d: ChannelDump) -> int:
        return max(t.time_ns for t in self.triggers) + int(d.post_s * 1e9)

    def merge(self, trigger: Trigger) -> None:
        self.triggers.append(trigger)
        for d in self.channels:
            d.done = False

    def _register(self, d: ChannelDump) -> None:
        meta = d.ch.metadata
        enc = to_mcap(meta)
        schema_id = 0
        if enc.schema_encoding:
            schema_id = self._writer.register_schema(enc.schema_name, enc.schema_encoding, enc.schema)
        st = d.ch.stat()
        d.mcap_id = self._writer.register_channel(
            topic=d.name, message_encoding=enc.message_encoding, schema_id=schema_id,
            metadata={META_NAME: d.name, META_TYPE: meta.type or "",
                      META_ENCODING: meta.encoding or "",
                      META_SLOTS: str(st.slots), META_DATA_SIZE: str(st.data_size)})

    def _start(self, d: ChannelDump) -> None:
        """Find the last-state message (newest at or before T - pre) and
        write it; the window starts right after it."""
        start = self.t0 - int(d.pre_s * 1e9)
        st = d.ch.stat()
        d.next_seq = max(st.tail_seq, 1)
        shadow = self.shadows.get(d.name)
        if shadow is not None:
            shadow.pump()
            if self._from_shadow(d, shadow, start):
                return
        try:
            last = d.ch.get(at=start)
        except nerve.Error:
            last = None
        if last is not None:
            self._write(d, last)
            d.last_state_seq = last.seq
            d.next_seq = last.seq + 1

    def _from_shadow(self, d: ChannelDump, shadow: Shadow, start: int) -> bool:
        """The last state and the window's messages the ring no longer
        holds, from the shadow buffer (those it still holds are copied
        from the ring as for any channel). False when the shadow holds
        nothing older than the ring."""
        cached = list(shadow.cache)
        tail = d.ch.stat().tail_seq
        if not cached or cached[0].seq >= tail:
            return False
        before = [m for m in cached if m.time_ns <= start]
        if before:
            last = before[-1]
            self._write(d, last)
            d.last_state_seq = last.seq
            d.next_seq = last.seq + 1
        else:  # the shadow began after the window's start: it says how far
            d.next_seq = cached[0].seq
        end = self.end_ns(d)
        for m in cached:
            if m.seq < d.next_seq:
                continue
            if m.seq >= tail or m.time_ns > end:
                break  # the ring has it (copied from there), or past the window
            d.missed += m.seq - d.next_seq  # a gap in the shadow (its reader was overrun)
            self._write(d, m)
            if d.messages == 0:
                d.first_ns = m.time_ns
            d.messages += 1
            d.last_ns = m.time_ns
            d.next_seq = m.seq + 1
        return True

    def _write(self, d: ChannelDump, msg: nerve.Message) -> None:
        self._writer.add(d.mcap_id, msg.seq, msg.time_ns + self.offset, msg.data)

    def pump(self, now_ns: int) -> bool:
        """Copy what is there; True once every channel is complete."""
        complete = True
        for d in self.channels:
            if not d.done:
                self._copy(d, now_ns)
            complete = complete and d.done
        return complete

    def _copy(self, d: ChannelDump, now_ns: int) -> None:
        """Copy the channel's messages from d.next_seq on, up to the end
        of its post window. The hot loop of a dump runs in nerve's native
        ``_nerve.mcap_messages``, a chunk at a time with the GIL released:
        each message one library read (a copy, validated) straight into
        its MCAP record; one overwritten before it was copied is counted
        exactly in ``missed`` (the library's count of NEXT reads from
        d.next_seq). Before the first message of a window whose start
        the ring no longer held, that count is not loss: the achieved
        window (from the first message copied) says it."""
        end = self.end_ns(d)
        counting = bool(d.last_state_seq or d.messages)
        while True:
            try:
                run = self._copy_chunk(d, end, counting)
            except nerve.Lapped:
                # Writers overwrote the oldest message on every one of the
                # library's attempts (a ring that turns over faster than
                # one copy): nothing was copied or counted; the next pump
                # reads on from the same place, and the library's missed
                # count then takes in what was lost.
                return
            d.missed += run.missed
            d.next_seq = run.next_seq
            if run.count:
                if not d.messages:
                    d.first_ns = run.first_ns
                d.messages += run.count
                d.last_ns = run.last_ns
                counting = True
            if run.stop == "end":
                d.done = True
            elif run.stop == "caught_up":
                d.done = now_ns > end
            else:  # "full": the chunk was written; "error": raises next
                continue
            return

    def _copy_chunk(self, d: ChannelDump, end: int, counting: bool) -> "_nerve.McapRun":
        """One call of the native copy into the file's open chunk (or,
        for large messages, into a chunk of its own, file to file)."""
        w = self._writer
        if d.to_file:
            return w.add_file_records(d.mcap_id, functools.partial(
                _nerve.mcap_messages_to_file, d.ch, channel_id=d.mcap_id, seq=d.next_seq,
                end_ns=end, time_offset=self.offset, max_bytes=w.chunk_size,
                count_first_missed=counting))
        run = _nerve.mcap_messages(
            d.ch, d.mcap_id, d.next_seq, end, time_offset=self.offset, chunk_offset=w.size,
            max_bytes=w.chunk_size - w.size, count_first_missed=counting)
        w.add_records(d.mcap_id, run.data, run.index)
        return run

    def record(self) -> Dict[str, str]:
        chans = {}
        for d in self.channels:
            # Achieved: from the first message copied (the requested start,
            # if the last-state message was still there) to the last one.
            achieved_pre = d.pre_s if d.last_state_seq else (
                (self.t0 - d.first_ns) / 1e9 if d.messages else 0.0)
            chans[d.name] = {
                "requested_pre_s": d.pre_s, "requested_post_s": d.post_s,
                "achieved_pre_s": round(achieved_pre, 9),
                "achieved_post_s": round((self.end_ns(d) - self.t0) / 1e9, 9),
                "messages": d.messages, "missed": d.missed,
                "last_state_seq": d.last_state_seq,
                "first_seq": d.next_seq - d.messages - d.missed if d.messages else 0,
            }
        t = self.triggers[0]
        return {"kind": t.kind, "source": t.source, "time_ns": str(t.time_ns),
                "wall_time_ns": str(t.time_ns + self.offset), "note": t.note,
                "triggers": json.dumps([x.record(self.offset) for x in self.triggers]),
                "channels": json.dumps(chans), "missing": json.dumps(self.missing)}

    def close(self, release: bool = True) -> None:
        """Finish and close the file; with ``release``, also the channel
        handles (release() later otherwise: unmapping a large ring, whose
        mapping the library populates, takes as long as writing it, and
        the file is complete without it)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.add_metadata(TRIGGER_META, self.record())
            self._writer.add_metadata("nerve.recording", {
                "clock_offset_ns": str(self.offset), "started_monotonic_ns": str(self.t0),
                "recorder": LIBRARY, "host": os.uname().nodename})
            self._writer.add_metadata("nerve.missed", {d.name: str(d.missed) for d in self.channels})
            self._writer.finish()
        finally:
            self._stream.close()
            if release:
                self.release()

    def release(self) -> None:
        for d in self.channels:
            if not d.ch.closed:
                d.ch.close()
        DumpHeap.give_back()


def incident_name(out: str, trigger: Trigger, offset: int) -> str:
    import datetime

    wall = datetime.datetime.fromtimestamp((trigger.time_ns + offset) / 1e9, datetime.timezone.utc)
    base = f"incident-{wall.strftime('%Y%m%dT%H%M%S.%f')}Z-{trigger.kind}"
    path = os.path.join(out, base + ".mcap")
    n = 1
    while os.path.exists(path):
        path = os.path.join(out, f"{base}-{n}.mcap")
        n += 1
    return path


def prune(out: str, keep: Optional[int], keep_bytes: Optional[int]) -> List[str]:
    """Remove the oldest incident files beyond the last ``keep`` / over
    ``keep_bytes`` in all; returns those removed."""
    files = sorted((os.path.join(out, f) for f in os.listdir(out)
                    if f.startswith("incident-") and f.endswith(".mcap")), key=os.path.getmtime)
    removed = []
    total = sum(os.path.getsize(f) for f in files)
    while files and ((keep is not None and len(files) > keep)
                     or (keep_bytes is not None and total > keep_bytes and len(files) > 1)):
        f = files.pop(0)
        total -= os.path.getsize(f)
        os.unlink(f)
        removed.append(f)
    return removed


class Pruner:
    """prune() beside the recorder, in a thread: removing a GB incident
    file took 2.6-3.3 s on the development VM (ext4 mounted with
    ``discard`` gives the freed blocks back to the disk at once), and the
    recorder stays ready for the next trigger meanwhile. One prune runs at
    a time; a request while one runs makes it run once more after."""

    def __init__(self, out: str, keep: Optional[int], keep_bytes: Optional[int]) -> None:
        self.args = (out, keep, keep_bytes)
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._again = False

    def request(self) -> None:
        if self.args[1] is None and self.args[2] is None:
            return
        with self._lock:
            if self._thread is not None:
                self._again = True
                return
            self._thread = threading.Thread(target=self._run, name="blackbox-prune", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                for f in prune(*self.args):
                    print(f"{PROG}: removed {f} (--keep/--keep-bytes)", file=sys.stderr, flush=True)
            except OSError as e:
                print(f"{PROG}: --keep: {e.filename}: {e.strerror}", file=sys.stderr, flush=True)
            with self._lock:
                if not self._again:
                    self._thread = None
                    return
                self._again = False

    def join(self) -> None:
        """Wait for a prune that runs (at exit: no half-done removal)."""
        t = self._thread
        if t is not None:
            t.join()


def resolve(patterns: Sequence[str]) -> List[str]:
    infos = [i for i in nerve.list_channels() if i.error is None and i.name != TRIGGER_CHANNEL]
    exact = [p for p in patterns if not any(c in p for c in "*?[")]
    globs = [p for p in patterns if p not in exact]
    names = set(select_channels(globs, infos)) if globs else set()
    have = {i.name for i in infos}
    for p in exact:
        if p in have:
            names.add(p)
    return sorted(names)


class Armed:
    """The armed recorder: waits for triggers, dumps incidents."""

    def __init__(self, args: argparse.Namespace, types: Dict[str, str],
                 shadow: Sequence[str] = ()) -> None:
        """types: the type of each channel (read by the plan); shadow: the
        channels to keep a shadow buffer of."""
        self.args = args
        self.windows = Windows(args.pre, args.post, args.window or ())
        self.offset = realtime_offset_ns()
        self.names = resolve(args.patterns)
        self.watches: List[condition.Watch] = []
        self.tasks: List[TaskWatch] = []
        self.shadows: Dict[str, Shadow] = {}
        self._open_shadows_and_tasks(types, shadow)
        self.watch_missed: Dict[int, int] = {}
        if args.when:
            from . import condition

            try:
                self._watch_values(args.when)
            except condition.ConditionError as e:
                self._close_watches()
                die(PROG, str(e))
        self.opens: Optional[OpenWatch] = None    # holders (polled, with rests)
        self.writers: Optional[OpenWatch] = None  # writer locks (polled)
        self.opens_polled = False
        self.opens_rest_until = 0.0  # > 0: the opens are not polled until then
        self.by_path = {nerve.path(n): n for n in self.names}
        try:
            self.writers = OpenWatch(list(self.by_path), OpenWatch.WRITERS)
        except OSError as e:  # no inotify (limits): look every LOCK_POLL_S
            print(f"{PROG}: inotify: {e.strerror}; looking at the writer locks every "
                  f"{self._lock_every():g} s", file=sys.stderr, flush=True)
        # Writer locks whose owner died (NERVE_LOCK_OWNER_DIED) when armed
        # are not a trigger: only a death while armed is. Read once the
        # writers are watched: a death after this read is an event.
        self.lock_dead: Dict[str, bool] = {n: bool(st.lock_flags & nerve.LOCK_OWNER_DIED)
                                           for n, st in self._stats(self.names).items()}
        self.last_lock_check = time.monotonic()
        self.incident: Optional[Incident] = None
        self.pruner, self.last_trigger_ns = Pruner(args.out, args.keep, args.keep_bytes), 0
        self.recent: List[int] = []  # trigger times within the last minute
        self.pending: List[Trigger] = []
        self.pidfds: Dict[int, Tuple[int, str]] = {}  # fd -> (pid, what)
        self.watched_pids: Dict[int, int] = {}        # pid -> fd
        self.silence = args.silence or []
        self.silent: Dict[str, bool] = {}
        self.silence_due: Dict[str, int] = {}  # name -> when to look again (CLOCK_MONOTONIC ns)
        self.files: List[str] = []
        self.created_trigger = False
        self.poller = select.poll()
        # --pid before the trigger channel: a bad pid ends the program, and
        # must not leave the channel it would have made behind.
        for pid in args.pid or ():
            self._watch_pid(pid, f"pid {pid}")
        # One pipe wakes the poll for a trigger message (TriggerWaiter) and
        # for a signal (signal.set_wakeup_fd in main()).
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.poller.register(self.wake_r, select.POLLIN)
        self.trig = TriggerWaiter(self._trigger_channel(), self.wake_w)
        self.open_balance = 0  # opens less closes of watched files since the last scan
        self.open_since = 0.0  # when it became positive (time.monotonic)
        self.ros2: Optional[subprocess.Popen] = None
        self.last_scan = 0.0
        self.lock_check_due = False
        self.rescan_due = False
        if self.writers is not None:
            self.poller.register(self.writers.fd, select.POLLIN)
        if not args.no_holders:
            try:
                self.opens = OpenWatch(list(self.by_path))
                self._poll_opens(True)
            except OSError as e:  # no inotify (limits): scan every second
                print(f"{PROG}: inotify: {e.strerror}; looking for new holders every second",
                      file=sys.stderr, flush=True)
        self._rescan()
        if args.ros2_service:
            try:
                self._start_ros2(args.ros2_service, args.ros2_python)
            except SystemExit:
                self.close()  # the trigger channel it made goes too
                raise

    def _open_shadows_and_tasks(self, types: Dict[str, str], shadow: Sequence[str]) -> None:
        """--shadow: a copying buffer for each channel whose ring is shorter
        than its pre window (the plan's warning); a TaskWatch for each
        channel of task statistics. A channel gone since the plan is left
        out."""
        for name in shadow or ():
            try:
                self.shadows[name] = Shadow(name, self.windows.of(name)[0])
            except nerve.Error:
                continue
        for name in self.names:
            if types.get(name) == TASK_STATS_TYPE:
                try:
                    self.tasks.append(TaskWatch(name))
                except nerve.Error:
                    continue

    def _watch_values(self, conds: Sequence[condition.Condition]) -> None:
        """A reader handle per (condition, channel), its cursor at the
        newest message: every message after it is evaluated, in order."""
        from . import condition

        for cond in conds:
            names = resolve([cond.channel])
            if not names:
                raise condition.ConditionError(f"--when {cond.text!r}: no channel matches {cond.channel!r}")
            for name in names:
                ch = nerve.open(name)
                try:
                    head = ch.stat().head_seq
                    try:
                        newest = ch.get(seq=head) if head else None
                    except nerve.Overwritten:  # a burst since the stat: no sample
                        newest = None
                    self.watches.append(condition.Watch(cond, name, ch, newest))
                except BaseException:
                    ch.close()
                    raise
                ch.seek(head)

    def _close_watches(self) -> None:
        for w in [*self.watches, *self.tasks, *self.shadows.values()]:
            w.ch.close()
        self.watches = []
        self.tasks = []
        self.shadows = {}

    def _trigger_channel(self) -> nerve.Channel:
        name = self.args.trigger_channel
        try:
            ch = nerve.create(name, slots=16, size=1 << 16, encoding="json")
            self.created_trigger = True
        except nerve.ChannelExists:
            ch = nerve.open(name)
        ch.seek(ch.stat().head_seq)
        return ch

    def _start_ros2(self, service: str, python: str) -> None:
        """The ROS 2 service: blackbox_ros2.py under `nerve ros2 exec`
        with the ROS 2 Python (rclpy on rmw_nerve_cpp); a line on its
        standard output per call."""
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "blackbox_ros2.py")
        cmd = [sys.executable, "-m", "nerve_tools.ros2.exec", "--", python, script, service]
        import subprocess

        try:
            p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        except OSError as e:
            die(PROG, f"--ros2-service: {sys.executable}: {e.strerror}")
        assert p.stdout is not None
        ready = select.poll()
        ready.register(p.stdout, select.POLLIN)
        # Bounded: rclpy starts in about a second, far less than this.
        if not ready.poll(ROS2_START_S * 1000):
            p.kill()
            p.wait()
            die(PROG, f"--ros2-service {service}: the service did not start within {ROS2_START_S} s")
        line = p.stdout.readline().decode("utf-8", "replace").split()
        if line[:1] != ["ready"]:
            p.wait()
            die(PROG, f"--ros2-service {service}: the service did not start ({python} with rclpy "
                f"on rmw_nerve_cpp; --ros2-python names the ROS 2 Python; its error is above)")
        self.ros2 = p
        self.ros2_source = f"ros2 service {service} ({line[1] if len(line) > 1 else '?'})"
        self.poller.register(p.stdout, select.POLLIN)
        print(f"{PROG}: serving the ROS 2 service {service} ({line[1] if len(line) > 1 else '?'}) "
              f"in pid {p.pid}", file=sys.stderr, flush=True)

    def _ros2_calls(self, now: int) -> None:
        assert self.ros2 is not None and self.ros2.stdout is not None
        line = self.ros2.stdout.readline()
        if not line:  # it died: no more service
            print(f"{PROG}: the ROS 2 service's process ended (status {self.ros2.wait()}); "
                  f"no ROS 2 service trigger any more", file=sys.stderr, flush=True)
            self.poller.unregister(self.ros2.stdout)
            self.ros2.stdout.close()
            self.ros2 = None
            return
        self.trigger("ros2-service", self.ros2_source, when=now)

    def _stop_ros2(self) -> None:
        p, self.ros2 = self.ros2, None
        if p is None:
            return
        assert p.stdin is not None and p.stdout is not None
        p.stdin.close()  # it ends when its standard input does
        import subprocess

        try:
            p.wait(timeout=ROS2_START_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        p.stdout.close()

    def _watch_pid(self, pid: int, what: str) -> None:
        if pid in self.watched_pids or pid == os.getpid():
            return
        try:
            fd = os.pidfd_open(pid)
        except OSError as e:
            if what.startswith("pid "):
                die(PROG, f"--pid {pid}: {e.strerror}")
            return
        self.watched_pids[pid] = fd
        self.pidfds[fd] = (pid, what)
        self.poller.register(fd, select.POLLIN)

    def _rescan(self) -> None:
        """Holders of watched channels (as `nerve who` finds them)."""
        self.last_scan = time.monotonic()
        if self.args.no_holders:
            return
        from ..monitor import who

        try:
            res = who.scan(self.names)
        except OSError:
            return
        finally:
            self._drain_opens(own=True)  # the scan's own opens (lock holders)
            self.open_balance = 0
            self.rescan_due = False
            self.open_since = 0.0
        for u in res.uses:
            if u.channel in self.names:
                self._watch_pid(u.pid, f"{u.pid} ({u.command.split()[0] if u.command else '?'}) "
                                f"holding {u.channel}")

    def trigger(self, kind: str, source: str, note: str = "", when: Optional[int] = None) -> None:
        self.pending.append(Trigger(kind, source, when if when is not None else nerve.now_ns(), note))

    def _accept(self, t: Trigger) -> bool:
        """Cooldown and rate limit; a trigger during an incident's post
        window is merged whatever they say (it loses nothing)."""
        if self.incident is not None:
            self.incident.merge(t)
            print(f"{PROG}: {t.kind} trigger ({t.source}) merged into {self.incident.path}",
                  file=sys.stderr, flush=True)
            return False
        if self.last_trigger_ns and t.time_ns - self.last_trigger_ns < self.args.cooldown * 1e9:
            print(f"{PROG}: {t.kind} trigger ({t.source}) ignored: cooldown", file=sys.stderr, flush=True)
            return False
        self.recent = [x for x in self.recent if t.time_ns - x < 60e9]
        if len(self.recent) >= self.args.max_per_minute:
            print(f"{PROG}: {t.kind} trigger ({t.source}) ignored: rate limit", file=sys.stderr, flush=True)
            return False
        self.recent.append(t.time_ns)
        self.last_trigger_ns = t.time_ns
        return True

    def _check(self, now: int) -> None:
        self._rest_opens()  # first: it judges by what came while resting
        self._drain_opens()
        # Deaths (the pidfd is readable once the process has exited), the
        # wake pipe (a trigger message, a signal), the ROS 2 helper's calls;
        # the writers' closes and the opens are read elsewhere.
        for fd, _ in self.poller.poll(0):
            if fd in (w.fd for w in (self.writers, self.opens) if w is not None):
                continue
            if fd == self.wake_r:
                while True:
                    try:
                        if not os.read(self.wake_r, 4096):
                            break
                    except BlockingIOError:
                        break
                continue
            if self.ros2 is not None and self.ros2.stdout is not None and fd == self.ros2.stdout.fileno():
                self._ros2_calls(now)
                continue
            pid, what = self.pidfds.pop(fd)
            self.poller.unregister(fd)
            os.close(fd)
            del self.watched_pids[pid]
            self.trigger("process-death", what, when=now)
            self.lock_check_due = True  # did it hold a lock?
        # Trigger channel: one message per trigger, JSON {"note": ...}.
        if self.trig.error is not None:
            print(f"{PROG}: {self.args.trigger_channel}: {self.trig.error}; no trigger by message "
                  f"any more", file=sys.stderr, flush=True)
            self.trig.error = None
        for msg in self.trig.take():
            try:
                body = json.loads(bytes(msg.data))
                note = str(body.get("note", "")) if isinstance(body, dict) else str(body)
                src = str(body.get("source", "")) if isinstance(body, dict) else ""
            except ValueError:
                note, src = bytes(msg.data).decode("utf-8", "replace"), ""
            self.trigger("channel", src or self.args.trigger_channel, note, when=msg.time_ns)
        # Value conditions: every message since the last tick, in order; the
        # trigger time is the commit time of the message that fired.
        for w in self.watches:
            for msg, v in w.poll():
                self.trigger("value", f"{w.name}: {w.cond.field} {w.cond.fire} "
                             f"(message {msg.seq}: {json.dumps(v)})", when=msg.time_ns)
            self._report_missed(w, f"--when {w.cond.text!r}")
        # Shadow buffers: every message, while no incident reads the rings.
        if self.incident is None:
            for sh in self.shadows.values():
                sh.pump()
        # Real-time tasks' statistics: every cycle, in order.
        for tw in self.tasks:
            for msg, what in tw.poll():
                self.trigger("task", f"{tw.name}: {what}", when=msg.time_ns)
            self._report_missed(tw, "task statistics")
        self._check_headers(now)

    def _check_headers(self, now: int) -> None:
        """Writers that died holding the lock (the kernel marks a robust
        lock's word when its owner dies; the next writer recovers it, so
        the flag is seen unless a writer comes before the check): see
        _locks_due. Silences: every tick, on the channels --silence names."""
        locks = self._locks_due()
        names = [n for n in self.names if n in locks or self._silence_watched(n)]
        for name, st in self._stats(names).items():
            if name in locks:
                dead = bool(st.lock_flags & nerve.LOCK_OWNER_DIED)
                if dead and not self.lock_dead.get(name):
                    self.trigger("lock-owner-death", f"{name}: a writer died holding its lock", when=now)
                self.lock_dead[name] = dead
            due = []
            for glob, limit in self.silence:
                if fnmatch.fnmatchcase(name, glob):
                    quiet = st.head_seq and now - st.newest_time_ns > limit * 1e9
                    if quiet and not self.silent.get(name):
                        self.trigger("silence", f"{name} silent for more than {limit:g} s", when=now)
                    self.silent[name] = bool(quiet)
                    # When to look again: at the deadline of its newest
                    # message; once silent (or before its first message),
                    # after the limit (it re-arms when messages come back).
                    due.append(st.newest_time_ns + int(limit * 1e9) if st.head_seq and not quiet
                               else now + int(limit * 1e9))
            if due:
                self.silence_due[name] = min(due)

    def _lock_every(self) -> float:
        """The period of the check of every writer lock (LOCK_BACKSTOP_S)."""
        every = self.args.lock_backstop
        return every if self.writers is not None else min(every, LOCK_POLL_S)

    def _locks_due(self) -> "set[str]":
        """The channels whose writer lock to look at now, coalesced: those
        whose file a writer released since the last look (OpenWatch.
        WRITERS); all of them after a watched process died (it may have
        held a lock), when inotify lost events (IN_Q_OVERFLOW), and every
        _lock_every(). A name that may name another file now (IN_ATTRIB,
        IN_DELETE_SELF: grown, or removed and made anew) is watched again
        at once, and every name at each check of all (a file made anew
        after the events)."""
        due = set()
        w = self.writers
        if w is not None:
            for path, mask in w.events():
                due.add(self.by_path[path])
                if mask & ~OpenWatch.IN_CLOSE_WRITE:
                    self._rewatch(path)
            if w.overflow:
                w.overflow = False
                self.lock_check_due = True
        mono = time.monotonic()
        if self.lock_check_due or mono - self.last_lock_check >= self._lock_every():
            self.lock_check_due = False
            self.last_lock_check = mono
            if w is not None:
                for path in self.by_path:
                    self._rewatch(path)
            return set(self.names)
        return due

    def _rewatch(self, path: str) -> None:
        for w in (self.writers, self.opens):
            if w is not None:
                try:
                    w.add(path)
                except OSError:  # inotify's limits: the backstop still looks
                    pass

    def _report_missed(self, w: "condition.Watch | TaskWatch", what: str) -> None:
        """Say when a channel read message by message lost messages before
        they were read (its ring holds less than a wake-up's worth)."""
        if w.missed != self.watch_missed.get(id(w), 0):
            print(f"{PROG}: {what}: {w.missed} messages of {w.name} were overwritten before "
                  f"they were evaluated (its ring holds less than {TICK_S * 1e3:g} ms)",
                  file=sys.stderr, flush=True)
            self.watch_missed[id(w)] = w.missed

    def _silence_watched(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, glob) for glob, _ in self.silence)

    def _stats(self, names: Sequence[str]) -> Dict[str, object]:
        """nerve.stat of each name (about 60 us each on the development
        VM: it opens the file and closes it again, so its own opens are
        matched by closes and cause no scan). Not through handles kept
        open (1 us a stat): an open handle maps its whole ring, populated,
        which would put every ring into the recorder's RSS and page tables
        while armed."""
        self._drain_opens()
        out = {}
        for name in names:
            try:
                out[name] = nerve.stat(name)
            except nerve.Error:
                continue
        self._drain_opens(own=True)
        return out

    def _drain_opens(self, own: bool = False) -> None:
        """Count the watched files' opens and closes: a new holder keeps
        its file open, so a scan is due while opens outnumber closes.
        (A holder's close makes the balance negative; it is clamped at 0,
        so a new holder is still seen, unless it opens in the same drain
        as another closes: the rescan every RESCAN_S finds that one.) A
        scan waits until the balance has stayed positive for
        RESCAN_SETTLE_S: an open whose close had not come yet when the
        events were read is no holder. Events of others (not ``own``: the
        recorder's own stats and scans) stop the polling of the opens for
        OPENS_READ_S (_rest_opens)."""
        if self.opens is None:
            return
        self.open_balance = max(0, self.open_balance + self.opens.drain())
        if self.opens.read and not own and not self.opens_rest_until:
            self.opens_rest_until = time.monotonic() + OPENS_READ_S
            self._poll_opens(False)
        if self.opens.overflow:  # events were lost: look anyway
            self.opens.overflow = False
            self.open_balance = max(self.open_balance, 1)
        if self.open_balance > 0 and not self.rescan_due:
            self.open_since = time.monotonic()
        self.rescan_due = self.open_balance > 0

    def _rest_opens(self) -> None:
        """Once OPENS_READ_S has passed since the opens woke the recorder:
        read those that came meanwhile; none, and they are polled again,
        else the rest goes on."""
        if self.opens is None or not self.opens_rest_until or time.monotonic() < self.opens_rest_until:
            return
        self.opens_rest_until = 0.0
        self._drain_opens()
        if not self.opens_rest_until:
            self._poll_opens(True)

    def _poll_opens(self, on: bool) -> None:
        assert self.opens is not None
        if on and not self.opens_polled:
            self.poller.register(self.opens.fd, select.POLLIN)
        elif not on and self.opens_polled:
            self.poller.unregister(self.opens.fd)
        self.opens_polled = on

    def step(self) -> None:
        now = nerve.now_ns()
        self._check(now)
        since = time.monotonic() - self.last_scan
        every = self._rescan_every()
        settled = self.rescan_due and time.monotonic() - self.open_since >= RESCAN_SETTLE_S
        if self.incident is None and since > (RESCAN_MIN_S if settled else every):
            self.rescan_due = False
            self._rescan()
        while self.pending:
            t = self.pending.pop(0)
            if self._accept(t):
                self._open(t)
        if self.incident is not None and self.incident.pump(nerve.now_ns()):
            self._close()

    def _open(self, t: Trigger) -> None:
        path = incident_name(self.args.out, t, self.offset)
        print(f"{PROG}: {t.kind} trigger ({t.source}){': ' + t.note if t.note else ''}; "
              f"writing {path}", file=sys.stderr, flush=True)
        self.incident = Incident(path, self.names, self.windows, t, self.offset, self.args.compression,
                                 self.shadows)
        for m in self.incident.missing:
            print(f"{PROG}: {m}: no longer there; not in the file", file=sys.stderr, flush=True)

    def _close(self) -> None:
        inc = self.incident
        assert inc is not None
        self.incident = None
        try:
            inc.close(release=False)
            self.files.append(inc.path)
            missed = sum(d.missed for d in inc.channels)
            print(f"{PROG}: wrote {inc.path} ({human_bytes(os.path.getsize(inc.path))}, "
                  f"{sum(d.messages for d in inc.channels)} messages, {missed} missed)",
                  file=sys.stderr, flush=True)
        finally:
            inc.release()
        self.pruner.request()

    def wait(self) -> None:
        if self.incident is not None:
            time.sleep(0.005)  # following a post window: poll the rings
        else:
            self.poller.poll(max(1, int(self._timeout() * 1000) + 1))

    def _rescan_every(self) -> float:
        """The period of the holder rescan: none with --no-holders, every
        RESCAN_S with inotify, every RESCAN_MIN_S without."""
        if self.args.no_holders:
            return float("inf")
        return RESCAN_S if self.opens is not None else RESCAN_MIN_S

    def _timeout(self) -> float:
        """Seconds until the next thing that has no event to wake on."""
        if self.watches or self.tasks or self.shadows:
            return TICK_S  # they read every message
        mono = time.monotonic()
        every = self._rescan_every()
        due = [self.last_lock_check + self._lock_every() - mono,
               self.last_scan + every - mono]
        if self.opens_rest_until:
            due.append(self.opens_rest_until - mono)
        if self.rescan_due:
            due.append(max(self.open_since + RESCAN_SETTLE_S, self.last_scan + RESCAN_MIN_S) - mono)
        if self.silence_due:
            due.append((min(self.silence_due.values()) - nerve.now_ns()) / 1e9)
        return max(0.0, min(due))

    def close(self) -> None:
        if self.incident is not None:
            self.incident.close()
        self.pruner.join()
        for fd in self.pidfds:
            os.close(fd)
        for w in (self.opens, self.writers):
            if w is not None:
                w.close()
        self._close_watches()
        self._stop_ros2()
        self.trig.close()
        os.close(self.wake_r)
        os.close(self.wake_w)
        if self.created_trigger:
            try:
                nerve.unlink(self.args.trigger_channel)
            except nerve.Error:
                pass


# -- command line -----------------------------------------------------------


def _add_window(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pre", type=duration, default=10.0, metavar="DUR",
                   help="window before the trigger (default 10s)")
    p.add_argument("--post", type=duration, default=2.0, metavar="DUR",
                   help="window after the trigger (default 2s)")
    p.add_argument("--window", type=window_spec, action="append", metavar="GLOB=PRE,POST",
                   help="the windows of the channels matching GLOB (first match wins)")
    p.add_argument("--compression", choices=("none", "zstd", "lz4"), default="none",
                   help="compression of the file's chunks (default none: the fastest dump)")


def _help_width() -> int:
    """The width argparse's help would take (the terminal's, as
    shutil.get_terminal_size() finds it, less 2), found without importing
    shutil, which its HelpFormatter does at every add_argument() and which
    brings bz2, lzma and their libraries: 0.4 MB the armed recorder would
    keep."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns - 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, formatter_class=functools.partial(argparse.HelpFormatter, width=_help_width()),
        description="Flight recorder: armed on channels, it copies their rings into an MCAP "
        "file when something goes wrong (a watched process dies, a writer dies holding a "
        "channel's lock, a channel goes silent, a value crosses a limit (--when), a "
        "real-time task's statistics channel shows an overrun, "
        "SIGUSR1, `nerve blackbox trigger`, a message on "
        "the trigger channel, a call of --ros2-service). Subcommands: `trigger` and `dump --at`; see docs/blackbox.md.")
    p.add_argument("patterns", nargs="+", metavar="CHANNEL", help="channel names or glob patterns")
    _add_window(p)
    p.add_argument("-o", "--out", default=".", metavar="DIR", help="directory of the incident files")
    p.add_argument("--pid", type=int, action="append", metavar="PID",
                   help="also trigger when this process dies")
    p.add_argument("--no-holders", action="store_true",
                   help="do not watch the processes that hold the watched channels")
    p.add_argument("--lock-backstop", type=positive_duration, default=LOCK_BACKSTOP_S, metavar="DUR",
                   help="look at every watched channel's writer lock this often besides when a "
                   f"writer's file of it is released (default {LOCK_BACKSTOP_S:g}s; every "
                   f"{LOCK_POLL_S:g}s at most without inotify)")
    p.add_argument("--silence", type=silence_spec, action="append", metavar="GLOB=DUR",
                   help="trigger when a channel matching GLOB has no message for DUR")
    p.add_argument("--when", type=when_spec, action="append", metavar="'CHAN: FIELD OP VALUE [clear OP VALUE]'",
                   help="trigger when a decoded field of a message crosses a value (rising edge; "
                   "re-armed once 'clear OP VALUE' holds, or the condition no longer does), "
                   "e.g. 'robot.imu: linear_acceleration.z > 30 clear < 25'")
    p.add_argument("--trigger-channel", default=TRIGGER_CHANNEL, metavar="NAME",
                   help=f"channel whose messages trigger (default {TRIGGER_CHANNEL})")
    p.add_argument("--ros2-service", metavar="NAME",
                   help="also trigger on a call of this ROS 2 service (std_srvs/srv/Trigger, else "
                   "test_msgs/srv/Empty), served on rmw_nerve_cpp by rclpy in a helper process")
    p.add_argument("--ros2-python", default=os.environ.get("NERVE_ROS2_PYTHON", "python3"), metavar="PATH",
                   help="the Python with rclpy for --ros2-service (default $NERVE_ROS2_PYTHON, else python3)")
    p.add_argument("--cooldown", type=duration, default=1.0, metavar="DUR",
                   help="ignore triggers this long after one (default 1s)")
    p.add_argument("--max-per-minute", type=int, default=10, metavar="N",
                   help="at most N incidents a minute (default 10)")
    p.add_argument("--keep", type=int, metavar="N", help="keep only the last N incident files")
    p.add_argument("--keep-bytes", type=int, metavar="BYTES",
                   help="remove the oldest incident files beyond BYTES in all")
    p.add_argument("--shadow", action="store_true",
                   help="copy every message of the channels whose ring is shorter than --pre (the plan's "
                   "WARNING) into a buffer of the window, as a copying recorder does")
    p.add_argument("--plan", action="store_true", help="print the plan and exit")
    return p


def trigger_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog=f"{PROG} trigger",
                                description="Trigger the armed recorders (a message on the trigger channel).")
    p.add_argument("--note", default="", help="a note kept in the incident file")
    p.add_argument("--trigger-channel", default=TRIGGER_CHANNEL, metavar="NAME")
    args = p.parse_args(argv)
    try:
        with nerve.open(args.trigger_channel, write=True) as ch:
            ch.put(json.dumps({"note": args.note, "source": f"nerve blackbox trigger (pid {os.getpid()})"}).encode())
    except nerve.ChannelNotFound:
        die(PROG, f"{args.trigger_channel}: no armed recorder (the trigger channel does not exist)")
    except nerve.Error as e:
        die(PROG, str(e))
    return 0


def parse_time(text: str, offset: int) -> int:
    """ISO 8601 wall-clock time or Unix seconds -> CLOCK_MONOTONIC ns."""
    import datetime

    try:
        wall = float(text)
    except ValueError:
        try:
            d = datetime.datetime.fromisoformat(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not a time: {text!r} (ISO 8601, e.g. 2026-11-29T01:02:03.5Z, or Unix seconds)") from None
        if d.tzinfo is None:
            d = d.astimezone()
        wall = d.timestamp()
    return int(wall * 1e9) - offset


def dump_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog=f"{PROG} dump",
                                description="Write an incident file for a past time from what the rings still hold.")
    p.add_argument("patterns", nargs="+", metavar="CHANNEL")
    p.add_argument("--at", required=True, metavar="TIME", help="trigger time: ISO 8601 or Unix seconds")
    p.add_argument("--note", default="")
    p.add_argument("-o", "--out", default=".", metavar="DIR")
    _add_window(p)
    args = p.parse_args(argv)
    offset = realtime_offset_ns()
    try:
        t_ns = parse_time(args.at, offset)
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    names = resolve(args.patterns)
    if not names:
        die(PROG, f"no channel matches {' '.join(args.patterns)}")
    t = Trigger("dump", "nerve blackbox dump --at", t_ns, args.note)
    windows = Windows(args.pre, args.post, args.window or ())
    try:
        os.makedirs(args.out, exist_ok=True)
        inc = Incident(incident_name(args.out, t, offset), names, windows, t, offset, args.compression)
        try:
            while not inc.pump(nerve.now_ns()):
                time.sleep(0.005)
        finally:
            inc.close()
    except OSError as e:
        die(PROG, f"{e.filename or args.out}: {e.strerror}")
    print(inc.path)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["trigger"]:
        return trigger_main(argv[1:])
    if argv[:1] == ["dump"]:
        return dump_main(argv[1:])
    args = parser().parse_args(argv)
    for glob, _ in args.silence or ():
        nerve.check(glob.replace("*", "x").replace("?", "x").replace("[", "x").replace("]", "x"))
    names = resolve(args.patterns)
    if not names:
        die(PROG, f"no channel matches {' '.join(args.patterns)} ('nerve ls' lists channels)")
    windows = Windows(args.pre, args.post, args.window or ())
    rows = plan(names, windows)
    print(f"{PROG}: plan (pre {args.pre:g} s, post {args.post:g} s):\n{render_plan(rows)}",
          file=sys.stderr, flush=True)
    if args.plan:
        return 0
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        die(PROG, f"{args.out}: {e.strerror}")
    stop: List[int] = []
    armed = Armed(args, {r.name: r.type for r in rows}, [r.name for r in rows if r.shorter] if args.shadow else ())
    signal.signal(signal.SIGINT, lambda s, f: stop.append(s))
    signal.signal(signal.SIGTERM, lambda s, f: stop.append(s))
    signal.signal(signal.SIGUSR1, lambda s, f: armed.trigger("signal", "SIGUSR1"))
    signal.set_wakeup_fd(armed.wake_w)  # a signal ends the poll at once
    DumpHeap.give_back()  # what arming read and freed (the plan, the scans)
    if armed.shadows:
        print(f"{PROG}: shadow buffer (every message copied) for {', '.join(armed.shadows)}",
              file=sys.stderr, flush=True)
    print(f"{PROG}: armed on {', '.join(armed.names)}; watching {len(armed.pidfds)} processes; "
          f"pid {os.getpid()}", file=sys.stderr, flush=True)
    rc = 0
    try:
        while not stop or armed.incident is not None:
            armed.step()
            armed.wait()
    except OSError as e:
        print(f"{PROG}: {e.filename or args.out}: {e.strerror}; the incident files written "
              f"before are kept", file=sys.stderr, flush=True)
        rc = 1
    finally:
        signal.set_wakeup_fd(-1)  # before the pipe is closed
        try:
            armed.close()
        except OSError:
            rc = 1
    return rc
