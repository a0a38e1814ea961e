"""The bridge's exporters and importers (its data path, nerve-bridge-rs)
against a bare Zenoh peer on 127.0.0.1, which records what the bridge sends
and sends it samples as another bridge would (docs/bridge.md, "What
crosses"): how a burst is drained into samples (order, batch limits, a
large message in a sample of its own), that the samples put back through
an importer give the same messages and times, large messages keep their
bytes, the bridge's own imports are not sent back, imports are taken only
from the origin the glob names, and a recreated channel is noticed. One
bridge serves every test of the module (this process's channels); every
wait is bounded; channels are removed."""

from __future__ import annotations

import time
from array import array
from typing import Dict, Iterator, List, Tuple

import pytest
import zenoh

import nerve
from nerve.testing import PREFIX
from nerve_tools.bridge.wire import Description, data_key, live_key, meta_key, pack_table, unpack_table

from bridgeproc import PeerBridge, until

# The exporter's batch limits (docs/bridge.md, "Semantics across hosts").
BATCH_ITEM = 16 << 10
BATCH_MAX = 256
BATCH_BYTES = 64 << 10


@pytest.fixture(scope="module")
def bridge() -> Iterator[PeerBridge]:
    br = PeerBridge("--export", f"{PREFIX}*", "--import", f"there/{PREFIX}*")
    try:
        yield br
    finally:
        br.stop()


@pytest.fixture
def peer(bridge: PeerBridge) -> Iterator[zenoh.Session]:
    s = bridge.peer()
    try:
        yield s
    finally:
        s.close()


class Recorder:
    """The peer's subscriber to the bridge's data of one channel: every
    sample's payload and attachment, in order."""

    def __init__(self, peer: zenoh.Session, bridge: PeerBridge, name: str) -> None:
        self.samples: List[Tuple[bytes, bytes]] = []
        self.sub = peer.declare_subscriber(data_key(bridge.domain, bridge.ident, name), self._on)

    def _on(self, s: zenoh.Sample) -> None:
        self.samples.append((s.payload.to_bytes(), s.attachment.to_bytes()))

    def messages(self, start: int = 0) -> List[Tuple[int, int, bytes, int]]:
        """(seq, t_real, bytes, sample index) of every message recorded
        from sample ``start`` on, split by the samples' tables."""
        out = []
        for i, (data, att) in enumerate(self.samples[start:], start):
            _epoch, table = unpack_table(att, len(data))
            pos = 0
            for k in range(0, len(table), 3):
                out.append((table[k], table[k + 1], data[pos:pos + table[k + 2]], i))
                pos += table[k + 2]
        return out


def exported(peer: zenoh.Session, bridge: PeerBridge, name: str) -> Recorder:
    """Wait until the bridge exports ``name`` (its liveliness token) and a
    probe message written now reaches the recorder; returns it, probes
    recorded."""
    assert until(lambda: list(peer.liveliness().get(live_key(bridge.domain, bridge.ident, name),
                                                    timeout=5.0))), f"{name} not exported"
    rec = Recorder(peer, bridge, name)
    last = [0]

    def probe() -> bool:
        last[0] = w.put(b"probe")
        return bool(rec.samples)

    with nerve.open(name, write=True) as w:
        assert until(probe, 60), f"no probe of {name} arrived"
    # The last probe was put after the subscription matched: it arrives.
    assert until(lambda: rec.messages() and rec.messages()[-1][0] == last[0], 60), "the last probe"
    return rec


def announce(peer: zenoh.Session, bridge: PeerBridge, host: str, desc: Description) -> Dict:
    """Be the bridge ``host`` exporting desc.name: its description, its
    liveliness token and a publisher of its data."""
    key = meta_key(bridge.domain, host, desc.name)
    return {"q": peer.declare_queryable(key, lambda q: q.reply(key, desc.to_json())),
            "tok": peer.liveliness().declare_token(live_key(bridge.domain, host, desc.name)),
            "pub": peer.declare_publisher(data_key(bridge.domain, host, desc.name))}


def subscribed(pub: zenoh.Publisher) -> bool:
    st = pub.matching_status
    return bool(getattr(st, "matching", st))


def test_burst_drained_into_ordered_batches_and_imported_back(bridge, peer, name) -> None:
    src, dst = name("src"), name("dst")
    nerve.create(src, slots=4096, size=8 << 20).close()
    rec = exported(peer, bridge, src)
    first = len(rec.samples)
    sizes = [i % 97 for i in range(600)]
    sizes[300] = BATCH_ITEM + 5  # one large message in the middle of the burst
    sent = []
    with nerve.open(src, write=True) as w:
        for i, n in enumerate(sizes):
            data = (i.to_bytes(4, "little") * (n // 4 + 1))[:n]
            sent.append((w.put(data), data))
    assert until(lambda: len(rec.messages(first)) >= len(sizes), 60), len(rec.messages(first))
    got = rec.messages(first)
    # Order kept across samples; batches within their limits; the large
    # message alone.
    assert [(s, d) for s, _t, d, _i in got] == sent
    per_sample: Dict[int, List[int]] = {}
    for _s, _t, d, i in got:
        per_sample.setdefault(i, []).append(len(d))
    for lens in per_sample.values():
        assert len(lens) <= BATCH_MAX
        if len(lens) > 1:
            assert max(lens) < BATCH_ITEM and sum(lens) - lens[-1] < BATCH_BYTES
    assert [lens for lens in per_sample.values() if BATCH_ITEM + 5 in lens] == [[BATCH_ITEM + 5]]
    assert max(len(lens) for lens in per_sample.values()) > 1, "a burst goes out in batches"
    epochs = {unpack_table(a, len(d))[0] for d, a in rec.samples[first:]}
    assert len(epochs) == 1

    # The samples, sent by a peer "there" to the bridge, give back the same
    # messages with the origin times (same host: translation is the
    # identity, up to the clocks' offset read twice).
    desc = Description(host="there", name=dst, slots=4096, data_size=8 << 20, type=None,
                       encoding=None, schema=None, epoch=epochs.pop())
    there = announce(peer, bridge, "there", desc)
    assert until(lambda: subscribed(there["pub"]), 60), "the bridge did not subscribe to there's data"
    for data, att in rec.samples[first:]:
        there["pub"].put(data, attachment=att)
    key = f"there/{dst}"
    st = bridge.stats(lambda st: st["import"].get(key, {}).get("forwarded", 0) >= len(sizes), 60)
    im = st["import"][key]
    assert (im["forwarded"], im["gaps"], im["duplicates"], im["dropped_error"]) == (len(sizes), 0, 0, 0), im
    with nerve.open(dst) as r:
        r.seek(0)
        back = []
        while (m := r.get()) is not None:
            back.append(m)
    assert [bytes(m.data) for m in back] == [d for _, d in sent]
    with nerve.open(src) as r:
        r.seek(0)
        times = {m.seq: m.time for m in iter(r.get, None)}
    assert all(abs(m.time - times[s]) < 1_000_000 for m, (s, _d) in zip(back, sent))
    assert all(a.time <= b.time for a, b in zip(back, back[1:]))
    # A repeated sample is duplicates, not new messages.
    data, att = rec.samples[first]
    there["pub"].put(data, attachment=att)
    n = len(unpack_table(att, len(data))[1]) // 3
    bridge.stats(lambda st: st["import"][key]["duplicates"] == n, 60)
    for x in there.values():
        x.undeclare()


def test_large_messages_keep_their_bytes(bridge, peer, name) -> None:
    """Large messages go one per sample, smaller ones that follow are not
    mixed into them."""
    src = name("large")
    nerve.create(src, slots=64, size=8 << 20).close()
    rec = exported(peer, bridge, src)
    first = len(rec.samples)
    sizes = [1 << 20, 1 << 20, 100, 100, 100, (256 << 10) + 7, BATCH_ITEM + 3, BATCH_ITEM + 3, 50, 60, 1 << 20]
    sent = [bytes([i + 1]) * n for i, n in enumerate(sizes)]
    with nerve.open(src, write=True) as w:
        for i, data in enumerate(sent):
            w.put(data)
            if i in (1, 5, 7):
                time.sleep(0.05)  # the others are (most likely) drained together
    assert until(lambda: len(rec.messages(first)) >= len(sizes), 60), len(rec.messages(first))
    assert [d for _s, _t, d, _i in rec.messages(first)] == sent


def test_own_imports_not_sent_back_and_origin_filtered(bridge, peer, name) -> None:
    """A channel both imported (from "there") and exported: what the
    bridge put into it is not sent back (counted `looped`); a local
    message is. The same name announced by "other" is not imported
    (--import there/GLOB)."""
    ch = name("both")
    nerve.create(ch, slots=256, size=1 << 20).close()
    rec = exported(peer, bridge, ch)
    first = len(rec.samples)
    desc = Description(host="there", name=ch, slots=256, data_size=1 << 20, type=None,
                       encoding=None, schema=None, epoch=7)
    there = announce(peer, bridge, "there", desc)
    other = announce(peer, bridge, "other", desc)
    assert until(lambda: subscribed(there["pub"]), 60), "the bridge did not subscribe to there's data"
    now = time.time_ns()
    there["pub"].put(b"abcdef", attachment=pack_table(array("q", [1, now, 3, 2, now + 1, 3]), 7))
    other["pub"].put(b"xyz", attachment=pack_table(array("q", [1, now, 3]), 7))
    bridge.stats(lambda st: st["import"].get(f"there/{ch}", {}).get("forwarded") == 2, 60)
    with nerve.open(ch, write=True) as w:
        w.put(b"local")
    assert until(lambda: rec.messages(first), 60), "the local message was not exported"
    st = bridge.stats(lambda st: st["export"][ch]["looped"] == 2, 60)
    assert f"other/{ch}" not in st["import"], st["import"]
    assert [d for _s, _t, d, _i in rec.messages(first)] == [b"local"]
    for x in (*there.values(), *other.values()):
        x.undeclare()


def test_recreated_channel_noticed(bridge, peer, name) -> None:
    """A channel removed and made again is exported anew (another epoch);
    a removed one is no longer announced."""
    ch = name("again")
    nerve.create(ch, slots=16, size=1 << 16).close()
    rec = exported(peer, bridge, ch)
    epoch1 = unpack_table(rec.samples[-1][1], len(rec.samples[-1][0]))[0]
    nerve.unlink(ch)
    nerve.create(ch, slots=16, size=1 << 16).close()
    with nerve.open(ch, write=True) as w:
        assert until(lambda: w.put(b"again") and
                     unpack_table(rec.samples[-1][1], len(rec.samples[-1][0]))[0] != epoch1, 60)
    nerve.unlink(ch)
    live = live_key(bridge.domain, bridge.ident, ch)
    assert until(lambda: not list(peer.liveliness().get(live, timeout=2.0)), 60), "still announced"
