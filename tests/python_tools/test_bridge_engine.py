"""The bridge's export and import machinery in one process, without a
network: a Zenoh session that listens and connects nowhere (multicast
scouting off), the exporter's publisher replaced by a recorder. Checks how
a burst is drained into samples (order, batch limits, a large message in a
sample of its own), that the samples put back through an importer give
the same messages and times, that the bridge's own messages are not sent
back, and that a recreated channel is noticed (by its file, without
mapping it). Every wait is bounded; channels are removed."""

from __future__ import annotations

import time
from array import array
from typing import Iterator, List, Tuple

import pytest

import nerve
from nerve_tools.bridge import engine as be
from nerve_tools.bridge.wire import BridgeError, Description, SessionOptions, open_session, unpack_table


class Recorder:
    """Stands in for the exporter's Zenoh publisher: keeps every sample."""

    def __init__(self) -> None:
        self.samples: List[Tuple[bytes, bytes]] = []

    def put(self, data: bytes, attachment: bytes) -> None:
        self.samples.append((bytes(data), bytes(attachment)))

    def undeclare(self) -> None:
        pass


@pytest.fixture
def bridge() -> Iterator[be.HostBridge]:
    session = open_session(SessionOptions())
    logs: List[str] = []
    b = be.HostBridge(session, be.BridgeOptions(ident="me", exports=["*"]), log=logs.append)
    b.logs = logs  # type: ignore[attr-defined]
    try:
        yield b
    finally:
        b.close()
        session.close()


def wait_until(pred, timeout: float = 60.0) -> bool:
    """Poll pred() until true, bounded: generous, for a session thread
    descheduled for seconds on a loaded host (a success returns at once)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


def exporter(bridge: be.HostBridge, name: str) -> Tuple[be.Exporter, Recorder]:
    ex = be.Exporter(bridge, name)
    ex.pub.undeclare()
    rec = Recorder()
    ex.pub = rec
    return ex, rec


def messages_of(rec: Recorder) -> List[bytes]:
    """The messages of the recorded samples, in order, split by their
    tables."""
    got = []
    for data, att in rec.samples:
        _epoch, table = unpack_table(att, len(data))
        pos = 0
        for i in range(0, len(table), 3):
            got.append(data[pos:pos + table[i + 2]])
            pos += table[i + 2]
    return got


def test_burst_drained_into_ordered_batches_and_imported_back(bridge: be.HostBridge, name) -> None:
    src, dst = name("src"), name("dst")
    nerve.create(src, slots=4096, size=8 << 20).close()
    ex, rec = exporter(bridge, src)
    try:
        w = nerve.open(src, write=True)
        sizes = [i % 97 for i in range(1500)]
        sizes[700] = be.BATCH_ITEM + 5  # one large message in the middle of the burst
        sent = []
        for i, n in enumerate(sizes):
            data = (i.to_bytes(4, "little") * (n // 4 + 1))[:n]
            seq = w.put(data)
            sent.append((seq, data))
        assert wait_until(lambda: ex.counters.forwarded == len(sizes)), ex.counters
        w.close()
    finally:
        ex.close()
    c = ex.counters
    assert c.samples == len(rec.samples) and c.dropped_error == 0 and c.looped == 0
    assert c.bytes == sum(sizes)
    # Order kept across samples; batches within their limits; the large
    # message alone.
    seqs = []
    for data, att in rec.samples:
        epoch, table = unpack_table(att, len(data))
        assert epoch == ex.epoch
        k = len(table) // 3
        assert k <= be.BATCH_MAX
        if k > 1:
            assert all(table[i + 2] < be.BATCH_ITEM for i in range(0, len(table), 3))
            assert len(data) - table[-1] < be.BATCH_BYTES
        seqs += list(table[0::3])
    assert seqs == [s for s, _ in sent]
    big = [i for i, (d, a) in enumerate(rec.samples) if len(d) == sizes[700]]
    assert len(big) == 1 and len(unpack_table(rec.samples[big[0]][1], sizes[700])[1]) == 3
    assert len(rec.samples) < len(sizes) // 4, "a burst goes out in batches"

    # The samples, put through an importer, give back the same messages,
    # with the origin times (same host: translation is the identity, up to
    # the clocks' offset read twice).
    desc = Description(host="there", name=dst, slots=4096, data_size=8 << 20, type=None,
                       encoding=None, schema=None)
    lc = bridge.local(dst)
    assert bridge._ensure_local(lc, desc) is None
    st = be.ImportStream(bridge, "there", desc, lc)
    try:
        for data, att in rec.samples:
            st.on_message(data, att)
    finally:
        st.close()
    ic = st.counters
    assert (ic.forwarded, ic.gaps, ic.duplicates, ic.dropped_error) == (len(sizes), 0, 0, 0)
    # The ages: one per sample on each side, from the messages' commit
    # times; an import is put after its export was sent.
    sa, pa = c.as_dict()["send_age_us"], ic.as_dict()["put_age_us"]
    assert sa["n"] == pa["n"] == len(rec.samples)
    assert 0 < sa["p50"] <= sa["p99"] <= sa["max"] and pa["p50"] >= sa["p50"] and pa["max"] >= sa["max"]
    assert be.ImportCounters().as_dict()["put_age_us"] == {"n": 0}
    r = nerve.open(dst)
    r.seek(0)
    got = []
    while True:
        m = r.get()
        if m is None:
            break
        got.append(m)
    r.close()
    assert [bytes(m.data) for m in got] == [d for _, d in sent]
    src_r = nerve.open(src)
    src_r.seek(0)
    times = [src_r.get().time for _ in sizes]
    src_r.close()
    assert all(abs(m.time - t) < 1_000_000 for m, t in zip(got, times))
    assert all(a.time <= b.time for a, b in zip(got, got[1:]))
    # Repeated samples are duplicates, not new messages.
    st.on_message(*rec.samples[0])
    assert st.counters.duplicates == len(unpack_table(rec.samples[0][1], len(rec.samples[0][0]))[1]) // 3


def test_own_messages_not_sent_back(bridge: be.HostBridge, name) -> None:
    ch = name("both")
    desc = Description(host="there", name=ch, slots=256, data_size=1 << 20, type=None,
                       encoding=None, schema=None)
    lc = bridge.local(ch)
    assert lc.exported  # the glob "*" exports it: the importer remembers what it puts
    assert bridge._ensure_local(lc, desc) is None
    st = be.ImportStream(bridge, "there", desc, lc)
    ex, rec = exporter(bridge, ch)
    try:
        now = time.time_ns()
        table = array("q", [1, now, 3, 2, now + 1, 3])
        from nerve_tools.bridge.wire import pack_table

        st.on_message(b"abcdef", pack_table(table, 7))
        w = nerve.open(ch, write=True)
        w.put(b"local")
        w.close()
        assert wait_until(lambda: ex.counters.forwarded + ex.counters.looped == 3)
    finally:
        ex.close()
        st.close()
    assert ex.counters.looped == 2 and ex.counters.forwarded == 1
    assert [d for d, _ in rec.samples] == [b"local"]


def test_recreated_channel_noticed_without_mapping_it(bridge: be.HostBridge, name) -> None:
    ch = name("again")
    nerve.create(ch, slots=16, size=1 << 16).close()
    bridge._scan()
    ex = bridge.exporters[ch]
    assert ex.ino == be.chan_ino(ch) is not None
    bridge._scan()
    assert bridge.exporters[ch] is ex  # unchanged: kept
    nerve.unlink(ch)
    nerve.create(ch, slots=16, size=1 << 16).close()
    bridge._scan()
    assert bridge.exporters[ch] is not ex and bridge.exporters[ch].epoch != ex.epoch
    assert not ex.thread.is_alive()
    nerve.unlink(ch)
    bridge._scan()
    assert ch not in bridge.exporters


def test_large_messages_through_views_keep_their_bytes(bridge: be.HostBridge, name) -> None:
    # Large messages are read through a view and copied into a buffer the
    # exporter keeps; smaller ones that follow must not share it.
    src = name("large")
    nerve.create(src, slots=64, size=8 << 20).close()
    ex, rec = exporter(bridge, src)
    sizes = [be.LARGE + 1000, be.LARGE + 1000, 100, 100, 100, be.LARGE + 7, be.BATCH_ITEM + 3,
             be.BATCH_ITEM + 3, 50, 60, be.LARGE + 1000]
    try:
        w = nerve.open(src, write=True)
        sent = []
        for i, n in enumerate(sizes):
            data = bytes([i + 1]) * n
            w.put(data)
            sent.append(data)
            if i in (1, 5, 7):
                time.sleep(0.05)  # the others are (most likely) drained together
        assert wait_until(lambda: ex.counters.forwarded == len(sizes)), ex.counters
        w.close()
    finally:
        ex.close()
    assert messages_of(rec) == sent


@pytest.mark.parametrize("size", [64, be.LARGE + 100])
def test_polling_exporter_forwards_every_message(name, size: int) -> None:
    """--poll: the exporter reads with a lead and a spin (get below
    LARGE, a view above). A periodic writer with slips longer than the
    lead: every message forwarded once, in order, with its bytes."""
    session = open_session(SessionOptions())
    b = be.HostBridge(session, be.BridgeOptions(ident="me", exports=["*"], poll_us=300))
    src = name("poll")
    nerve.create(src, slots=64, size=8 << 20).close()
    try:
        ex, rec = exporter(b, src)
        assert ex._wait_kw["spin"] == pytest.approx(600e-6) and ex._wait_kw["lead"] == pytest.approx(300e-6)
        n = 40
        try:
            with nerve.open(src, write=True) as w:
                for i in range(n):
                    time.sleep(0.002 if i % 10 else 0.02)
                    w.put(bytes([i + 1]) * size)
                assert wait_until(lambda: ex.counters.forwarded == n), ex.counters
        finally:
            ex.close()
        assert messages_of(rec) == [bytes([i + 1]) * size for i in range(n)]
        assert ex.counters.dropped_error == 0 and ex.counters.dropped_congestion == 0
    finally:
        b.close()
        session.close()


def test_origin_qualified_import_globs() -> None:
    """--import NAMEGLOB takes a channel from any bridge, ORIGIN/NAMEGLOB
    only from bridges whose id matches ORIGIN (docs/bridge.md)."""
    b = be.HostBridge.__new__(be.HostBridge)  # imports() needs only the globs
    b._import_globs = [be.split_import(g) for g in ("cam*", "base/cmd.*", "robot?/odom")]
    assert b.imports("anyone", "cam.left")
    assert b.imports("base", "cmd.vel") and not b.imports("intruder", "cmd.vel")
    assert b.imports("robot1", "odom") and not b.imports("robot12", "odom")
    assert not b.imports("base", "odom")
    for bad in ("/cmd", "base/", "a/b/c"):
        with pytest.raises(BridgeError, match="bad --import"):
            be.split_import(bad)


def test_ls_remote_without_a_peer_says_so_at_once() -> None:
    """`nerve ls --remote` with no --connect, --config or --scout could
    reach nobody (multicast scouting is off): a usage error naming the
    options, not a 'cannot reach' after the timeout."""
    import subprocess

    from conftest import tool

    r = subprocess.run([tool("bridge"), "ls", "--timeout", "30"],
                       capture_output=True, text=True, timeout=25)
    assert r.returncode == 2, r.stderr
    assert "no peer to ask: give --connect ENDPOINT" in r.stderr, r.stderr
