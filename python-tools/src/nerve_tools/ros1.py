"""nerve ros1: a bridge between nerve channels and ROS 1 topics.

    nerve ros1 [--master URI] [--to-ros GLOB[:TOPIC]]... [--from-ros TOPIC[:CHANNEL]]...

To ROS. Each channel matching a ``--to-ros`` glob whose encoding is
``ros1msg`` and whose type is a ROS 1 type ("pkg/Name") is advertised as a
ROS topic with that type, the md5sum ROS computes from the channel's schema
(the full message definition, see ``ros1_msg.md5sum``) and that definition,
so ``rostopic``, ``rosbag`` and roscpp/rospy subscribers take it as any
other topic. Every message committed to the channel after the bridge
opened it is published; its bytes are handed to rospy as they are (a
message class whose ``serialize`` writes the buffer: no decoding, no
encoding). Channels appearing later are picked up (the channel list is
scanned twice a second); a channel that is removed is unadvertised.

From ROS. Each ``--from-ros`` topic is subscribed with ``rospy.AnyMsg``
(the raw bytes of each message); the first message's connection header
gives the type, md5sum and definition, and the channel is created with the
type, encoding ``ros1msg`` and that definition as schema (or an existing
channel of that type is reused). Its geometry is sized from the first
message (``--slots``/``--size`` set it). A latched topic arrives at once
when subscribed, and a nerve channel always holds its newest message, so
it stays available to late readers; with ``--latch`` the topics this
bridge advertises are latched too (a late ROS subscriber gets the newest
message, also one committed before the bridge started).

No loops. When a name is bridged both ways, the bridge does not publish to
ROS the messages it put into the channel itself (it remembers their
sequence numbers), and does not put into a channel what it published to
ROS itself (it drops connections whose ``callerid`` is its own).

The master. The bridge waits for the master at start and watches it
afterwards (twice a second). When it comes back after being unreachable,
or a new master answers at the same address, every publication and
subscription of the bridge is registered again, so nodes started
afterwards find the bridge. Connections already made between nodes do not
need the master and keep flowing meanwhile. When the master stays
unreachable longer than ``--master-timeout`` seconds the bridge exits with
status 1.

Errors. A channel that is not ``ros1msg``, carries no ROS type or schema,
or whose topic already has another type in ROS; a topic whose type differs
from an existing channel's; a message larger than its channel: each is
reported once on stderr as ``nerve ros1: error: <name>: ...`` and affects
only that topic. Exit status: 0 after Ctrl-C/SIGTERM, 1 on a fatal error
(no master), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import collections
import fnmatch
import os
import re
import signal
import sys
import threading
import time
import xmlrpc.client
from typing import Any, Deque, Dict, List, Optional, Sequence, Set, Tuple

import nerve

from . import _limits as limits
from . import ros1_msg
from ._common import channel_name, die, is_pattern

PROG = "nerve ros1"
RESCAN_S = 0.5  # how often the channel list is scanned for --to-ros globs
WATCH_S = 0.5  # how often the master is asked whether it is still there
WAIT_S = 0.25  # longest wait on a channel before looking at the stop flag
OWN_SEQS = 4096  # sequence numbers remembered per channel (see Own)

# ROS 1 graph resource names: a leading '/' and segments of [A-Za-z0-9_]
# starting with a letter (ROS wiki, Names).
_ROS_NAME = re.compile(r"^(/[A-Za-z][A-Za-z0-9_]*)+$")


def say(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def topic_of_channel(name: str) -> str:
    """The default topic of a channel: "robot.imu" -> "/robot/imu", with
    the characters ROS names do not allow ('-') made '_'."""
    return "/" + name.replace(".", "/").replace("-", "_")


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


class _Transport(xmlrpc.client.Transport):
    """XML-RPC with a timeout, so a vanished master never blocks a call."""

    def __init__(self, timeout: float) -> None:
        super().__init__()
        self._timeout = timeout

    def make_connection(self, host: Any) -> Any:
        conn = super().make_connection(host)
        conn.timeout = self._timeout
        return conn


def master_proxy(uri: str, timeout: float = 1.0) -> xmlrpc.client.ServerProxy:
    return xmlrpc.client.ServerProxy(uri, transport=_Transport(timeout))


class Own:
    """Sequence numbers the bridge itself put into each channel, so that
    the to-ROS side of the same channel does not send them back. put() and
    remember() happen under the lock, and the to-ROS side checks under it,
    so a reader woken by the commit cannot look before the number is
    recorded."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._seqs: Dict[str, Tuple[Set[int], Deque[int]]] = {}

    def remember(self, channel: str, seq: int) -> None:
        s, q = self._seqs.setdefault(channel, (set(), collections.deque()))
        s.add(seq)
        q.append(seq)
        if len(q) > OWN_SEQS:
            s.discard(q.popleft())

    def take(self, channel: str, seq: int) -> bool:
        """True (and forgets it) if the bridge put message ``seq``."""
        with self.lock:
            entry = self._seqs.get(channel)
            if entry is None or seq not in entry[0]:
                return False
            entry[0].discard(seq)
            return True


class ToRos(threading.Thread):
    """Publishes one channel's messages on one ROS topic."""

    def __init__(self, bridge: "Bridge", name: str, topic: str) -> None:
        super().__init__(name=f"to-ros {name}", daemon=True)
        self.bridge, self.channel, self.topic = bridge, name, topic
        self.stop = threading.Event()
        self.pub: Any = None
        self.ch: Optional[nerve.Channel] = None
        self.created = 0  # creation time of the channel (to notice a new one)
        self.sent = 0

    def setup(self) -> bool:
        """Open the channel and advertise the topic; False (reported) when
        the channel cannot be bridged."""
        b = self.bridge
        try:
            self.ch = nerve.open(self.channel)
            meta = self.ch.metadata
        except nerve.Error as e:
            return b.error(self.channel, f"cannot open: {e}")
        if not self._advertise(meta):
            self.ch.close()
            self.ch = None
            return False
        return True

    def _advertise(self, meta: nerve.Metadata) -> bool:
        b = self.bridge
        assert self.ch is not None
        if meta.encoding not in ("ros1msg", "ros1"):
            return b.error(self.channel, f"encoding is {meta.encoding!r}, not 'ros1msg'")
        rtype = meta.type or ""
        if rtype.count("/") != 1:
            return b.error(self.channel, f"type {rtype!r} is not a ROS 1 type (pkg/Name)")
        text = (meta.schema or b"").decode("utf-8", "replace")
        if not text.strip():
            return b.error(self.channel, "no schema (the ROS 1 message definition)")
        try:
            md5 = ros1_msg.md5sum(rtype, text)
        except ValueError as e:
            return b.error(self.channel, str(e))
        if not _ROS_NAME.match(self.topic):
            return b.error(self.channel, f"{self.topic!r} is not a valid ROS topic name")
        other = b.topic_type(self.topic)
        if other is not None and other != rtype and other != "*":
            return b.error(self.channel,
                           f"topic {self.topic} has type {other} in ROS, the channel {rtype}")
        import rospy

        self.cls = ros1_msg.raw_class(rtype, md5, text)
        self.pub = rospy.Publisher(self.topic, self.cls, queue_size=b.queue, latch=b.latch)
        # Only what is committed from now on, except that a latched topic
        # starts with the newest message already there.
        head = self.ch.stat().head_seq
        if b.latch and head:
            self.ch.seek(head - 1)
        else:
            self.ch.seek(head)
        say(f"to-ros {self.channel} -> {self.topic} [{rtype} {md5}]"
            f"{' latched' if b.latch else ''}")
        return True

    def run(self) -> None:
        b = self.bridge
        while not self.stop.is_set():
            assert self.ch is not None
            try:
                m = self.ch.get(wait=True, timeout=WAIT_S)
            except nerve.Timeout:
                continue
            except nerve.Cancelled:
                break
            except nerve.Error as e:
                b.error(self.channel, f"read failed: {e}")
                break
            if m is None or b.own.take(self.channel, m.seq):
                continue
            try:
                self.pub.publish(self.cls(m.data))
                self.sent += 1
            except Exception as e:  # rospy raises ROSException and others
                if self.stop.is_set():
                    break
                b.error(self.channel, f"publish failed: {e}")

    def close(self) -> None:
        self.stop.set()
        if self.ch is not None:
            self.ch.cancel()
        if self.is_alive():
            self.join(2 * WAIT_S + 1)
        if self.pub is not None:
            self.pub.unregister()
        if self.ch is not None and not self.is_alive():
            self.ch.close()


class FromRos:
    """Mirrors one ROS topic into one channel (raw bytes)."""

    def __init__(self, bridge: "Bridge", topic: str, channel: str) -> None:
        self.bridge, self.topic, self.channel = bridge, topic, channel
        self.ch: Optional[nerve.Channel] = None
        self.type: Optional[str] = None
        self.failed = False
        self.too_large = 0
        self.received = 0
        self.bad_callers: Set[str] = set()
        import rospy

        self.sub = rospy.Subscriber(topic, rospy.AnyMsg, self._cb)
        say(f"from-ros {topic} -> {channel}")

    def _open(self, hdr: Dict[str, str], size: int) -> bool:
        b = self.bridge
        rtype = hdr.get("type", "")
        text = hdr.get("message_definition", "")
        try:
            ch = nerve.open(self.channel, write=True)
            meta = ch.metadata
            if meta.type != rtype or meta.encoding not in ("ros1msg", "ros1"):
                ch.close()
                return b.error(self.topic,
                               f"channel {self.channel} carries {meta.type} "
                               f"({meta.encoding}), the topic {rtype}")
        except nerve.ChannelNotFound:
            slots, data = default_geometry(size)
            slots = b.slots or slots
            # The first message sizes the channel: within the bounds of
            # _limits.py (--max-channel-size, --max-import-total) or not at all.
            data = b.size or max(min(data, b.budget.max_channel), size)
            why = b.budget.admit(self.channel, slots, data, len(rtype) + len(text.encode()) + 7)
            if why:
                return b.error(self.topic, f"channel {self.channel} not created (refused_size): {why}")
            try:
                ch = nerve.create(self.channel, slots=slots, size=data, type=rtype,
                                  encoding="ros1msg", schema=text.encode(), exist_ok=True)
            except nerve.Error as e:
                b.budget.release(self.channel)
                return b.error(self.topic, f"cannot create channel {self.channel}: {e}")
            say(f"created {self.channel} [{rtype}] {slots} slots, {data} bytes")
        except nerve.Error as e:
            return b.error(self.topic, f"cannot open channel {self.channel}: {e}")
        self.ch, self.type = ch, rtype
        return True

    def _cb(self, msg: Any) -> None:
        b = self.bridge
        hdr = getattr(msg, "_connection_header", None) or {}
        caller = hdr.get("callerid", "")
        if caller == b.caller_id or self.failed:
            return  # the bridge's own publication (both ways on one name)
        data = msg._buff
        with b.own.lock:
            if self.ch is None and not self._open(hdr, len(data)):
                self.failed = True
                return
            assert self.ch is not None
            if hdr.get("type") != self.type:
                if caller not in self.bad_callers:
                    self.bad_callers.add(caller)
                    b.error(self.topic, f"publisher {caller} sends {hdr.get('type')}, "
                                        f"the channel carries {self.type}; its messages are dropped")
                return
            try:
                seq = self.ch.put(data)
            except nerve.MessageTooLarge:
                self.too_large += 1
                if self.too_large == 1:
                    b.error(self.topic, f"a {len(data)}-byte message does not fit channel "
                                        f"{self.channel} (dropped; see --size)")
                return
            except nerve.Error as e:
                b.error(self.topic, f"put failed: {e}")
                return
            b.own.remember(self.channel, seq)
            self.received += 1

    def close(self) -> None:
        self.sub.unregister()
        with self.bridge.own.lock:
            if self.ch is not None:
                self.ch.close()
                self.ch = None


class Bridge:
    def __init__(self, args: argparse.Namespace) -> None:
        self.latch: bool = args.latch
        self.queue: int = args.queue
        self.slots: int = args.slots
        self.size: int = args.size
        self.master_uri: str = args.master
        self.master_timeout: float = args.master_timeout
        self.to_specs = [split_spec(s) for s in args.to_ros]
        self.from_specs = [split_spec(s) for s in args.from_ros]
        self.own = Own()
        self.stop = threading.Event()
        self.to_ros: Dict[str, ToRos] = {}
        self.from_ros: List[FromRos] = []
        self.errors: Set[Tuple[str, str]] = set()
        self.rejected: Dict[str, int] = {}  # channel -> creation time it failed at
        self.fatal: Optional[str] = None
        self.caller_id = ""
        self.proxy = master_proxy(self.master_uri)
        self.budget = limits.ImportBudget.from_args(args)

    def error(self, what: str, msg: str) -> bool:
        if (what, msg) not in self.errors:
            self.errors.add((what, msg))
            say(f"error: {what}: {msg}")
        return False

    # ---- the master ---------------------------------------------------

    def master_pid(self) -> Optional[int]:
        try:
            code, _, pid = self.proxy.getPid(self.caller_id or "/nerve_ros1")
            return int(pid) if code == 1 else None
        except (OSError, xmlrpc.client.Error):
            return None

    def topic_type(self, topic: str) -> Optional[str]:
        """The type ROS knows for ``topic`` (None: unknown or no master)."""
        try:
            code, _, types = self.proxy.getTopicTypes(self.caller_id)
        except (OSError, xmlrpc.client.Error):
            return None
        if code != 1:
            return None
        return dict((t, ty) for t, ty in types).get(topic)

    def reregister(self) -> None:
        """Register every publication and subscription of this node with
        the (new) master, through rospy's own registration manager for the
        subscriptions' publisher lists."""
        import rospy.core
        from rospy.impl.registration import RegManager, get_registration_listeners, get_topic_manager

        uri = rospy.core.get_node_uri()
        tm = get_topic_manager()
        regs = [x for x in get_registration_listeners().listeners if isinstance(x, RegManager)]
        for topic, rtype in tm.get_publications():
            self.proxy.registerPublisher(self.caller_id, topic, rtype, uri)
        for topic, rtype in tm.get_subscriptions():
            code, _, pubs = self.proxy.registerSubscriber(self.caller_id, topic, rtype, uri)
            if code == 1:
                for r in regs:
                    r.publisher_update(topic, pubs)

    def watch_master(self) -> None:
        pid = self.master_pid()
        down_since: Optional[float] = None
        while not self.stop.wait(WATCH_S):
            now_pid = self.master_pid()
            if now_pid is None:
                if down_since is None:
                    down_since = time.monotonic()
                    say(f"master {self.master_uri} unreachable; retrying for "
                        f"{self.master_timeout:g} s")
                elif time.monotonic() - down_since > self.master_timeout:
                    self.fatal = f"master {self.master_uri} unreachable for {self.master_timeout:g} s"
                    self.stop.set()
                continue
            if down_since is not None or now_pid != pid:
                try:
                    self.reregister()
                except (OSError, xmlrpc.client.Error) as e:
                    say(f"re-registration failed ({e}); retrying")
                    continue  # down_since kept: retried at the next tick
                say(f"master back (pid {now_pid}); registrations renewed")
            down_since, pid = None, now_pid

    # ---- the bridges --------------------------------------------------

    def scan(self) -> None:
        """Start a ToRos for each new channel matching a --to-ros spec, and
        stop those whose channel is gone."""
        infos = {i.name: i for i in nerve.list_channels() if i.error is None}
        for name, t in list(self.to_ros.items()):
            if name not in infos or infos[name].created != t.created:
                t.close()
                del self.to_ros[name]
                say(f"to-ros {name}: channel gone; {t.topic} unadvertised")
        for name, info in infos.items():
            if name in self.to_ros or self.rejected.get(name) == info.created_ns:
                continue
            for pat, topic in self.to_specs:
                if is_pattern(pat):
                    if not fnmatch.fnmatchcase(name, pat):
                        continue
                    t_name = topic_of_channel(name)
                    if topic:
                        t_name = topic.rstrip("/") + t_name
                elif name != pat:
                    continue
                else:
                    t_name = topic or topic_of_channel(name)
                t = ToRos(self, name, t_name)
                t.created = info.created
                if t.setup():
                    self.to_ros[name] = t
                    t.start()
                else:
                    self.rejected[name] = info.created_ns
                break

    def run(self) -> int:
        deadline = time.monotonic() + self.master_timeout
        while self.master_pid() is None:
            if self.stop.is_set():
                return 0
            if time.monotonic() > deadline:
                die(PROG, f"no ROS master at {self.master_uri} "
                          f"(waited {self.master_timeout:g} s; see --master)")
            self.stop.wait(WATCH_S)
        os.environ["ROS_MASTER_URI"] = self.master_uri
        import rospy

        rospy.init_node("nerve_ros1", anonymous=True, disable_signals=True)
        self.caller_id = rospy.get_caller_id()
        for topic, channel in self.from_specs:
            if not _ROS_NAME.match(topic):
                self.error(topic, "not a valid ROS topic name")
                continue
            chan = channel or channel_name(topic)
            try:
                nerve._nerve.name_check(chan)
            except nerve.Error as e:
                self.error(topic, f"bad channel name {chan!r}: {e}")
                continue
            self.from_ros.append(FromRos(self, topic, chan))
        self.scan()
        watcher = threading.Thread(target=self.watch_master, name="master", daemon=True)
        watcher.start()
        say(f"bridging as {self.caller_id} with {self.master_uri}; Ctrl-C to stop")
        try:
            while not self.stop.wait(RESCAN_S):
                if self.to_specs:
                    self.scan()
        finally:
            for t in self.to_ros.values():
                t.close()
            for f in self.from_ros:
                f.close()
            rospy.signal_shutdown("nerve ros1 stopped")
        for t in self.to_ros.values():
            say(f"to-ros {t.channel}: {t.sent} messages published")
        for f in self.from_ros:
            say(f"from-ros {f.topic}: {f.received} messages put")
        if self.budget.refused:
            say(f"refused_size: {self.budget.refused} channels over the import bounds")
        if self.fatal:
            say(f"error: {self.fatal}")
            return 1
        return 0


def split_spec(spec: str) -> Tuple[str, str]:
    """"a:b" -> ("a", "b"); "a" -> ("a", "")."""
    left, _, right = spec.partition(":")
    return left, right


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Bridge nerve channels and ROS 1 topics, both ways, "
                               "as raw ros1msg bytes.")
    p.add_argument("--master", default=os.environ.get("ROS_MASTER_URI", "http://localhost:11311"),
                   metavar="URI", help="ROS master (default: $ROS_MASTER_URI or "
                                       "http://localhost:11311)")
    p.add_argument("--to-ros", action="append", default=[], metavar="GLOB[:TOPIC]",
                   help="publish ros1msg channels matching GLOB as ROS topics; TOPIC names "
                        "the topic of one channel, or prefixes the topics of a glob "
                        "(default topic: the name with '.' as '/')")
    p.add_argument("--from-ros", action="append", default=[], metavar="TOPIC[:CHANNEL]",
                   help="mirror ROS topic TOPIC into a channel (default name: the topic "
                        "with '/' as '.')")
    p.add_argument("--latch", action="store_true",
                   help="advertise the --to-ros topics latched")
    p.add_argument("--slots", type=int, default=0,
                   help="index slots of channels created from ROS topics "
                        "(default: from the first message's size)")
    p.add_argument("--size", type=int, default=0, metavar="BYTES",
                   help="data ring bytes of channels created from ROS topics "
                        "(default: at least 16 messages, at least 1 MiB)")
    p.add_argument("--queue", type=int, default=100,
                   help="rospy publisher queue size (default 100)")
    p.add_argument("--master-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up when the master is unreachable this long (default 60)")
    limits.add_arguments(p)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if not args.to_ros and not args.from_ros:
        p.error("give at least one --to-ros or --from-ros")
    if args.slots < 0 or args.size < 0 or args.queue < 1 or args.master_timeout <= 0:
        p.error("--slots and --size must be >= 0, --queue >= 1, --master-timeout > 0")
    try:
        limits.ImportBudget.from_args(args)
    except limits.LimitError as e:
        p.error(str(e))
    try:
        ros1_msg.enable()
    except ImportError as e:
        die(PROG, str(e))
    bridge = Bridge(args)

    def on_signal(signum: int, frame: Any) -> None:
        bridge.stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    return bridge.run()


if __name__ == "__main__":
    sys.exit(main())
