"""A channel's growth from Python: Channel.grow(), nerve.Superseded and
Channel.follow() (GROWTH in src/chan_open.c)."""

from __future__ import annotations

import pytest

import nerve


def test_grow_then_follow_in_order(name) -> None:
    name = name("grow")
    w = nerve.create(name, slots=8, size=4096, type="t/msg/T", encoding="raw")
    r = nerve.open(name)
    for i in range(3):
        w.put(bytes([i]) * 100)
    with pytest.raises(nerve.MessageTooLarge):
        w.put(b"x" * 10_000)
    w.grow(1 << 16, 16)
    assert w.put(b"x" * 10_000) == 4
    assert [r.get().seq for _ in range(3)] == [1, 2, 3]
    with pytest.raises(nerve.Superseded):
        r.get()
    assert r.renamed()
    assert r.follow_successor()
    m = r.get()
    assert (m.seq, m.missed, len(m.data)) == (4, 0, 10_000)
    assert not r.follow_successor()  # the name still names this one
    assert nerve.stat(name).data_size >= 1 << 16
    late = nerve.open(name)  # the history came along, same numbers
    assert [late.get().seq for _ in range(4)] == [1, 2, 3, 4]
    for ch in (late, r, w):
        ch.close()


def test_a_view_pins_the_old_channel(name) -> None:
    name = name("pin")
    w = nerve.create(name, slots=4, size=4096)
    r = nerve.open(name)
    w.put(b"a" * 10)
    w.grow(1 << 16)
    with r.view() as v:
        assert bytes(v.data) == b"a" * 10
        with pytest.raises(nerve.Busy):
            r.follow_successor()
    with pytest.raises(nerve.Superseded):
        r.get()
    assert r.follow_successor()
    for ch in (r, w):
        ch.close()


def test_read_only_handle_cannot_grow(name) -> None:
    name = name("ro")
    nerve.create(name, slots=4, size=4096).close()
    r = nerve.open(name)
    with pytest.raises(nerve.ReadOnly):
        r.grow(1 << 16)
    r.close()


def test_channel_follow_goes_on_in_the_successor(name) -> None:
    name = name("iter")
    w = nerve.create(name, slots=8, size=4096)
    r = nerve.open(name)
    w.put(b"1")
    w.grow(1 << 16)
    w.put(b"2" * 8000)
    got = [(m.seq, len(m.data)) for m in r.follow(timeout=0.2)]
    assert got == [(1, 1), (2, 8000)]
    for ch in (r, w):
        ch.close()
