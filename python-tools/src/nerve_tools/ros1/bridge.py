"""nerve ros1: a bridge between nerve channels and ROS 1 topics.

    nerve ros1 [--master URI] [--to-ros GLOB[:TOPIC]]... [--from-ros TOPIC[:CHANNEL]]...

The bridge is a ROS 1 node of its own: it speaks the master and slave
XML-RPC APIs and TCPROS itself (ros1/wire.py), on one asyncio event loop
that owns every socket, with bounded sizes, counts and deadlines (see
"Bounds" below). rospy is not used; genmsg (Debian's, found by
msg.enable) computes md5sums.

To ROS. Each channel matching a ``--to-ros`` glob whose encoding is
``ros1msg`` and whose type is a ROS 1 type ("pkg/Name") is advertised as a
ROS topic with that type, the md5sum ROS computes from the channel's schema
(the full message definition, see ``msg.md5sum``) and that definition,
so ``rostopic``, ``rosbag`` and roscpp/rospy subscribers take it as any
other topic. Every message committed to the channel after the bridge
opened it is sent as it is (no decoding). Channels appearing later are
picked up (the channel list is scanned twice a second); a channel that is
removed is unadvertised.

From ROS. Each ``--from-ros`` topic is subscribed with type ``*`` (raw
bytes). A publisher's connection header must name a ROS type (pkg/Name, at
most 255 characters) and a 32-digit md5sum; before the channel exists it
must also carry a definition of at most 1 MiB whose md5sum is the one it
announces, and afterwards its type and md5sum must be the channel's. A
publisher that fails is dropped alone, with one line naming it and what
was wrong; a channel's type is never taken from such a publisher. The
channel is created at the first message with the type, encoding
``ros1msg`` and that definition as schema (or an existing channel of that
type is reused), sized from the first message (``--slots``/``--size`` set
it) within ``--max-channel-size`` and ``--max-import-total``.

No loops. When a name is bridged both ways, the bridge does not publish to
ROS the messages it put into the channel itself (it remembers their
sequence numbers), and does not connect to its own publications.

The master. The bridge waits for the master at start and watches it
afterwards (twice a second). When it comes back after being unreachable,
or a new master answers at the same address, every publication and
subscription of the bridge is registered again. When the master stays
unreachable longer than ``--master-timeout`` seconds the bridge exits with
status 1, and at once, with status 1, when a ``shutdown`` call reaches
its slave API (which anyone who reaches the port may send: a supervisor
then restarts it).

Bounds. The slave API and TCPROS listen on ``--listen`` (else ROS_IP,
else ROS_HOSTNAME, else 127.0.0.1). At most MAX_XMLRPC_CONNS XML-RPC
requests, MAX_HANDSHAKES TCPROS handshakes and MAX_INBOUND subscriber
connections at once (more are closed at once), each request and handshake
within wire.IO_TIMEOUT; at most MAX_PUBS_PER_TOPIC publishers per
topic and MAX_LINKS in all are connected (the rest wait for a free
place); a message longer than its channel is refused before it is read
(skipped, or the publisher dropped when it is longer than
``--max-channel-size``); a subscriber's queue holds ``--queue`` messages
(the oldest are dropped), and one that reads nothing for SLOW_SUB_S is
disconnected.

Errors concern one topic or one peer and are printed once each as
``nerve ros1: error: <name>: ...``, with peer-supplied text escaped. Exit
status: 0 after Ctrl-C/SIGTERM, 1 on a fatal error (no master, shutdown
call), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import concurrent.futures
import os
import re
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Optional, Sequence, Set, Tuple

import nerve
import nerve.bridge as kernel

from .. import _limits as limits
from .. import options
from .._common import die, is_pattern
from . import msg as ros1_msg
from .wire import (
    IO_TIMEOUT,
    MAX_DEFINITION,
    WireError,
    XmlRpcServer,
    encode_header,
    esc,
    read_header,
    serve_quietly,
    xmlrpc_call,
)

PROG = "nerve ros1"
RESCAN_S = 0.5  # how often the channel directory's changes are taken
WATCH_S = 0.5  # how often the master is asked whether it is still there
WAIT_S = 0.25  # longest wait on a channel before looking at the stop flag
MAX_TYPE = 255  # longest ROS type name taken from a peer
MAX_XMLRPC_CONNS = 64  # slave API requests served at once
MAX_HANDSHAKES = 64  # TCPROS subscriber handshakes at once
MAX_INBOUND = 256  # subscriber connections in all
MAX_SUBS_PER_TOPIC = 64  # subscriber connections per published topic
MAX_PUBS_PER_TOPIC = 32  # publishers connected per subscribed topic
MAX_LINKS = 256  # publishers connected in all
SLOW_SUB_S = 30.0  # a subscriber that takes nothing this long is dropped
RETRY_S = (1.0, 30.0)  # first and longest wait before reconnecting a publisher
LINE_S = 10.0  # a repeated report of a topic's publishers at most this often

# ROS 1 graph resource names: a leading '/' and segments of [A-Za-z0-9_]
# starting with a letter (ROS wiki, Names).
_ROS_NAME = re.compile(r"^(/[A-Za-z][A-Za-z0-9_]*)+$")
_ROS_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*/[A-Za-z][A-Za-z0-9_]*$")
_MD5 = re.compile(r"^[0-9a-f]{32}$")


def say(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def topic_of_channel(name: str) -> str:
    """The default topic of a channel: "robot.imu" -> "/robot/imu", with
    the characters ROS names do not allow ('-') made '_': the bridge
    kernel's rule (docs/bridge-kernel.md), as every bridge maps it."""
    return kernel.topic_of_channel(name)


def default_geometry(msg_len: int) -> Tuple[int, int]:
    """(slots, data ring bytes) for a channel whose messages are about
    ``msg_len`` bytes: a ring of at least 1 MiB that keeps at least 16
    messages (a power of two, at most 256 MiB), and one index slot per
    message that fits, between 16 and 1024."""
    size = 1 << 20
    while size < 16 * max(msg_len, 1) and size < (256 << 20):
        size <<= 1
    slots = max(16, min(1024, size // max(msg_len, 64)))
    return slots, size


class Own:
    """The bridge kernel's own-sequence guard (nerve.bridge.OwnGuard) of
    each channel the bridge puts into, so that the to-ROS side of the same
    channel does not send those messages back; a channel gone gets a new
    guard. ``lock`` also guards the from-ROS side's channel state."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._guards: Dict[str, kernel.OwnGuard] = {}

    def guard(self, channel: str) -> kernel.OwnGuard:
        """The guard of ``channel`` (made on first use); under ``lock``."""
        g = self._guards.get(channel)
        if g is None:
            g = self._guards[channel] = kernel.OwnGuard()
        return g

    def forget(self, channel: str) -> None:
        with self.lock:
            self._guards.pop(channel, None)

    def late(self, channel: str) -> int:
        """Checks of ``channel`` answered at the bound (an importer put
        stalled: an echo is possible)."""
        g = self._guards.get(channel)
        return int(g.stats()["late"]) if g is not None else 0

    def take(self, channel: str, seq: int) -> bool:
        """True if the bridge put message ``seq`` (waits, without the lock,
        while one of its puts is between its commit and its record)."""
        g = self._guards.get(channel)
        return g is not None and g.is_own(seq)


class Md5s:
    """md5sums of (type, definition), computed by genmsg in one worker
    thread (a definition may be 1 MiB: the event loop does not wait on it),
    the latest 64 remembered."""

    def __init__(self) -> None:
        self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="md5")
        self.cache: "collections.OrderedDict[Tuple[str, str], str]" = collections.OrderedDict()

    async def of(self, rtype: str, text: str) -> str:
        """The md5sum; ValueError when genmsg rejects the definition."""
        key = (rtype, text)
        if key in self.cache:
            self.cache.move_to_end(key)
            return self.cache[key]
        md5 = await asyncio.get_running_loop().run_in_executor(self.pool, ros1_msg.md5sum,
                                                               rtype, text)
        self.cache[key] = md5
        if len(self.cache) > 64:
            self.cache.popitem(last=False)
        return md5


# ---- to ROS: publications and their subscribers --------------------------


class SubConn:
    """One subscriber connected to a publication: a bounded queue and the
    task that writes it out."""

    def __init__(self, pub: "Publication", writer: asyncio.StreamWriter, caller: str) -> None:
        self.pub, self.writer, self.caller = pub, writer, caller
        self.q: Deque[bytes] = collections.deque(maxlen=pub.queue)
        self.ev = asyncio.Event()

    def offer(self, data: bytes) -> None:
        self.q.append(data)
        self.ev.set()

    async def run(self, reader: asyncio.StreamReader) -> None:
        async def drain_input() -> None:
            # Subscribers send nothing after their header: read and drop
            # until they hang up.
            while await reader.read(4096):
                pass

        watcher = asyncio.create_task(drain_input())
        try:
            while not watcher.done():
                try:
                    async with asyncio.timeout(1.0):
                        await self.ev.wait()
                except TimeoutError:
                    continue
                self.ev.clear()
                while self.q:
                    data = self.q.popleft()
                    self.writer.write(struct.pack("<I", len(data)) + data)
                    async with asyncio.timeout(SLOW_SUB_S):
                        await self.writer.drain()
        except (OSError, TimeoutError):
            pass
        finally:
            watcher.cancel()


class Publication:
    """A topic the bridge publishes. Messages come from a channel's reader
    thread through offer() (a bounded hand-over to the event loop)."""

    def __init__(self, node: "Node", topic: str, rtype: str, md5: str, definition: str,
                 latch: bool, queue: int) -> None:
        self.node, self.topic, self.type, self.md5 = node, topic, rtype, md5
        self.definition, self.latch, self.queue = definition, latch, queue
        self.subs: Set[SubConn] = set()
        self.latched: Optional[bytes] = None
        self._lock = threading.Lock()
        self._pending: Deque[bytes] = collections.deque(maxlen=queue)
        self._scheduled = False
        self.closed = False

    def offer(self, data: bytes) -> None:
        """From any thread: publish ``data`` (the oldest pending are
        dropped when the loop falls ``queue`` messages behind)."""
        with self._lock:
            self._pending.append(data)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self.node.loop.call_soon_threadsafe(self._flush)
        except RuntimeError:  # the loop has ended (shutting down)
            pass

    def _flush(self) -> None:
        with self._lock:
            items = list(self._pending)
            self._pending.clear()
            self._scheduled = False
        for data in items:
            if self.latch:
                self.latched = data
            for s in self.subs:
                s.offer(data)

    def reply_header(self) -> bytes:
        return encode_header({"callerid": self.node.caller_id, "topic": self.topic,
                              "type": self.type, "md5sum": self.md5,
                              "message_definition": self.definition,
                              "latching": "1" if self.latch else "0"})

    def close(self) -> None:
        self.closed = True
        for s in list(self.subs):
            s.writer.close()


# ---- from ROS: a subscription and its publisher links --------------------


class Link:
    """What one publisher announced in its connection header."""

    def __init__(self, uri: str, hdr: Dict[str, str]) -> None:
        self.uri = uri
        self.caller = hdr.get("callerid", "")
        self.type = hdr.get("type")
        self.md5 = hdr.get("md5sum")
        self.definition = hdr.get("message_definition")

    def name(self) -> str:
        return f"publisher {esc(self.caller or '?', 80)} ({esc(self.uri, 80)})"


class FromRos:
    """Mirrors one ROS topic into one channel (raw bytes)."""

    def __init__(self, bridge: "Ros1Bridge", topic: str, channel: str) -> None:
        self.bridge, self.topic, self.channel = bridge, topic, channel
        self.ch: Optional[nerve.Channel] = None
        self.created_ns = 0
        self.type: Optional[str] = None
        self.md5: Optional[str] = None
        self.encoding = ""
        self.too_large = 0
        self.refused = 0  # refusals of the channel since it last existed
        self.data_size = 0
        self.received = 0
        self.uris: List[str] = []
        self.links: Dict[str, "asyncio.Task[None]"] = {}
        self.rejected: Dict[str, str] = {}  # uri -> why, until it leaves the list
        self.retry: Dict[str, Tuple[float, float]] = {}  # uri -> (when, next backoff)
        self.waiting_since = 0.0  # when the "publishers wait" line was printed
        self.failed_at = 0.0  # when a failed connection was last reported
        self.failed_hidden = 0  # failed connections not reported since
        say(f"from-ros {topic} -> {channel}")

    # -- the channel --

    async def adopt_existing(self) -> None:
        """Take an existing channel's type and md5sum as the topic's."""
        with self.bridge.own.lock:
            if self.ch is not None:
                return
            try:
                ch = nerve.open(self.channel, write=True)
                meta = ch.metadata
                created = ch.stat().created_ns
            except nerve.Error:
                return
        md5: Optional[str] = None
        if meta.type and meta.schema:
            try:
                md5 = await self.bridge.md5s.of(meta.type,
                                                meta.schema.decode("utf-8", "replace"))
            except ValueError:
                md5 = None
        with self.bridge.own.lock:
            if self.ch is not None:
                ch.close()
                return
            self.ch, self.type, self.md5 = ch, meta.type or "", md5
            self.encoding, self.created_ns = meta.encoding or "", created
            self.data_size = ch.stat().data_size
        if self.encoding not in ("ros1msg", "ros1") or not _ROS_TYPE.match(self.type or ""):
            self.bridge.error(self.topic, f"channel {self.channel} exists with type "
                                          f"{esc(self.type)!r} ({esc(self.encoding)}), not a ROS 1 "
                                          f"channel: no publisher fills it until it is removed "
                                          f"(nerve rm {self.channel})")

    def check_gone(self) -> None:
        """Let go of a channel removed (or replaced) under the bridge, so
        that the next message creates it again."""
        with self.bridge.own.lock:
            if self.ch is None:
                return
            try:
                gone = nerve.stat(self.channel).created_ns != self.created_ns
            except nerve.Error:
                gone = True
            if gone:
                self.ch.close()
                self.ch, self.type, self.md5 = None, None, None
                self.bridge.budget.release(self.channel)
                say(f"from-ros {self.topic}: channel {self.channel} gone; "
                    f"created again at the next message")
        if gone:
            self.bridge.own.forget(self.channel)

    def _create(self, link: Link, size: int) -> Optional[str]:
        """Create (or reuse) the channel for ``link``'s first message; the
        caller holds the lock. Returns a reason to drop the publisher, or
        None (also when the channel was refused by the size bounds)."""
        b = self.bridge
        assert link.type is not None and link.definition is not None
        slots, data = default_geometry(size)
        slots = b.slots or slots
        # The first message sizes the channel, within --max-channel-size
        # and --max-import-total, or the channel is not made at all.
        data = b.size or max(min(data, b.budget.max_channel), size)
        schema = link.definition.encode()
        why = b.budget.admit(self.channel, slots, data, len(link.type) + len(schema) + 7,
                             count=self.refused == 0)
        if why:
            self.refused += 1
            if self.refused == 1:
                b.error(self.topic, f"channel {self.channel} not created (refused_size): {why}; "
                                    f"its messages are dropped until one fits")
            return None
        try:
            ch = nerve.create(self.channel, slots=slots, size=data, type=link.type,
                              encoding="ros1msg", schema=schema, exist_ok=True)
            meta = ch.metadata
            created = ch.stat().created_ns
        except nerve.Error as e:
            b.budget.release(self.channel)
            b.error(self.topic, f"cannot create channel {self.channel}: {e}")
            return None
        if meta.type != link.type:
            ch.close()
            b.budget.release(self.channel)
            return (f"channel {self.channel} carries {esc(meta.type)} ({esc(meta.encoding)}), "
                    f"the topic {esc(link.type)}")
        self.refused = 0
        say(f"created {self.channel} [{link.type}] {slots} slots, {data} bytes")
        self.ch, self.type, self.md5, self.encoding = ch, link.type, link.md5, "ros1msg"
        self.created_ns = created
        self.data_size = ch.stat().data_size
        return None

    def max_message(self) -> int:
        """Longest message that may be read now."""
        if self.ch is not None:
            return self.data_size
        return self.bridge.size or self.bridge.budget.max_channel

    def put(self, link: Link, data: bytes) -> Optional[str]:
        """Put one message; a reason to drop its publisher, or None."""
        b = self.bridge
        with b.own.lock:
            if self.ch is None:
                why = self._create(link, len(data))
                if why or self.ch is None:
                    return why
            if link.type != self.type or (self.md5 and link.md5 != self.md5):
                return (f"channel {self.channel} carries {esc(self.type)} ({esc(self.encoding)}), "
                        f"the topic {esc(link.type)} ({esc(link.md5)})")
            try:
                with b.own.guard(self.channel).put() as done:
                    done(self.ch.put(data))
            except nerve.MessageTooLarge:
                self.note_too_large(len(data))
                return None
            except nerve.Error as e:
                b.error(self.topic, f"put failed: {e}")
                return None
            self.received += 1
        return None

    def note_too_large(self, n: int) -> None:
        self.too_large += 1
        if self.too_large == 1:
            self.bridge.error(self.topic, f"a {n}-byte message does not fit channel "
                                          f"{self.channel} (dropped; see --size)")

    # -- the publishers --

    def update(self, uris: List[Any]) -> None:
        """The master's list of the topic's publishers (publisherUpdate,
        registerSubscriber): connect to new ones, drop those gone."""
        own = self.bridge.node.uri
        seen: Set[str] = set()
        listed: List[str] = []
        for u in uris:
            if isinstance(u, str) and u != own and u not in seen and len(u) <= 1024:
                seen.add(u)
                listed.append(u)
        self.uris = listed
        for u, task in list(self.links.items()):
            if u not in seen:
                task.cancel()
                del self.links[u]
        for d in (self.rejected, self.retry):
            for u in list(d):
                if u not in seen:
                    del d[u]
        self.fill()

    def fill(self) -> None:
        """Start links to listed publishers while there is room."""
        node, now = self.bridge.node, time.monotonic()
        if self.bridge.stopping:
            return
        waiting = 0
        for u in self.uris:
            if u in self.links or u in self.rejected or self.retry.get(u, (0.0, 0.0))[0] > now:
                continue
            if len(self.links) >= MAX_PUBS_PER_TOPIC or node.links >= MAX_LINKS:
                waiting += 1
                continue
            node.links += 1
            task = asyncio.get_running_loop().create_task(self._link(u))
            task.add_done_callback(lambda t, u=u: self._link_done(u, t))
            self.links[u] = task
        # One line when publishers start to wait, then one a LINE_S at most.
        if not waiting:
            self.waiting_since = 0.0
        elif now - self.waiting_since > LINE_S:
            self.waiting_since = now
            say(f"from-ros {self.topic}: {waiting} publishers wait for a connection "
                f"(at most {MAX_PUBS_PER_TOPIC} per topic, {MAX_LINKS} in all)")

    def _link_done(self, uri: str, task: "asyncio.Task[None]") -> None:
        self.bridge.node.links -= 1
        if self.links.get(uri) is task:
            del self.links[uri]
        if not self.bridge.stopping:
            self.fill()

    def _reject(self, link: Link, why: str) -> None:
        self.rejected[link.uri] = why
        self.bridge.error(self.topic, f"{why}; {link.name()} dropped")

    def _backoff(self, uri: str, why: str, quiet: bool = False) -> None:
        _, wait = self.retry.get(uri, (0.0, RETRY_S[0]))
        self.retry[uri] = (time.monotonic() + wait, min(wait * 2, RETRY_S[1]))
        if quiet:
            return
        # A peer may list thousands of URIs that never answer: one line a
        # LINE_S per topic at most, with the count of the others.
        now = time.monotonic()
        if now - self.failed_at < LINE_S:
            self.failed_hidden += 1
            return
        more = f" ({self.failed_hidden} more since the last such line)" if self.failed_hidden else ""
        self.failed_at, self.failed_hidden = now, 0
        say(f"error: {esc(self.topic)}: publisher {esc(uri, 80)}: {why}; retrying while it is "
            f"registered{more}")

    async def check_header(self, link: Link) -> Optional[str]:
        """What is wrong with a publisher's header, or None."""
        t = link.type
        if t is None:
            return "no type in its connection header"
        if len(t) > MAX_TYPE:
            return f"a type of {len(t)} characters (over {MAX_TYPE})"
        if not _ROS_TYPE.match(t):
            return f"type {esc(t)!s} is not a ROS message type (pkg/Name)" if t else "an empty type"
        if link.md5 is None:
            return "no md5sum in its connection header"
        if not _MD5.match(link.md5):
            return f"md5sum {esc(link.md5, 40)} is not 32 hex digits"
        if self.type is not None:
            if t != self.type or (self.md5 and link.md5 != self.md5):
                return (f"channel {self.channel} carries {esc(self.type)} ({esc(self.encoding)}), "
                        f"the topic {esc(t)} ({link.md5})")
            return None
        d = link.definition
        if d is None or not d.strip():
            return "no message definition in its connection header"
        if len(d) > MAX_DEFINITION:
            return f"a message definition of {len(d)} bytes (over {MAX_DEFINITION})"
        try:
            md5 = await self.bridge.md5s.of(t, d)
        except ValueError as e:
            return esc(str(e), 200)
        if md5 != link.md5:
            return f"md5sum {link.md5} is not {md5}, the md5sum of its definition of {t}"
        return None

    async def _link(self, uri: str) -> None:
        node = self.bridge.node
        writer: Optional[asyncio.StreamWriter] = None
        try:
            try:
                async with asyncio.timeout(IO_TIMEOUT):
                    r = await xmlrpc_call(uri, "requestTopic", node.caller_id, self.topic,
                                          [["TCPROS"]], max_response=64 << 10)
                    if (not isinstance(r, list) or len(r) != 3 or r[0] != 1
                            or not isinstance(r[2], list) or len(r[2]) != 3
                            or r[2][0] != "TCPROS" or not isinstance(r[2][1], str)
                            or not isinstance(r[2][2], int) or not 0 < r[2][2] < 65536
                            or not 0 < len(r[2][1]) <= 255):
                        raise WireError(f"requestTopic answered {esc(r, 80)}")
                    reader, writer = await asyncio.open_connection(r[2][1], r[2][2],
                                                                   limit=64 << 10)
                    writer.write(encode_header({"callerid": node.caller_id, "topic": self.topic,
                                                "md5sum": "*", "type": "*",
                                                "tcp_nodelay": "1"}))
                    hdr = await read_header(reader)
            except (OSError, TimeoutError, WireError) as e:
                self._backoff(uri, str(e) or type(e).__name__)
                return
            link = Link(uri, hdr)
            if link.caller == node.caller_id:
                self.rejected[uri] = "self"
                return
            if "error" in hdr:
                self._reject(link, f"refused the connection: {esc(hdr['error'])}")
                return
            if self.ch is None:
                await self.adopt_existing()
            why = await self.check_header(link)
            if why:
                self._reject(link, why)
                return
            self.retry.pop(uri, None)
            await self._stream(reader, link)
            self._backoff(uri, "connection closed", quiet=True)
        except (OSError, TimeoutError, WireError) as e:
            self._backoff(uri, str(e) or type(e).__name__)
        finally:
            if writer is not None:
                writer.close()

    async def _stream(self, reader: asyncio.StreamReader, link: Link) -> None:
        b = self.bridge
        while True:
            try:
                (n,) = struct.unpack("<I", await reader.readexactly(4))
                limit = self.max_message()
                if n > limit:
                    if n > max(limit, b.budget.max_channel):
                        self._reject(link, f"a {n}-byte message (over --max-channel-size "
                                           f"{b.budget.max_channel})")
                        return
                    self.note_too_large(n)
                    left = n
                    while left:
                        chunk = await reader.read(min(left, 1 << 16))
                        if not chunk:
                            return
                        left -= len(chunk)
                    continue
                data = await reader.readexactly(n)
            except asyncio.IncompleteReadError:
                return
            why = self.put(link, data)
            if why:
                self._reject(link, why)
                return

    def close(self) -> None:
        for task in self.links.values():
            task.cancel()
        self.links.clear()
        with self.bridge.own.lock:
            if self.ch is not None:
                self.ch.close()
                self.ch = None


# ---- the node ------------------------------------------------------------


def listen_address(arg: Optional[str]) -> Tuple[Optional[str], str, str]:
    """(address to bind, None for all; host to advertise; where it came
    from): --listen, else ROS_IP, else ROS_HOSTNAME, else 127.0.0.1."""
    for value, source in ((arg, "--listen"), (os.environ.get("ROS_IP"), "ROS_IP"),
                          (os.environ.get("ROS_HOSTNAME"), "ROS_HOSTNAME")):
        if value:
            if value in ("0.0.0.0", "::", "*"):
                return None, socket.gethostname(), source
            return value, value, source
    return "127.0.0.1", "127.0.0.1", "default"


class Node:
    """The bridge's ROS node: the slave API, the TCPROS server, the
    publications and subscriptions, calls to the master."""

    def __init__(self, bridge: "Ros1Bridge", bind: Optional[str], host: str) -> None:
        self.bridge = bridge
        self.bind, self.host = bind, host
        self.caller_id = f"/nerve_ros1_{os.getpid()}_{int(time.time() * 1000)}"
        self.pubs: Dict[str, Publication] = {}
        self.subs: Dict[str, FromRos] = {}
        self.links = 0
        self.inbound = 0
        self.handshakes = 0
        self.uri = ""
        self.tcp_port = 0
        self.loop = asyncio.get_running_loop()
        self.dirty = False  # a registration failed: renew all at the next tick
        S = str
        self.xmlrpc = XmlRpcServer({
            "getBusStats": ((S,), lambda *_: [1, "", [[], [], []]]),
            "getBusInfo": ((S,), self._bus_info),
            "getMasterUri": ((S,), lambda *_: [1, "", bridge.master_uri]),
            "shutdown": ((S,), self._shutdown),
            "getPid": ((S,), lambda *_: [1, "", os.getpid()]),
            "getSubscriptions": ((S,), lambda *_: [1, "", [[t, "*"] for t in self.subs]]),
            "getPublications": ((S,), lambda *_: [1, "", [[t, p.type]
                                                          for t, p in self.pubs.items()]]),
            "paramUpdate": ((S, S), lambda *_: [1, "", 0]),
            "publisherUpdate": ((S, S, list), self._publisher_update),
            "requestTopic": ((S, S, list), self._request_topic),
        }, MAX_XMLRPC_CONNS)
        self.tcpros: Optional[asyncio.AbstractServer] = None

    async def start(self) -> None:
        port = await self.xmlrpc.start(self.bind)
        self.uri = f"http://{self.host}:{port}/"
        self.tcpros = await asyncio.start_server(self._serve_sub, self.bind, 0, limit=64 << 10,
                                                 reuse_address=True)
        self.tcp_port = self.tcpros.sockets[0].getsockname()[1]

    def close(self) -> None:
        self.xmlrpc.close()
        if self.tcpros is not None:
            self.tcpros.close()

    async def master(self, method: str, *args: Any, timeout: float = 2.0) -> Any:
        """Call the master; the value of a (1, msg, value) answer, else
        WireError. Each call has its own connection."""
        r = await xmlrpc_call(self.bridge.master_uri, method, self.caller_id, *args,
                              timeout=timeout, max_response=16 << 20)
        if not isinstance(r, list) or len(r) != 3:
            raise WireError(f"{method}: malformed answer")
        if r[0] != 1:
            raise WireError(f"{method}: {esc(r[1])}")
        return r[2]

    # -- slave API --

    def _bus_info(self, caller: str, *_: Any) -> list:
        info, i = [], 0
        for t, p in self.pubs.items():
            for s in p.subs:
                i += 1
                info.append([i, s.caller, "o", "TCPROS", t, True])
        for t, f in self.subs.items():
            for u in f.links:
                i += 1
                info.append([i, u, "i", "TCPROS", t, True])
        return [1, "", info]

    def _shutdown(self, caller: str, *msg: Any) -> list:
        why = esc(msg[0]) if msg and isinstance(msg[0], str) else ""
        self.bridge.fail(f"shutdown requested through the slave API by {esc(caller, 80)}"
                         + (f" ({why})" if why else ""))
        return [1, "", 0]

    def _publisher_update(self, caller: str, topic: str, uris: list, *_: Any) -> list:
        f = self.subs.get(topic)
        if f is not None:
            f.update(uris)
        return [1, "", 0]

    def _request_topic(self, caller: str, topic: str, protocols: list, *_: Any) -> list:
        if topic not in self.pubs:
            return [0, f"not a publisher of {esc(topic, 80)}", []]
        if not any(isinstance(p, list) and p and p[0] == "TCPROS" for p in protocols):
            return [0, "only TCPROS is supported", []]
        return [1, "", ["TCPROS", self.host, self.tcp_port]]

    # -- TCPROS subscribers --

    async def _serve_sub(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_quietly(self._subscriber, reader, writer)

    async def _subscriber(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.inbound >= MAX_INBOUND or self.handshakes >= MAX_HANDSHAKES:
            writer.close()
            return
        self.inbound += 1
        self.handshakes += 1
        sub: Optional[SubConn] = None
        pub: Optional[Publication] = None
        try:
            try:
                async with asyncio.timeout(IO_TIMEOUT):
                    hdr = await read_header(reader)
                    pub = self.pubs.get(hdr.get("topic", ""))
                    err = None
                    if pub is None:
                        err = f"no topic {esc(hdr.get('topic', ''), 80)} here"
                    elif hdr.get("md5sum") not in ("*", pub.md5):
                        err = f"md5sum mismatch: {esc(hdr.get('md5sum'), 40)} is not {pub.md5}"
                    elif len(pub.subs) >= MAX_SUBS_PER_TOPIC:
                        err = f"more than {MAX_SUBS_PER_TOPIC} subscribers"
                    if err is not None or pub is None:
                        writer.write(encode_header({"error": err or ""}))
                        await writer.drain()
                        return
                    if hdr.get("tcp_nodelay") == "1":
                        sock = writer.get_extra_info("socket")
                        if sock is not None:
                            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    writer.write(pub.reply_header())
                    await writer.drain()
            except (OSError, TimeoutError, WireError):
                return
            finally:
                self.handshakes -= 1
            if pub.closed:
                return
            sub = SubConn(pub, writer, hdr.get("callerid", ""))
            pub.subs.add(sub)
            if pub.latched is not None:
                sub.offer(pub.latched)
            await sub.run(reader)
        finally:
            self.inbound -= 1
            if sub is not None and pub is not None:
                pub.subs.discard(sub)
            writer.close()


# ---- channels to ROS -------------------------------------------------------


class ToRos(threading.Thread):
    """Reads one channel (in this thread, blocking in nerve) and hands
    its messages to one publication."""

    def __init__(self, bridge: "Ros1Bridge", name: str, topic: str) -> None:
        super().__init__(name=f"to-ros {name}", daemon=True)
        self.bridge, self.channel, self.topic = bridge, name, topic
        self.stop = threading.Event()
        self.pub: Optional[Publication] = None
        self.ch: Optional[nerve.Channel] = None
        self.sent = 0

    async def setup(self) -> bool:
        """Open the channel and advertise the topic; False (reported) when
        the channel cannot be bridged."""
        b = self.bridge
        try:
            self.ch = nerve.open(self.channel)
            meta = self.ch.metadata
        except nerve.Error as e:
            return b.error(self.channel, f"cannot open: {e}")
        if not await self._advertise(meta):
            self.ch.close()
            self.ch = None
            return False
        return True

    async def _advertise(self, meta: nerve.Metadata) -> bool:
        b = self.bridge
        assert self.ch is not None
        if meta.encoding not in ("ros1msg", "ros1"):
            return b.error(self.channel, f"encoding is {esc(meta.encoding)!r}, not 'ros1msg'")
        rtype = meta.type or ""
        if not _ROS_TYPE.match(rtype) or len(rtype) > MAX_TYPE:
            return b.error(self.channel, f"type {esc(rtype)!r} is not a ROS 1 type (pkg/Name)")
        text = (meta.schema or b"").decode("utf-8", "replace")
        if not text.strip():
            return b.error(self.channel, "no schema (the ROS 1 message definition)")
        try:
            md5 = await b.md5s.of(rtype, text)
        except ValueError as e:
            return b.error(self.channel, esc(str(e), 200))
        if not _ROS_NAME.match(self.topic):
            return b.error(self.channel, f"{esc(self.topic)!r} is not a valid ROS topic name")
        if self.topic in b.node.pubs:
            return b.error(self.channel, f"topic {self.topic} is published for another channel")
        other = await b.topic_type(self.topic)
        if other is not None and other != rtype and other != "*":
            return b.error(self.channel,
                           f"topic {self.topic} has type {esc(other)} in ROS, the channel {rtype}")
        # Only what is committed from now on, except that a latched topic
        # starts with the newest message already there.
        try:
            head = self.ch.stat().head_seq
            self.ch.seek(head - 1 if b.latch and head else head)
        except nerve.Error as e:
            return b.error(self.channel, f"cannot read: {e}")
        pub = Publication(b.node, self.topic, rtype, md5, text, b.latch, b.queue)
        b.node.pubs[self.topic] = pub
        self.pub = pub
        b.register("registerPublisher", self.topic, rtype)
        say(f"to-ros {esc(self.channel)} -> {self.topic} [{rtype} {md5}]"
            f"{' latched' if b.latch else ''}")
        return True

    def run(self) -> None:
        b = self.bridge
        assert self.ch is not None and self.pub is not None
        while not self.stop.is_set():
            try:
                m = self.ch.get(wait=True, timeout=WAIT_S)
            except nerve.Timeout:
                continue
            except nerve.Cancelled:
                break
            except nerve.Error as e:
                b.loop.call_soon_threadsafe(b.error, self.channel, f"read failed: {e}")
                break
            if m is None or b.own.take(self.channel, m.seq):
                continue
            self.pub.offer(bytes(m.data))
            self.sent += 1

    def stop_thread(self) -> None:
        """Stop and join the reader thread (blocking: run it off the loop)."""
        self.stop.set()
        if self.ch is not None:
            self.ch.cancel()
        if self.is_alive():
            self.join(2 * WAIT_S + 1)
        if self.ch is not None and not self.is_alive():
            self.ch.close()


@dataclass
class Ros1Options:
    """What one run bridges, and how: the keywords of ``nerve ros1``'s flags
    in one place (:meth:`from_args`), as :class:`Ros1Bridge` takes them."""

    to_specs: List[Tuple[str, str]] = field(default_factory=list)  # (channel glob, topic or "")
    from_specs: List[Tuple[str, str]] = field(default_factory=list)  # (topic, channel or "")
    latch: bool = False
    queue: int = 100
    slots: int = 0
    size: int = 0
    master_uri: str = "http://localhost:11311"
    master_timeout: float = 60.0
    listen: Optional[str] = None
    budget: limits.ImportBudget = field(default_factory=limits.ImportBudget)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "Ros1Options":
        """From :func:`parser`'s result; raises LimitError for a bad bound."""
        return cls(to_specs=[options.split_spec(s) for s in args.to_ros],
                   from_specs=[options.split_spec(s) for s in args.from_ros],
                   latch=args.latch, queue=args.queue, slots=args.slots, size=args.size,
                   master_uri=args.master, master_timeout=args.master_timeout,
                   listen=args.listen, budget=limits.ImportBudget.from_args(args))


class Ros1Bridge:
    """nerve channels and ROS 1 topics, both ways: one node that registers
    with the master, publishes channels and subscribes to topics."""

    def __init__(self, opts: Ros1Options) -> None:
        self.opts = opts
        self.latch, self.queue = opts.latch, opts.queue
        self.slots, self.size = opts.slots, opts.size
        self.master_uri, self.master_timeout = opts.master_uri, opts.master_timeout
        self.listen, self.budget = opts.listen, opts.budget
        self.to_specs, self.from_specs = opts.to_specs, opts.from_specs
        self.own = Own()
        self.md5s = Md5s()
        self.to_ros: Dict[str, ToRos] = {}
        self.from_ros: List[FromRos] = []
        self.errors: Set[Tuple[str, str]] = set()
        self.dir: Optional[kernel.ChannelDir] = None  # of the --to-ros globs
        self.fatal: Optional[str] = None
        self.stopping = False
        self.pending: Set["asyncio.Task[None]"] = set()  # registrations under way

    def error(self, what: str, msg: str) -> bool:
        if (what, msg) not in self.errors:
            if len(self.errors) > 10000:  # peers choose the texts: keep the set bounded
                self.errors.clear()
            self.errors.add((what, msg))
            say(f"error: {esc(what)}: {msg}")
        return False

    def fail(self, why: str) -> None:
        if self.fatal is None:
            self.fatal = why
        self.stop_ev.set()

    # ---- the master ---------------------------------------------------

    async def master_pid(self) -> Optional[int]:
        try:
            pid = await self.node.master("getPid", timeout=1.0)
            return pid if isinstance(pid, int) else None
        except (OSError, TimeoutError, WireError):
            return None

    async def topic_type(self, topic: str) -> Optional[str]:
        """The type ROS knows for ``topic`` (None: unknown or no master)."""
        try:
            types = await self.node.master("getTopicTypes")
        except (OSError, TimeoutError, WireError):
            return None
        for entry in types if isinstance(types, list) else []:
            if isinstance(entry, list) and len(entry) == 2 and entry[0] == topic:
                return entry[1] if isinstance(entry[1], str) else None
        return None

    def register(self, method: str, topic: str, rtype: str) -> None:
        """Register a publication or subscription, in the background;
        a failure has the watcher renew everything."""
        async def go() -> None:
            try:
                r = await self.node.master(method, topic, rtype, self.node.uri)
            except (OSError, TimeoutError, WireError):
                self.node.dirty = True
                return
            f = self.node.subs.get(topic)
            if method == "registerSubscriber" and f is not None and isinstance(r, list):
                f.update(r)

        task = self.loop.create_task(go())
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def reregister(self) -> None:
        for topic, p in list(self.node.pubs.items()):
            await self.node.master("registerPublisher", topic, p.type, self.node.uri)
        for topic, f in list(self.node.subs.items()):
            r = await self.node.master("registerSubscriber", topic, "*", self.node.uri)
            if isinstance(r, list):
                f.update(r)

    async def watch_master(self) -> None:
        pid = await self.master_pid()
        down_since: Optional[float] = None
        while not self.stopping:
            await asyncio.sleep(WATCH_S)
            now_pid = await self.master_pid()
            if now_pid is None:
                if down_since is None:
                    down_since = time.monotonic()
                    say(f"master {self.master_uri} unreachable; retrying for "
                        f"{self.master_timeout:g} s")
                elif time.monotonic() - down_since > self.master_timeout:
                    self.fail(f"master {self.master_uri} unreachable for "
                              f"{self.master_timeout:g} s")
                continue
            if down_since is not None or now_pid != pid or self.node.dirty:
                self.node.dirty = False
                try:
                    await self.reregister()
                except (OSError, TimeoutError, WireError) as e:
                    say(f"re-registration failed ({e}); retrying")
                    self.node.dirty = True
                    continue  # down_since kept: retried at the next tick
                if down_since is not None or now_pid != pid:
                    say(f"master back (pid {now_pid}); registrations renewed")
            down_since, pid = None, now_pid

    # ---- the bridges --------------------------------------------------

    async def close_to_ros(self, t: ToRos) -> None:
        if t.pub is not None:
            t.pub.close()
            if self.node.pubs.get(t.topic) is t.pub:
                del self.node.pubs[t.topic]
            try:
                await self.node.master("unregisterPublisher", t.topic, self.node.uri,
                                       timeout=1.0)
            except (OSError, TimeoutError, WireError):
                pass
        await self.loop.run_in_executor(None, t.stop_thread)

    async def scan(self) -> None:
        """Start a ToRos for each channel matching a --to-ros spec that
        appeared, and stop those whose channel went: the bridge kernel's
        ChannelDir (inotify on /dev/shm, else a scan every 500 ms). A file
        replaced under the name is gone, then new, so a channel refused
        once is tried again only when it is made again."""
        if self.dir is None:
            self.dir = kernel.ChannelDir([pat for pat, _ in self.to_specs])
        while (ev := self.dir.next()) is not None:
            kind, name = ev
            t = self.to_ros.pop(name, None) if kind == "removed" else None
            if t is not None:
                await self.close_to_ros(t)
                say(f"to-ros {esc(name)}: channel gone; {esc(t.topic)} unadvertised")
            elif kind == "created" and name not in self.to_ros:
                await self.start_to_ros(name)

    async def start_to_ros(self, name: str) -> None:
        """The ToRos of channel ``name`` under the first --to-ros spec that
        serves it."""
        for pat, topic in self.to_specs:
            if is_pattern(pat):
                if not kernel.glob_match(pat, name):
                    continue
                t_name = topic_of_channel(name)
                if topic:
                    t_name = topic.rstrip("/") + t_name
            elif name != pat:
                continue
            else:
                t_name = topic or topic_of_channel(name)
            t = ToRos(self, name, t_name)
            if await t.setup():
                self.to_ros[name] = t
                t.start()
            return

    async def tick(self) -> None:
        while not self.stopping:
            try:
                if self.to_specs:
                    await self.scan()
                for f in self.from_ros:
                    f.check_gone()
                    f.fill()
            except nerve.Error as e:
                say(f"channel scan failed: {e}")
            await asyncio.sleep(RESCAN_S)

    async def run(self) -> int:
        self.loop = asyncio.get_running_loop()
        self.stop_ev = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.loop.add_signal_handler(sig, self.stop_ev.set)
        bind, host, source = listen_address(self.listen)
        self.node = Node(self, bind, host)
        deadline = time.monotonic() + self.master_timeout
        while await self.master_pid() is None:
            if self.stop_ev.is_set():
                return 0
            if time.monotonic() > deadline:
                die(PROG, f"no ROS master at {self.master_uri} "
                          f"(waited {self.master_timeout:g} s; see --master)")
            try:
                async with asyncio.timeout(WATCH_S):
                    await self.stop_ev.wait()
            except TimeoutError:
                pass
        try:
            await self.node.start()
        except OSError as e:
            die(PROG, f"cannot listen on {bind or 'all interfaces'} ({source}): {e}")
        for topic, channel in self.from_specs:
            if not _ROS_NAME.match(topic):
                self.error(topic, "not a valid ROS topic name")
                continue
            try:
                chan = channel or kernel.channel_of_topic(topic)
                nerve._nerve.name_check(chan)
            except nerve.Error as e:
                # (chan is unset, or a former topic's, when the mapping failed)
                self.error(topic, f"bad channel name {channel!r}: {e}" if channel
                           else f"no channel name for it: {e}")
                continue
            f = FromRos(self, topic, chan)
            self.from_ros.append(f)
            self.node.subs[topic] = f
            await f.adopt_existing()
            self.register("registerSubscriber", topic, "*")
        if self.to_specs:
            try:
                await self.scan()
            except nerve.Error as e:
                say(f"channel scan failed: {e}")
        if self.pending:  # ready means known to the master
            await asyncio.wait(set(self.pending), timeout=3.0)
        tasks = [self.loop.create_task(self.tick()), self.loop.create_task(self.watch_master())]
        for task in tasks:
            task.add_done_callback(self._task_done)
        say(f"listening on {host} ({source}): slave API {self.node.uri}, "
            f"TCPROS port {self.node.tcp_port}")
        say(f"bridging as {self.node.caller_id} with {self.master_uri}; Ctrl-C to stop")
        try:
            await self.stop_ev.wait()
        finally:
            self.stopping = True
            for task in tasks:
                task.cancel()
            await self.shutdown()
            if self.dir is not None:
                self.dir.close()
        for t in self.to_ros.values():
            late = self.own.late(t.channel)
            say(f"to-ros {esc(t.channel)}: {t.sent} messages published"
                + (f", {late} own-import checks answered late (possible echoes)"
                   if late else ""))
        for f in self.from_ros:
            say(f"from-ros {f.topic}: {f.received} messages put"
                + (f", {f.too_large} too large" if f.too_large else ""))
        if self.budget.refused:
            say(f"refused_size: {self.budget.refused} channels over the import bounds")
        if self.fatal:
            say(f"error: {self.fatal}")
            return 1
        return 0

    def _task_done(self, task: "asyncio.Task[None]") -> None:
        """The channel scan and the master watcher run as long as the
        bridge: one that ends on an error ends the bridge (status 1)."""
        if task.cancelled() or task.exception() is None:
            return
        e = task.exception()
        self.fail(f"internal error in {task.get_coro().__name__}: {type(e).__name__}: {e}")

    async def shutdown(self) -> None:
        """Unregister (bounded) and close everything."""
        node = self.node
        self.node.close()
        try:
            async with asyncio.timeout(2.0):
                for t in self.to_ros.values():
                    await self.close_to_ros(t)
                for f in self.from_ros:
                    f.close()
                    try:
                        await node.master("unregisterSubscriber", f.topic, node.uri, timeout=1.0)
                    except (OSError, TimeoutError, WireError):
                        pass
        except TimeoutError:
            pass
        for f in self.from_ros:
            f.close()
        self.md5s.pool.shutdown(wait=False, cancel_futures=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Bridge nerve channels and ROS 1 topics, both ways, "
                               "as raw ros1msg bytes.")
    p.add_argument("--master", default=os.environ.get("ROS_MASTER_URI", "http://localhost:11311"),
                   metavar="URI", help="ROS master (default: $ROS_MASTER_URI or "
                                       "http://localhost:11311)")
    p.add_argument("--listen", metavar="ADDR",
                   help="address of the node's XML-RPC and TCPROS ports, advertised to "
                        "other nodes (default: $ROS_IP, else $ROS_HOSTNAME, else 127.0.0.1; "
                        "0.0.0.0 listens on all interfaces)")
    options.add_ros_channels(p, "ROS", "ros1msg", "advertise the --to-ros topics latched")
    p.add_argument("--queue", type=int, default=100,
                   help="messages queued per ROS subscriber (default 100)")
    p.add_argument("--master-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up when the master is unreachable this long (default 60)")
    options.add_limits(p)
    return p


def master_proxy(uri: str, timeout: float = 1.0) -> Any:
    """A synchronous XML-RPC proxy with a timeout (for tests and tools;
    the bridge itself calls the master through .wire)."""
    import xmlrpc.client

    class _Transport(xmlrpc.client.Transport):
        def make_connection(self, host: Any) -> Any:
            conn = super().make_connection(host)
            conn.timeout = timeout
            return conn

    return xmlrpc.client.ServerProxy(uri, transport=_Transport())


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if not args.to_ros and not args.from_ros:
        p.error("give at least one --to-ros or --from-ros")
    for spec in args.to_ros:
        try:  # one that could never match says so now
            kernel.glob_check(options.split_spec(spec)[0])
        except nerve.Error as e:
            p.error(f"--to-ros {spec}: {e}")
    if args.slots < 0 or args.size < 0 or args.queue < 1 or args.master_timeout <= 0:
        p.error("--slots and --size must be >= 0, --queue >= 1, --master-timeout > 0")
    try:
        opts = Ros1Options.from_args(args)
    except limits.LimitError as e:
        p.error(str(e))
    try:
        ros1_msg.enable()
    except ImportError as e:
        die(PROG, str(e))
    return asyncio.run(Ros1Bridge(opts).run())


if __name__ == "__main__":
    sys.exit(main())
