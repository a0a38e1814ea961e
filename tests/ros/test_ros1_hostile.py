"""`nerve ros1` against broken and hostile ROS 1 peers (issue 28, parts 1
and 2), written on raw sockets (ros1_fake.py, no rospy in the attacker):
each attack runs against a bridge whose resident memory and thread count
are sampled during and after it against generous bounds, and both
directions must still work afterwards. Then the documented both-ways setup
started before its channels exist, and a minute of churn: channels and
ROS publishers appearing and vanishing in both directions while it
bridges. All traffic on 127.0.0.1; every loop is bounded in time."""

from __future__ import annotations

import os
import re
import socket
import struct
import threading
import time
from typing import Callable, Dict, Iterator, List, Optional

import pytest
from ros1_fake import STRING_DEF, STRING_MD5, STRING_TYPE, FakePublisher, FakeSubscriber, proxy, string_msg, vitals

import nerve

from conftest import Proc, Roscore, topic

RSS_GROWTH = 200 << 20  # what an attack may add to the bridge's resident memory
MAX_THREADS = 40  # the bridge has a main thread, one per to-ros channel and a few workers

GOOD = {"type": STRING_TYPE, "md5sum": STRING_MD5, "message_definition": STRING_DEF}


def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def string_channel(name: str) -> nerve.Channel:
    return nerve.create(name, type=STRING_TYPE, encoding="ros1msg", schema=STRING_DEF)


def head(name: str) -> int:
    try:
        return nerve.stat(name).head_seq
    except nerve.Error:
        return 0


class Guard:
    """The bridge's vital signs against its state before the attack."""

    def __init__(self, b: Proc) -> None:
        self.b = b
        self.rss0, self.threads0 = vitals(b.p.pid)
        self.peak_rss, self.peak_threads = self.rss0, self.threads0

    def check(self) -> None:
        assert self.b.p.poll() is None, "the bridge died:\n" + self.b.output
        rss, threads = vitals(self.b.p.pid)
        self.peak_rss = max(self.peak_rss, rss)
        self.peak_threads = max(self.peak_threads, threads)
        assert rss < self.rss0 + RSS_GROWTH, (
            f"bridge RSS {rss >> 20} MiB (was {self.rss0 >> 20} MiB)")
        assert threads <= MAX_THREADS, f"bridge has {threads} threads (was {self.threads0})"

    def report(self, what: str) -> None:
        """One line of numbers (shown with pytest -s or -rP)."""
        print(f"{what}: bridge RSS {self.rss0 >> 20} MiB before, peak {self.peak_rss >> 20} MiB; "
              f"threads {self.threads0} before, peak {self.peak_threads}")


class Peers:
    """Fake peers made by a test, closed at its end."""

    def __init__(self, ros: Roscore) -> None:
        self.ros = ros
        self.made: List[object] = []
        self.n = 0

    def pub(self, t: str, fields: Optional[Dict[str, Optional[str]]] = None,
            caller: str = "", register: bool = True) -> FakePublisher:
        self.n += 1
        p = FakePublisher(self.ros.uri, t, dict(GOOD if fields is None else fields),
                          caller or f"/fake_pub_{os.getpid()}_{self.n}")
        self.made.append(p)
        if register:
            p.register()
        return p

    def sub(self, uri: str, t: str, timeout: float = 5.0) -> FakeSubscriber:
        self.n += 1
        s = FakeSubscriber(uri, t, f"/fake_sub_{os.getpid()}_{self.n}", timeout=timeout)
        self.made.append(s)
        return s

    def close(self) -> None:
        for p in self.made:  # all at once: each takes up to half a second
            if isinstance(p, FakePublisher):
                p.stopped.set()
        for p in reversed(self.made):
            p.close()  # type: ignore[attr-defined]
        self.made.clear()


@pytest.fixture
def peers(ros: Roscore) -> Iterator[Peers]:
    p = Peers(ros)
    yield p
    p.close()


def slave_uri(b: Proc) -> str:
    """The bridge's slave API, as the master knows it."""
    caller = re.search(r"bridging as (/\S+) ", b.wait_line(r"bridging as /")).group(1)
    master = proxy(b.args[b.args.index("--master") + 1])
    deadline = time.monotonic() + 60  # long: a loaded host may stall the master
    while True:  # registered before "bridging as", unless the master was slow
        code, msg, uri = master.lookupNode("/test", caller)
        if code == 1:
            return uri
        assert time.monotonic() < deadline, msg
        time.sleep(0.1)


def tcpros_port(b: Proc, t: str) -> int:
    """The bridge's TCPROS port, as it answers requestTopic for ``t``."""
    code, msg, proto = proxy(slave_uri(b)).requestTopic("/test", t, [["TCPROS"]])
    assert code == 1, msg
    return proto[2]


def to_ros_works(b: Proc, peers: Peers, out_ch: str, timeout: float = 30.0) -> None:
    """A raw subscriber gets what is committed to ``out_ch``."""
    sub = peers.sub(slave_uri(b), topic(out_ch), timeout)
    assert sub.header.get("type") == STRING_TYPE, sub.header
    ch = nerve.open(out_ch, write=True)
    got: List[bytes] = []

    def reader() -> None:
        try:
            got.append(sub.recv(timeout))
        except OSError:
            pass

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    deadline = time.monotonic() + timeout
    while t.is_alive() and time.monotonic() < deadline:
        ch.put(string_msg("to ros"))
        t.join(0.1)
    ch.close()
    assert got == [string_msg("to ros")], "to ROS: nothing arrived\n" + b.output


def from_ros_works(b: Proc, peers: Peers, in_topic: str, in_ch: str,
                   timeout: float = 60.0) -> None:
    """A well-behaved raw publisher's messages reach ``in_ch``."""
    p = peers.pub(in_topic)
    start = head(in_ch)
    deadline = time.monotonic() + timeout
    while head(in_ch) <= start:
        assert time.monotonic() < deadline, "from ROS: nothing arrived\n" + b.output
        p.send(string_msg("from ros"))
        time.sleep(0.05)
    assert nerve.open(in_ch).metadata.type == STRING_TYPE


@pytest.fixture
def pair(name, bridge) -> Callable[..., tuple]:
    """pair(*extra) -> (bridge, out channel, in topic, in channel, guard):
    a bridge with one channel to ROS and one topic from ROS."""

    def make(*extra: str) -> tuple:
        out_ch, in_ch = name("out"), name("in")
        string_channel(out_ch).close()
        b = bridge("--to-ros", out_ch, "--from-ros", f"{topic(in_ch)}:{in_ch}", *extra)
        b.wait_line(rf"to-ros {re.escape(out_ch)} -> ")
        return b, out_ch, topic(in_ch), in_ch, Guard(b)

    return make


def both_ways(b: Proc, peers: Peers, out_ch: str, in_topic: str, in_ch: str, g: Guard) -> None:
    to_ros_works(b, peers, out_ch)
    from_ros_works(b, peers, in_topic, in_ch)
    g.check()
    g.report(os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0])


# ---- part 2: one peer must not exhaust the bridge's host ---------------------


def test_listens_on_loopback_by_default(ros: Roscore, name) -> None:
    """Without --listen, ROS_IP or ROS_HOSTNAME the node listens on
    127.0.0.1 only, and advertises that address; --listen and ROS_IP are
    honoured (other loopback addresses stand for other interfaces)."""
    import shutil
    import sys
    from pathlib import Path

    exe = shutil.which("nerve-ros1") or str(Path(sys.executable).parent / "nerve-ros1")
    env = {k: v for k, v in ros.env.items() if k not in ("ROS_IP", "ROS_HOSTNAME")}
    ch = name("lo")
    for extra, ros_ip, want in (([], "", "127.0.0.1"), (["--listen", "127.0.0.2"], "", "127.0.0.2"),
                                ([], "127.0.0.3", "127.0.0.3")):
        p = Proc([exe, "--master", ros.uri, "--from-ros", f"{topic(ch)}:{ch}", *extra],
                 dict(env, ROS_IP=ros_ip) if ros_ip else env)
        try:
            p.wait_line(r"bridging as /nerve_ros1", 60)
            from ros1_fake import listening

            socks = listening(p.p.pid)
            assert len(socks) >= 2, socks
            assert {h for h, _ in socks} == {want}, socks
            assert slave_uri(p).startswith(f"http://{want}:")
        finally:
            assert p.stop() == 0, p.output


def test_huge_message_length(ros: Roscore, pair, peers: Peers) -> None:
    """A publisher announcing a 4 GiB message and streaming its bytes is
    dropped before the bridge buffers them; memory stays bounded."""
    b, out_ch, in_topic, in_ch, g = pair()
    evil = peers.pub(in_topic, caller="/evil_huge")
    wait_for(lambda: evil.connected() > 0, 60, "the bridge to connect to the publisher")
    chunk = bytes(1 << 20)
    sent = 0
    evil.send_raw(struct.pack("<I", 0xFFFFFFFF))
    deadline = time.monotonic() + 20
    while sent < (400 << 20) and time.monotonic() < deadline:
        if evil.send_raw(chunk) == 0:
            break  # the bridge hung up
        sent += len(chunk)
        if sent % (32 << 20) == 0:
            g.check()
    g.check()
    b.wait_line(r"error: .*a 4294967295-byte message .*publisher /evil_huge .*dropped", 60)
    assert sent < (400 << 20), "the bridge read 400 MiB of one message"
    assert not os.path.exists(f"/dev/shm/nerve.{in_ch}") or head(in_ch) == 0
    both_ways(b, peers, out_ch, in_topic, in_ch, g)


def test_message_larger_than_channel(ros: Roscore, name, pair, peers: Peers) -> None:
    """A message over --max-channel-size drops its publisher unread; once
    the channel exists, a larger message is skipped unread and the
    publisher keeps delivering; a channel over --max-import-total is
    refused (counted, never created)."""
    in2 = name("in2")
    b, out_ch, in_topic, in_ch, g = pair("--max-channel-size", "8M", "--max-import-total", "1536K",
                                         "--from-ros", f"{topic(in2)}:{in2}")
    p = peers.pub(in_topic, caller="/big_first")
    wait_for(lambda: p.connected() > 0, 60, "the bridge to connect")
    p.send(bytes(9 << 20))  # over the 8 MiB bound: the publisher is dropped
    b.wait_line(r"error: .*a 9437184-byte message \(over --max-channel-size 8388608\)", 10)
    assert head(in_ch) == 0
    q = peers.pub(in_topic, caller="/fits")
    wait_for(lambda: q.connected() > 0, 60, "the bridge to connect")
    q.send(string_msg("small"))  # a 1 MiB channel
    wait_for(lambda: head(in_ch) == 1, 60, "the small message")
    assert nerve.stat(in_ch).data_size == 1 << 20
    q.send(bytes(3 << 20))  # larger than the channel: skipped
    q.send(string_msg("after"))
    wait_for(lambda: head(in_ch) == 2, 60, "the message after the large one")
    b.wait_line(r"a 3145728-byte message does not fit channel", 60)
    r = peers.pub(topic(in2), caller="/second")  # a second 1 MiB ring would pass 1.5 MiB
    wait_for(lambda: r.connected() > 0, 60, "the bridge to connect")
    r.send(string_msg("no room"))
    b.wait_line(rf"channel {re.escape(in2)} not created \(refused_size\): .*--max-import-total",
                10)
    assert not os.path.exists(f"/dev/shm/nerve.{in2}")
    g.check()
    g.report("message larger than channel")
    assert b.stop() == 0
    assert re.search(r"refused_size: 1 channels", b.output), b.output


def test_publisher_update_flood(ros: Roscore, pair, peers: Peers) -> None:
    """publisherUpdate listing 3,000 URIs of a server that accepts and
    never answers: the bridge's threads stay bounded, and the master's
    next update (a real publisher) replaces the list."""
    b, out_ch, in_topic, in_ch, g = pair()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4096)
    try:
        port = silent.getsockname()[1]
        uris = [f"http://127.0.0.1:{port}/{i}" for i in range(3000)]
        r = proxy(slave_uri(b)).publisherUpdate("/master", in_topic, uris)
        assert r[0] == 1
        for _ in range(20):
            g.check()
            time.sleep(0.1)
        b.wait_line(r"publishers wait for a connection", 60)
        both_ways(b, peers, out_ch, in_topic, in_ch, g)
    finally:
        silent.close()
    g.check()
    # The flood is reported, not logged URI by URI.
    flood = [x for x in b.lines if f"127.0.0.1:{port}/" in x or "publishers wait" in x]
    assert len(flood) <= 10, "\n".join(flood[:20])


def test_tcpros_handshakes_bounded(ros: Roscore, pair, peers: Peers) -> None:
    """Idle connections to the TCPROS and XML-RPC ports hold up no other
    subscriber; a header length of 0xFFFFFFFF is refused at once."""
    b, out_ch, in_topic, in_ch, g = pair()
    port = tcpros_port(b, topic(out_ch))
    host, xport = "127.0.0.1", int(slave_uri(b).rsplit(":", 1)[1].rstrip("/"))
    idle = [socket.create_connection((host, port), timeout=5) for _ in range(8)]
    idle += [socket.create_connection((host, xport), timeout=5) for _ in range(8)]
    try:
        # Served while the idle ones are still open (their handshake
        # deadline is 5 s; the subscriber's socket gives up after 3 s).
        to_ros_works(b, peers, out_ch, timeout=3.0)
        slow = socket.create_connection((host, port), timeout=5)
        slow.sendall(struct.pack("<I", 0xFFFFFFFF))
        closed = False
        deadline = time.monotonic() + 5
        while not closed and time.monotonic() < deadline:
            try:
                slow.sendall(b"x")
                slow.settimeout(0.1)
                closed = slow.recv(1) == b""
            except socket.timeout:
                pass
            except OSError:
                closed = True
        slow.close()
        assert closed, "the bridge kept reading a 4 GiB connection header"
        g.check()
    finally:
        for s in idle:
            s.close()
    both_ways(b, peers, out_ch, in_topic, in_ch, g)


def _post(port: int, head: bytes, body_chunks: int = 0, chunk: bytes = b"",
          sent: Optional[List[int]] = None) -> bytes:
    """Send an HTTP request (head, then chunks until the bridge hangs
    up, counted in ``sent``); what came back."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(head)
        for _ in range(body_chunks):
            try:
                s.sendall(chunk)
            except OSError:
                break
            if sent is not None:
                sent.append(len(chunk))
        out = b""
        s.settimeout(5)
        while True:
            try:
                data = s.recv(65536)
            except (socket.timeout, OSError):
                break
            if not data:
                break
            out += data
        return out
    finally:
        s.close()


def test_xmlrpc_requests_bounded(ros: Roscore, pair, peers: Peers) -> None:
    """A 1 GiB request body, a body without length, garbage, an entity
    bomb and deep nesting: each refused, memory bounded, the node answers
    and bridges afterwards."""
    b, out_ch, in_topic, in_ch, g = pair()
    port = int(slave_uri(b).rsplit(":", 1)[1].rstrip("/"))
    big = (b"POST /RPC2 HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\n"
           b"Content-Length: 1073741824\r\n\r\n")
    sent: List[int] = []
    out = _post(port, big, 256, bytes(1 << 20), sent)  # up to 256 MiB, until it hangs up
    assert b"faultCode" in out or out == b"", out[:200]
    assert sum(sent) < 256 << 20, "the bridge read a 256 MiB request body"
    g.check()
    nolen = b"POST /RPC2 HTTP/1.0\r\nContent-Type: text/xml\r\n\r\n"
    assert b"faultCode" in _post(port, nolen)
    bomb = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
            + "".join(f'<!ENTITY lol{i} "{("&lol%d;" % (i - 1) if i else "&lol;") * 10}">'
                      for i in range(1, 10))
            + ']><methodCall><methodName>getPid</methodName><params><param><value>'
              '<string>&lol9;</string></value></param></params></methodCall>').encode()
    deep = (b"<?xml version='1.0'?><methodCall><methodName>getPid</methodName><params><param>"
            + b"<value><array><data>" * 20000 + b"</data></array></value>" * 20000
            + b"</param></params></methodCall>")
    for body in (b"\x00\xff garbage <<<", bomb, deep, b"<methodCall><methodName>nope"):
        req = (b"POST /RPC2 HTTP/1.1\r\nContent-Type: text/xml\r\nContent-Length: %d\r\n\r\n"
               % len(body)) + body
        assert b"faultCode" in _post(port, req), body[:40]
        g.check()
    code, _, pid = proxy(slave_uri(b)).getPid("/test")
    assert (code, pid) == (1, b.p.pid)
    assert proxy(slave_uri(b)).requestTopic("/test", "/odd name/%2e./", [["TCPROS"]])[0] != 1
    assert proxy(slave_uri(b)).publisherUpdate("/test", 7, "not a list")[0] == -1
    both_ways(b, peers, out_ch, in_topic, in_ch, g)


def test_broken_publishers_held(ros: Roscore, pair, peers: Peers) -> None:
    """A malformed connection header, an error header, a disconnect in
    the middle of a message: that publisher only; the topic goes on."""
    b, out_ch, in_topic, in_ch, g = pair()
    bad = peers.pub(in_topic, caller="/evil_malformed", register=False)
    # A field length running past the header's end.
    bad.raw_header = struct.pack("<I", 8) + struct.pack("<I", 100) + b"type"
    bad.register()
    b.wait_line(r"error: .*connection header field runs past the header", 60)
    cut = peers.pub(in_topic, caller="/cut_mid_message")
    wait_for(lambda: cut.connected() > 0, 60, "the bridge to connect")
    cut.send_raw(struct.pack("<I", 1000) + b"half")
    cut.close()
    g.check()
    both_ways(b, peers, out_ch, in_topic, in_ch, g)


BAD_FIRST = {
    "long": dict(GOOD, type="a" * 150 + "/" + "b" * 150),
    "abc": dict(GOOD, type="a/b/c"),
    "empty": dict(GOOD, type=""),
    "notype": dict(GOOD, type=None),
    "escape": dict(GOOD, type="evil/\x1b]2;PWNED\x07\x1b[31m"),
    "bigdef": dict(GOOD, message_definition=STRING_DEF + "#" + "x" * (1 << 20) + "\n"),
    "nodef": dict(GOOD, message_definition=None),
    "md5": dict(GOOD, md5sum="0" * 32),
    "nomd5": dict(GOOD, md5sum=None),
}


def test_bad_first_publishers(ros: Roscore, name, bridge, peers: Peers) -> None:
    """A first publisher with a bad type, definition or md5sum is dropped
    alone, with one line naming it; the channel's type is never taken from
    it, and a good publisher afterwards fills the channel."""
    chans = {k: name(k) for k in BAD_FIRST}
    args: List[str] = []
    for ch in chans.values():
        args += ["--from-ros", f"{topic(ch)}:{ch}"]
    b = bridge(*args)
    g = Guard(b)
    evil = {k: peers.pub(topic(chans[k]), fields, caller=f"/evil_{k}")
            for k, fields in BAD_FIRST.items()}
    for k, p in evil.items():
        line = b.wait_line(rf"error: {re.escape(topic(chans[k]))}: .*publisher /evil_{k} ", 20)
        assert "\x1b" not in line and "\x07" not in line
        p.send(string_msg("bad"))
    g.check()
    time.sleep(0.5)
    for k in evil:
        assert sum(f"/evil_{k} " in x for x in b.lines) == 1, "\n".join(b.lines)
        assert head(chans[k]) == 0, f"{k}: a bad publisher's message was put"
    assert "\x1b" not in b.output and "\x07" not in b.output
    for k, ch in chans.items():
        good = peers.pub(topic(ch), caller=f"/good_{k}")
        deadline = time.monotonic() + 15
        while head(ch) == 0:
            assert time.monotonic() < deadline, f"{k}: the good publisher was not taken\n" + b.output
            good.send(string_msg("good"))
            time.sleep(0.05)
        meta = nerve.open(ch).metadata
        assert (meta.type, meta.schema) == (STRING_TYPE, STRING_DEF.encode()), k
    g.check()
    g.report("bad first publishers")
    assert b.stop() == 0
    # A channel left with a bad type (by an older bridge) is named as such.
    stale = name("stale")
    nerve.create(stale, type="a/b/c", encoding="ros1msg", schema=STRING_DEF).close()
    b = bridge("--from-ros", f"{topic(stale)}:{stale}")
    b.wait_line(rf"error: {re.escape(topic(stale))}: channel {re.escape(stale)} exists with "
                r"type 'a/b/c' \(ros1msg\), not a ROS 1 channel", 10)
    assert b.stop() == 0


def test_shutdown_call_exits_nonzero(ros: Roscore, pair, peers: Peers) -> None:
    """The slave API's shutdown (anyone may call it) ends the bridge at
    once with status 1, so that a supervisor restarts it; connections
    open at that moment end cleanly."""
    b, out_ch, in_topic, in_ch, g = pair()
    to_ros_works(b, peers, out_ch)  # a subscriber stays connected
    from_ros_works(b, peers, in_topic, in_ch)  # and a publisher
    assert proxy(slave_uri(b)).shutdown("/evil", "bye\x9b31m")[0] == 1
    assert b.wait(10) == 1, b.output
    assert "Traceback" not in b.output, b.output
    assert re.search(r"shutdown requested through the slave API by /evil \(bye\\x9b31m\)",
                     b.output), b.output


# ---- part 1: the documented both-ways setup, and churn -----------------------


def test_both_ways_glob_before_channels(ros: Roscore, name, bridge, peers: Peers) -> None:
    """--to-ros 'GLOB' --from-ros TOPIC where GLOB matches the channel the
    bridge creates from TOPIC, started before any channel exists: the
    channel is created, advertised back to ROS, and the bridge lives."""
    base = name("a4")
    ok = f"{base}.ok"
    b = bridge("--to-ros", f"{base}.*", "--from-ros", f"{topic(ok)}:{ok}")
    g = Guard(b)
    more = [f"{base}.c{i}" for i in range(12)]
    try:
        from_ros_works(b, peers, topic(ok), ok)
        b.wait_line(rf"to-ros {re.escape(ok)} -> {re.escape(topic(ok))} ", 10)
        # More channels matching the glob, while the master is watched:
        # each is advertised (the master asked for its topic's type).
        for n in more:
            string_channel(n).close()
            g.check()
            time.sleep(0.2)
        for n in more:
            b.wait_line(rf"to-ros {re.escape(n)} -> ", 10)
        to_ros_works(b, peers, more[-1])
        to_ros_works(b, peers, ok)
        g.check()
        assert "Traceback" not in b.output, b.output
    finally:
        for n in [ok] + more:
            try:
                nerve.unlink(n)
            except nerve.Error:
                pass
    assert b.stop() == 0, b.output


def test_churn(ros: Roscore, name, bridge, peers: Peers) -> None:
    """For 20 s (NERVE_TEST_CHURN_SECONDS: longer by hand), channels
    matching the --to-ros glob and ROS publishers of the --from-ros topics
    appear and vanish (and the from-ros channels are removed now and then),
    with subscribers coming and going; the bridge stays up, bounded, and
    bridges both ways at the end."""
    base = name("churn")
    outs = [f"{base}.o{i}" for i in range(4)]
    ins = [f"{base}.i{i}" for i in range(3)]
    args = ["--to-ros", f"{base}.o*"]
    for ch in ins:
        args += ["--from-ros", f"{topic(ch)}:{ch}"]
    b = bridge(*args)
    g = Guard(b)
    uri = slave_uri(b)
    live_pubs: Dict[str, FakePublisher] = {}
    received = put = 0
    step = 0
    try:
        end = time.monotonic() + float(os.environ.get("NERVE_TEST_CHURN_SECONDS", "20"))
        while time.monotonic() < end:
            step += 1
            # To ROS: a channel appears (and is written) or vanishes.
            o = outs[step % len(outs)]
            if os.path.exists(f"/dev/shm/nerve.{o}") and step % 3:
                nerve.unlink(o)
            else:
                try:
                    c = string_channel(o)
                except nerve.ChannelExists:
                    c = nerve.open(o, write=True)
                for k in range(3):
                    c.put(string_msg(f"{step}.{k}"))
                c.close()
            # A subscriber comes and takes what it finds.
            for oo in outs:
                try:
                    s = FakeSubscriber(uri, topic(oo), f"/churn_sub_{step}")
                except (OSError, AssertionError, ConnectionError):
                    continue
                try:
                    c = nerve.open(oo, write=True)
                    c.put(string_msg("x"))
                    c.close()
                    s.recv(1.0)
                    received += 1
                except (OSError, ConnectionError, nerve.Error):
                    pass
                finally:
                    s.close()
                break
            # From ROS: a publisher appears, sends, or vanishes.
            i = ins[step % len(ins)]
            if i in live_pubs and step % 2:
                live_pubs.pop(i).close()
            else:
                p = live_pubs.get(i) or FakePublisher(ros.uri, topic(i), dict(GOOD),
                                                      f"/churn_pub_{step}")
                if i not in live_pubs:
                    p.register()
                    live_pubs[i] = p
                before = head(i)
                for k in range(5):
                    p.send(string_msg(f"{step}.{k}"))
                    time.sleep(0.02)
                put += head(i) > before
            if step % 7 == 0:
                for ii in ins:
                    try:
                        nerve.unlink(ii)
                    except nerve.Error:
                        pass
            g.check()
            time.sleep(0.1)
        assert received > 0 and put > 0, (received, put, b.output)
        # Still bridging both ways, on a new channel and a known topic.
        last = f"{base}.olast"
        string_channel(last).close()
        b.wait_line(rf"to-ros {re.escape(last)} -> ", 60)
        to_ros_works(b, peers, last)
        from_ros_works(b, peers, topic(ins[0]), ins[0])
        g.check()
        g.report(f"churn ({step} steps, {received} received, {put} put)")
        assert "Traceback" not in b.output, b.output
    finally:
        for p in live_pubs.values():
            p.close()
        for n in outs + ins + [f"{base}.olast"]:
            try:
                nerve.unlink(n)
            except nerve.Error:
                pass
    assert b.stop() == 0, b.output
