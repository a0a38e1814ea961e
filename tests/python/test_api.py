"""Every call of the Python API and every error it can raise."""

from __future__ import annotations

import array
import os
import struct
import subprocess
import sys
import threading
import time

import pytest

import nerve
from nerve import _nerve

# ---- lifecycle ---------------------------------------------------------------


def test_create_open_unlink(name):
    n = name("life")
    with nerve.create(n, slots=8, size=8192) as w:
        assert w.name == n and w.writable and not w.closed
        assert os.path.exists(f"/dev/shm/nerve.{n}")
        with nerve.open(n) as r:
            assert not r.writable
            assert repr(r) == f"<nerve.Channel {n!r} r>"
        assert r.closed
        with nerve.open(n, write=True) as w2:
            assert w2.writable
    assert w.closed
    nerve.unlink(n)
    assert not os.path.exists(f"/dev/shm/nerve.{n}")
    with pytest.raises(nerve.ChannelNotFound):
        nerve.unlink(n)


def test_open_missing_is_filenotfound(name):
    n = name("missing")
    with pytest.raises(FileNotFoundError) as ei:
        nerve.open(n)
    e = ei.value
    assert isinstance(e, nerve.ChannelNotFound) and isinstance(e, nerve.Error)
    assert e.errno == 2 and e.code == -2 and e.code_name == "ENOENT"
    assert e.filename == n


def test_create_geometry_and_stat(name):
    n = name("geo")
    with nerve.create(n, slots=32, size=100_000, mode=0o600) as w:
        st = w.stat()
        assert st.name == n and st.slots == 32
        assert st.data_size >= 100_000 and st.data_size % 4096 == 0
        assert st.mode & 0o777 == 0o600
        assert st.head_seq == 0 and st.messages == 0 and st.error is None
        assert st.layout_version == _nerve.LAYOUT_VERSION
        assert st.created_ns > 0
        w.put(b"abc")
        w.put(b"defg")
        st = w.stat()
        assert st.head_seq == 2 and st.tail_seq == 1 and st.messages == 2
        assert st.bytes_total == 7 and st.newest_time_ns > 0


def test_channel_info_is_the_typed_c_struct(name):
    n = name("info")
    with nerve.create(n, slots=16, size=8192, mode=0o640) as w:
        w.put(b"x")
        st = w.stat()
        assert isinstance(st, nerve.ChannelInfo)
        same = nerve.stat(n)  # without opening it
        assert (same.name, same.head_seq, same.created_ns) == (n, 1, st.created_ns)
        with pytest.raises(AttributeError):
            st.slots = 3  # type: ignore[misc]  (read-only, like the struct)
        # The fields in ns are named _ns; the old names still read them.
        assert st.newest_time == st.newest_time_ns > 0
        assert st.created == st.created_realtime_ns == st.created_ns > 0
        r = repr(st)
        assert r.startswith(f"ChannelInfo(name={n!r}, slots=16,") and "mode=0o640" in r
        assert "newest_time_ns=" in r and "created_ns=" in r and "messages=1)" in r
    bad = nerve.ChannelInfo("x", "cannot read it")
    assert (bad.name, bad.error, bad.slots) == ("x", "cannot read it", 0)
    assert repr(bad) == "ChannelInfo(name='x', error='cannot read it')"


def test_list_channels_and_the_old_name(name):
    n = name("ls")
    with nerve.create(n, slots=8, size=4096):
        assert n in {i.name for i in nerve.list_channels()}
    # nerve.list still works, but no module global shadows the built-in.
    assert nerve.list is nerve.list_channels
    assert "list" not in vars(nerve) and "list" not in nerve.__all__
    import nerve._channel as ch_mod
    assert "list" not in vars(ch_mod)


def test_create_defaults_are_the_c_librarys(name):
    # Left out, the sizes and mode are what the C library picks for 0
    # (NERVE_CHAN_OPTS_INIT), as `nerve create` without options does.
    n = name("dflt")
    with nerve.create(n) as w:
        st = w.stat()
        assert (st.slots, st.data_size, st.mode & 0o777) == (1024, 1 << 20, 0o644)
    with pytest.raises(ValueError):
        nerve.create(name("m0"), mode=0)


def test_message_and_reservation_times_are_named_ns(chan):
    res = chan.reserve(1, time=nerve.now_ns() - 1000)
    with res as buf:
        buf[:] = b"t"
    assert res.time == res.time_ns and res.seq == 1
    with nerve.open(chan.name) as r:
        m = r.get()
        assert m.time_ns == m.time == res.time_ns and m._fields[1] == "time_ns"


def test_create_exists(name):
    n = name("exists")
    with nerve.create(n, slots=8, size=8192):
        with pytest.raises(FileExistsError) as ei:
            nerve.create(n, slots=8, size=8192)
        assert isinstance(ei.value, nerve.ChannelExists)
        with nerve.create(n, slots=8, size=8192, exist_ok=True) as again:
            assert again.writable
        with pytest.raises(nerve.ChannelMismatch):
            nerve.create(n, slots=16, size=8192, exist_ok=True)


@pytest.mark.parametrize("bad", ["", ".hidden", "a/b", "sp ace", "ü"])
def test_bad_names(bad):
    with pytest.raises(nerve.InvalidArgument) as ei:
        nerve.create(bad)
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, OSError)


def test_name_too_long():
    with pytest.raises(nerve.NameTooLong):
        nerve.open("n" * (nerve.NAME_MAX + 1))


def test_bad_geometry(name):
    with pytest.raises(nerve.InvalidArgument):
        nerve.create(name("geo"), mode=0o7777777)


def test_list(name):
    a, b = name("la"), name("lb")
    with nerve.create(a, slots=4, size=4096, type="t/A"), nerve.create(b, slots=8, size=4096) as wb:
        wb.put(b"x")
        infos = {i.name: i for i in nerve.list_channels()}
        assert infos[a].slots == 4 and infos[a].head_seq == 0
        assert infos[b].slots == 8 and infos[b].head_seq == 1
        names = [i.name for i in nerve.list_channels()]
        assert names == sorted(names)


def test_list_reports_unreadable(name):
    n = name("junk")
    with open(f"/dev/shm/nerve.{n}", "wb") as f:
        f.write(b"\0" * 8192)
    info = {i.name: i for i in nerve.list_channels()}[n]
    assert info.error and info.slots == 0


def test_metadata(name):
    n = name("meta")
    schema = "float64 x\nfloat64 y\n"
    with nerve.create(n, type="geometry_msgs/Point", encoding="ros1msg", schema=schema) as w:
        md = w.metadata
        assert md == nerve.Metadata("geometry_msgs/Point", "ros1msg", schema.encode())
        with nerve.open(n) as r:
            assert r.metadata.type == "geometry_msgs/Point"
            assert r.metadata.schema == schema.encode()
    m = name("nometa")
    with nerve.create(m) as w:
        assert w.metadata == nerve.Metadata(None, None, None)
    with nerve.create(name("bin"), schema=b"\x01\xffbytes") as w:
        assert w.metadata.schema == b"\x01\xffbytes"
    with pytest.raises(nerve.InvalidArgument):  # schema text holds no NUL
        nerve.create(name("nul"), schema=b"a\x00b")


def test_metadata_too_long(name):
    with pytest.raises(nerve.InvalidArgument):
        nerve.create(name("t"), type="x" * 300)


@pytest.mark.parametrize("bad", ["evil/\x1b]2;PWNED\x07\x1b[31m", "a\nb", "del\x7f", "csi\x9b31m", "\x85"])
@pytest.mark.parametrize("field", ["type", "encoding"])
def test_metadata_control_characters_refused(name, field, bad):
    # The library refuses them too (nerve_chan_create); the binding says why.
    with pytest.raises(nerve.InvalidArgument, match="control character"):
        nerve.create(name("ctl"), **{field: bad})
    with nerve.create(name("ok"), **{field: "caf\u00e9 \u00a0~"}) as w:
        assert getattr(w.metadata, field) == "caf\u00e9 \u00a0~"


def test_check(chan):
    chan.put(b"hello")
    chan.check()
    nerve.check(chan.name)


# ---- put ---------------------------------------------------------------------


def test_put_buffers(chan):
    with nerve.open(chan.name) as r:
        assert chan.put(b"bytes") == 1
        assert chan.put(bytearray(b"bytearray")) == 2
        assert chan.put(memoryview(b"xmemoryview")[1:]) == 3
        assert chan.put(array.array("i", [1, 2, 3])) == 4
        assert chan.put(b"") == 5
        got = [r.get() for _ in range(5)]
        assert [m.data for m in got] == [
            b"bytes", b"bytearray", b"memoryview", array.array("i", [1, 2, 3]).tobytes(), b""]
        assert [m.seq for m in got] == [1, 2, 3, 4, 5]
        assert [m.size for m in got] == [5, 9, 10, 12, 0]
        assert r.get() is None


def test_put_non_contiguous(chan):
    with nerve.open(chan.name) as r:
        mv = memoryview(bytes(range(20)))[::2]
        chan.put(mv)
        assert r.get().data == bytes(range(0, 20, 2))


def test_put_rejects_non_buffers(chan):
    with pytest.raises(TypeError):
        chan.put("text is not bytes")
    with pytest.raises(TypeError):
        chan.put(12)


def test_put_too_large(chan):
    with pytest.raises(nerve.MessageTooLarge):
        chan.put(bytes(chan.stat().data_size + 1))


def test_put_at_keeps_and_clamps_times(chan):
    now = nerve.now_ns()
    assert chan.put_at(b"a", now - 5_000_000) == (1, now - 5_000_000)
    # Before the previous message: clamped to its time; in the future: now.
    assert chan.put_at(b"b", now - 9_000_000) == (2, now - 5_000_000)
    seq, t = chan.put_at(b"c", now + 3600 * 10**9)
    assert seq == 3 and now <= t <= nerve.now_ns()
    res = chan.reserve(1, time=t - 1)
    with res as buf:
        buf[:] = b"d"
    assert (res.seq, res.time_ns) == (4, t)
    with nerve.open(chan.name) as r:
        assert [(m.seq, m.time_ns) for m in iter(r.get, None)] == [
            (1, now - 5_000_000), (2, now - 5_000_000), (3, t), (4, t)]
    chan.check()


def test_put_read_only(chan):
    with nerve.open(chan.name) as r:
        with pytest.raises(nerve.ReadOnly) as ei:
            r.put(b"x")
        assert isinstance(ei.value, OSError)
        with pytest.raises(nerve.ReadOnly):
            with r.reserve(4):
                pass


def test_closed_handle(chan):
    chan.close()
    chan.close()  # idempotent
    with pytest.raises(ValueError):
        chan.put(b"x")
    with pytest.raises(ValueError):
        chan.get()


# ---- get -----------------------------------------------------------------------


def test_get_next_newest_seq(chan):
    with nerve.open(chan.name) as r:
        assert r.get() is None and r.get(newest=True) is None and r.cursor == 0
        for i in range(5):
            chan.put(b"m%d" % i)
        m = r.get()
        assert (m.seq, m.data, m.missed) == (1, b"m0", 0)
        m = r.get(newest=True)
        assert (m.seq, m.data, m.missed) == (5, b"m4", 3)
        assert r.cursor == 5
        assert r.get(newest=True) is None
        assert r.get(newest=True, repeat=True).seq == 5
        assert r.get(seq=2).data == b"m1"
        assert r.cursor == 5  # seq does not move the cursor
        assert r.get(seq=6) is None  # not yet published
        r.seek(2)
        assert r.get().seq == 3


def test_get_at(chan):
    with nerve.open(chan.name) as r:
        chan.put(b"a")
        t_mid = nerve.now_ns()
        chan.put(b"b")
        a = r.get(seq=1)
        assert r.get(at=t_mid).data == b"a"
        assert r.get(at=nerve.now_ns()).data == b"b"
        assert r.get(at=a.time_ns - 1) is None
        # wait is ignored for a time lookup (it never waits)
        assert r.get(at=a.time_ns - 1, wait=True) is None


def test_message_fields(chan):
    with nerve.open(chan.name) as r:
        before = time.monotonic_ns()
        chan.put(b"payload")
        after = time.monotonic_ns()
        m = r.get()
        assert isinstance(m, nerve.Message) and isinstance(m, tuple)
        assert before <= m.time_ns <= after
        assert abs(m.wall_time() - time.time()) < 60
        assert m.size == len(m.data) == 7
        seq, t, data, missed, size = m
        assert (seq, data, missed) == (1, b"payload", 0)


def test_get_conflicting_args(chan):
    with pytest.raises(ValueError):
        chan.get(newest=True, seq=1)
    with pytest.raises(ValueError):
        chan.get(repeat=True)
    with pytest.raises(ValueError):
        chan.get(wait=True, timeout=-1)


def test_missed_when_overwritten(name):
    with nerve.create(name("lap"), slots=4, size=4096) as w, nerve.open(w.name) as r:
        for i in range(10):
            w.put(b"%d" % i)
        m = r.get()
        assert m.seq == 7 and m.missed == 6 and m.data == b"6"
        with pytest.raises(nerve.Overwritten):
            r.get(seq=2)


def test_get_growing_sizes(name):
    """The copy buffer adapts to the message size in both directions."""
    with nerve.create(name("sizes"), slots=16, size=1 << 18) as chan, nerve.open(chan.name) as r:
        sizes = [1, 5000, 3, 60000, 0, 64, 65, 4096]
        for s in sizes:
            chan.put(bytes([s % 251]) * s)
        for s in sizes:
            m = r.get()
            assert m.size == s and m.data == bytes([s % 251]) * s


def test_get_wait_and_timeout(chan):
    with nerve.open(chan.name) as r:
        with pytest.raises(TimeoutError) as ei:
            r.get(wait=True, timeout=0.05)
        assert isinstance(ei.value, nerve.Timeout)
        with pytest.raises(nerve.Timeout):
            r.get(wait=True, timeout=0)
        t = threading.Thread(target=lambda: (time.sleep(0.05), chan.put(b"late")))
        t.start()
        m = r.get(wait=True, timeout=30)
        t.join()
        assert m.data == b"late"


@pytest.mark.parametrize("kw", [{}, {"spin": 30.0}], ids=["block", "spin"])
def test_wait_releases_gil(chan, kw):
    """A waiting reader, blocked or spinning, does not stop other Python
    threads."""
    ticks = []
    with nerve.open(chan.name) as r:
        def writer():
            for i in range(1000):
                ticks.append(i)
            chan.put(b"done")

        t = threading.Thread(target=writer)
        t.start()
        assert r.get(wait=True, timeout=30, **kw).data == b"done"
        t.join()
    assert ticks == list(range(1000))


def test_cancel(chan):
    with nerve.open(chan.name) as r:
        r.cancel()
        with pytest.raises(nerve.Cancelled):
            r.get(wait=True, timeout=10)
        r.cancel_clear()
        with pytest.raises(nerve.Timeout):
            r.get(wait=True, timeout=0.01)
        # cancel from another thread wakes a waiter
        t = threading.Timer(0.05, r.cancel)
        t.start()
        with pytest.raises(nerve.Cancelled):
            r.get(wait=True)
        t.join()


def test_busy_while_waiting(chan):
    with nerve.open(chan.name) as r:
        started = threading.Event()
        result = []

        def waiter():
            started.set()
            try:
                result.append(r.get(wait=True, timeout=30))
            except nerve.Cancelled as e:
                result.append(e)

        t = threading.Thread(target=waiter)
        t.start()
        started.wait()
        # Give the waiter time to enter the wait; Busy is then certain, and
        # before that the get below simply finds nothing.
        deadline = time.monotonic() + 10
        busy = None
        while busy is None and time.monotonic() < deadline:
            try:
                assert r.get() is None
            except nerve.Busy as e:
                busy = e
        with pytest.raises(nerve.Busy):
            r.close()
        r.cancel()
        t.join()
        r.cancel_clear()
        assert isinstance(busy, nerve.Busy) and isinstance(busy, OSError)
        assert isinstance(result[0], nerve.Cancelled)


# ---- spin and lead (nerve::WaitPolicy) ----------------------------------------


@pytest.mark.parametrize("kw, why", [
    (dict(spin=1e-3), "only with wait=True"),
    (dict(wait=True, lead=1e-3), "lead needs a spin"),
    (dict(wait=True, spin=-1e-6), "from 0 to 60"),
    (dict(wait=True, spin=61.0), "from 0 to 60"),
    (dict(wait=True, spin=float("nan")), "from 0 to 60"),
    (dict(wait=True, spin=1e-3, lead=float("inf")), "from 0 to 60"),
])
def test_spin_and_lead_refuse_bad_values(chan, kw, why):
    with nerve.open(chan.name) as r:
        with pytest.raises(ValueError, match=why):
            r.get(**kw)
        with pytest.raises(ValueError, match=why):
            with r.view(**kw):
                pass


@pytest.mark.parametrize("how", ["get", "view"])
def test_spin_and_lead_deliver_every_message_in_order(chan, how):
    """A periodic writer read with a lead (the handle learns the period,
    naps, then spins) and with a spin alone: nothing lost, nothing
    repeated, whether the message comes during the nap, the spin or the
    blocking wait after it."""
    n = 60

    def writer():
        for i in range(n):
            time.sleep(0.002 if i % 10 else 0.02)  # a period, and slips
            chan.put(b"%d" % i)

    for kw in (dict(spin=2e-4, lead=1e-4), dict(spin=5e-5)):
        with nerve.open(chan.name) as r:
            r.seek(chan.stat().head_seq)
            t = threading.Thread(target=writer)
            t.start()
            got = []
            for _ in range(n):
                if how == "get":
                    m = r.get(wait=True, timeout=30, **kw)
                    got.append((int(m.data), m.missed))
                else:
                    with r.view(wait=True, timeout=30, **kw) as m:
                        got.append((int(bytes(m.data)), m.missed))
            t.join()
            assert got == [(i, 0) for i in range(n)], kw


def test_spin_keeps_timeout_and_cancel(chan):
    """A spin longer than the timeout ends at the timeout; a lead nap
    ends at cancel()."""
    with nerve.open(chan.name) as r:
        t0 = time.monotonic()
        with pytest.raises(nerve.Timeout):
            r.get(wait=True, timeout=0.02, spin=30.0)
        assert time.monotonic() - t0 < 20  # not the 30 s spin
        for i in range(3):  # a period of 10 ms to learn
            chan.put(b"%d" % i)
            time.sleep(0.01)
        while r.get() is not None:
            pass
        timer = threading.Timer(0.05, r.cancel)
        timer.start()
        with pytest.raises(nerve.Cancelled):
            r.get(wait=True, timeout=30, spin=1e-3, lead=1e-4)
        timer.join()
        r.cancel_clear()


def test_follow_passes_spin_and_lead(chan):
    with nerve.open(chan.name) as r:
        for i in range(3):
            chan.put(b"%d" % i)
        got = [m.data for m in r.follow(timeout=0.01, spin=1e-4, lead=5e-5)]
        assert got == [b"0", b"1", b"2"]


# ---- follow and wait_any -------------------------------------------------------------


def test_follow(chan):
    with nerve.open(chan.name) as r:
        for i in range(5):
            chan.put(b"%d" % i)
        assert [m.data for m in r.follow(timeout=0.01)] == [b"0", b"1", b"2", b"3", b"4"]
        for i in range(5, 8):
            chan.put(b"%d" % i)
        got = list(r.follow(newest=True, timeout=0.01))
        assert [(m.data, m.missed) for m in got] == [(b"7", 2)]


def test_follow_waits(chan):
    with nerve.open(chan.name) as r:
        def writer():
            for i in range(3):
                chan.put(b"%d" % i)
                time.sleep(0.01)

        t = threading.Thread(target=writer)
        t.start()
        got = []
        for m in r.follow():
            got.append(m.data)
            if len(got) == 3:
                break
        t.join()
        assert got == [b"0", b"1", b"2"]


def test_wait_any(name):
    with nerve.create(name("a"), slots=4, size=4096) as wa, \
            nerve.create(name("b"), slots=4, size=4096) as wb, \
            nerve.open(wa.name) as ra, nerve.open(wb.name) as rb:
        assert nerve.wait_any([ra, rb], timeout=0.02) == []
        wb.put(b"x")
        assert nerve.wait_any([ra, rb], timeout=5) == [rb]
        wa.put(b"y")
        assert nerve.wait_any([ra, rb], timeout=0) == [ra, rb]
        rb.get()
        assert nerve.wait_any([ra, rb]) == [ra]
        t = threading.Timer(0.05, lambda: rb.cancel())
        ra.get()
        t.start()
        with pytest.raises(nerve.Cancelled):
            nerve.wait_any([ra, rb], timeout=30)
        t.join()
        rb.cancel_clear()
        with pytest.raises(ValueError):
            nerve.wait_any([])
        with pytest.raises(ValueError):
            nerve.wait_any([ra] * 65)


def test_wait_any_refuses_none(chan):
    with pytest.raises(TypeError):
        nerve.wait_any([chan, None], timeout=0)  # type: ignore[list-item]
    with pytest.raises(TypeError):
        nerve.wait_any([None], timeout=0)  # type: ignore[list-item]


# ---- reserve -------------------------------------------------------------------


def test_reserve_commit(chan):
    with nerve.open(chan.name) as r:
        res = chan.reserve(8)
        with res as buf:
            assert isinstance(buf, memoryview) and not buf.readonly and len(buf) == 8
            buf[:] = b"reserved"
        assert res.seq == 1
        assert r.get().data == b"reserved"
        with pytest.raises(ValueError):
            buf[0] = 1  # released after the block


def test_reserve_partial(chan):
    with nerve.open(chan.name) as r:
        res = chan.reserve(100)
        with res as buf:
            buf[:5] = b"short"
            res.size = 5
        assert r.get().data == b"short"


def test_reserve_abort_on_error(chan):
    with nerve.open(chan.name) as r:
        with pytest.raises(RuntimeError):
            with chan.reserve(4) as buf:
                buf[:] = b"nope"
                raise RuntimeError("serializer failed")
        assert r.get() is None
        chan.put(b"after")  # the lock was released
        assert r.get().data == b"after"


def test_reserve_busy(chan):
    with chan.reserve(4) as buf:
        buf[:] = b"abcd"
        with pytest.raises(nerve.Busy):
            chan.put(b"x")
    with pytest.raises(nerve.MessageTooLarge):
        with chan.reserve(chan.stat().data_size + 1):
            pass
    with pytest.raises(TypeError):
        chan.reserve()


def test_close_with_open_reservation(name):
    n = name("res")
    w = nerve.create(n, slots=4, size=4096)
    res = chan_res = w.reserve(4)
    buf = res.__enter__()
    buf[:] = b"lost"
    w.close()  # discards the reservation and releases the writer lock
    with nerve.open(n, write=True) as w2, nerve.open(n) as r:
        w2.put(b"next", timeout=10)
        assert r.get().data == b"next"
    del chan_res


# ---- view ----------------------------------------------------------------------


def test_view(chan):
    with nerve.open(chan.name) as r:
        with r.view() as msg:
            assert msg is None
        chan.put(b"zero-copy")
        v = r.view()
        with v as msg:
            assert isinstance(msg.data, memoryview) and msg.data.readonly
            assert bytes(msg.data) == b"zero-copy" and msg.seq == 1 and msg.size == 9
            assert v.valid()
        with pytest.raises(ValueError):
            bytes(msg.data)  # released after the block
        assert r.get() is None  # the view moved the cursor


def test_view_stale_when_lapped(name):
    with nerve.create(name("stale"), slots=4, size=4096) as w, nerve.open(w.name) as r:
        w.put(b"A" * 1000)
        with pytest.raises(nerve.StaleView) as ei:
            with r.view() as msg:
                assert bytes(msg.data[:3]) == b"AAA"
                for _ in range(8):  # lap the reader
                    w.put(b"B" * 1000)
        assert isinstance(ei.value, OSError)


def test_view_error_inside_block_wins(chan):
    chan.put(b"x")
    with nerve.open(chan.name) as r:
        with pytest.raises(KeyError):
            with r.view():
                raise KeyError("user error")


def test_view_error_on_torn_data_reports_stale(name):
    # A block that fails after a writer overwrote its message may have
    # failed on torn bytes: StaleView is raised, the user's error chained.
    with nerve.create(name("torn"), slots=4, size=4096) as w, nerve.open(w.name) as r:
        w.put(b"A" * 1000)
        with pytest.raises(nerve.StaleView) as ei:
            with r.view():
                for _ in range(8):
                    w.put(b"B" * 1000)
                raise ValueError("checksum mismatch")
        assert isinstance(ei.value.__cause__, ValueError)


def test_view_keeps_mapping_after_close(chan):
    chan.put(b"kept alive")
    r = nerve.open(chan.name)
    with r.view() as msg:
        kept = memoryview(msg.data)  # an extra export outlives the block
    r.close()
    assert r.closed
    assert bytes(kept) == b"kept alive"  # still mapped: no crash
    kept.release()


# ---- errors --------------------------------------------------------------------


def test_every_error_code_has_a_class():
    table = _nerve.error_table()
    assert len(table) >= 26
    seen = set()
    for code_name, code, message in table:
        cls = nerve._errors.BY_CODE[code]
        assert issubclass(cls, nerve.Error)
        assert cls.code == code and cls.code_name == code_name
        assert cls.__name__ in nerve.__all__ and getattr(nerve, cls.__name__) is cls
        assert cls not in seen
        seen.add(cls)
        exc = nerve._errors._make(code, message, "chan")
        assert isinstance(exc, cls)
        if code > -1000:  # errno-backed
            assert isinstance(exc, OSError) and exc.errno == -code
        else:
            assert not isinstance(exc, OSError)
            assert "chan" in str(exc)


def test_error_classes_come_from_one_table():
    # One table makes the classes, __all__ and BY_CODE; it covers the C
    # library's table exactly.
    table = nerve._errors._TABLE
    codes = {name: code for name, code, _ in _nerve.error_table()}
    assert sorted(code_name for _, code_name, _, _ in table) == sorted(codes)
    for cls_name, code_name, bases, doc in table:
        cls = getattr(nerve, cls_name)
        assert cls.__module__ == "nerve._errors" and cls.__doc__ == doc
        assert cls.code == codes[code_name] and nerve._errors.BY_CODE[cls.code] is cls
        assert all(issubclass(cls, b) for b in bases) and issubclass(cls, nerve.Error)
        assert cls_name in nerve._errors.__all__
    import pickle
    e = pickle.loads(pickle.dumps(nerve._errors._make(nerve.Busy.code, "busy")))
    assert isinstance(e, nerve.Busy)


def test_builtin_exception_families():
    assert issubclass(nerve.ChannelNotFound, FileNotFoundError)
    assert issubclass(nerve.ChannelExists, FileExistsError)
    assert issubclass(nerve.PermissionDenied, PermissionError)
    assert issubclass(nerve.Timeout, TimeoutError)
    assert issubclass(nerve.Interrupted, InterruptedError)
    assert issubclass(nerve.CorruptChannel, nerve.Error)


def _shm_patch(n, offset, data):
    fd = os.open(f"/dev/shm/nerve.{n}", os.O_RDWR)
    try:
        os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "offset,data,exc",
    [
        (0, b"NOTNERVE", nerve.NotAChannel),
        (8, struct.pack("<I", 999), nerve.VersionMismatch),
        (32, struct.pack("<I", 0x04030201), nerve.AbiMismatch),
        (64, struct.pack("<Q", 12345), nerve.CorruptChannel),
    ],
)
def test_damaged_header(name, offset, data, exc):
    n = name("dmg")
    nerve.create(n, slots=4, size=4096).close()
    _shm_patch(n, offset, data)
    with pytest.raises(exc):
        nerve.open(n)
    with pytest.raises(exc):
        nerve.check(n)


def test_truncated_file(name):
    n = name("trunc")
    nerve.create(n, slots=4, size=65536).close()
    os.truncate(f"/dev/shm/nerve.{n}", 8192)
    with pytest.raises(nerve.TruncatedChannel):
        nerve.open(n)


def test_permission_denied(name):
    """A reader without read permission gets PermissionDenied (EACCES)."""
    n = name("perm")
    nerve.create(n, slots=4, size=4096, mode=0o600).close()
    code = (
        "import os, sys, nerve\n"
        "os.setgid(65534); os.setuid(65534)\n"
        f"try:\n    nerve.open({n!r})\n"
        "except nerve.PermissionDenied as e:\n"
        "    assert isinstance(e, PermissionError); print('EACCES'); sys.exit(0)\n"
        "sys.exit(3)\n"
    )
    if os.geteuid() != 0:
        with pytest.raises(nerve.PermissionDenied):
            os.chmod(f"/dev/shm/nerve.{n}", 0)
            nerve.open(n)
        return
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    if p.returncode not in (0, 3) and "EACCES" not in p.stdout:
        pytest.skip(f"cannot run Python as an unprivileged user here: {p.stderr.strip()[-200:]}")
    assert p.returncode == 0, p.stdout + p.stderr


def test_ring_mapping_contains_reservations(name):
    # Channel.ring() is what a GPU user registers once (cudaHostRegister):
    # every reservation lies inside it.
    import numpy as np
    with nerve.create(name("ring"), slots=4, size=8192) as w:
        base, length = w.ring()
        assert length == 2 * 8192 and base > 0
        with w.reserve(dtype=np.uint8, shape=(1000,)) as buf:
            addr = buf.__array_interface__["data"][0]
            assert base <= addr and addr + 1000 <= base + length
            buf[:] = 1


def test_errors_carry_the_library_detail(name) -> None:
    """The five mistakes of every binding's error test (tests/unit
    test_chan_basic.c, tests/cxx test_cxx_api.cpp, tests/cli test_cli.py):
    str(exc) is ``NAME: CODE: detail`` with the C library's detail, as the
    nerve command prints it after ``nerve VERB: ``."""
    n = name("detail")
    with pytest.raises(nerve.InvalidArgument) as e:
        nerve.open("bad name")
    assert str(e.value).startswith("'bad name': EINVAL: a space is not allowed in a channel "
                                   "name (names use A-Z a-z 0-9 _ . -"), str(e.value)
    with pytest.raises(nerve.ChannelNotFound) as e:
        nerve.open(n)
    assert str(e.value) == f"{n}: ENOENT: no such channel", str(e.value)
    assert e.value.channel == n and e.value.code_name == "ENOENT"
    with nerve.create(n, slots=8, size=4096, type="demo/A") as w:
        with pytest.raises(nerve.ChannelExists) as e:
            nerve.create(n, slots=8, size=4096, type="demo/A")
        assert str(e.value).startswith(f"{n}: EEXIST: a channel of this name exists (open it"), str(e.value)
        with pytest.raises(nerve.ChannelMismatch) as e:
            nerve.create(n, slots=8, size=4096, type="demo/B", exist_ok=True)
        assert "type 'demo/A'" in str(e.value) and "asked for type 'demo/B'" in str(e.value), str(e.value)
        with pytest.raises(nerve.MessageTooLarge) as e:
            w.put(b"x" * 5000)
        assert str(e.value) == (f"{n}: EMSGSIZE: a message of 5000 bytes does not fit: the channel's "
                                "data ring is 4096 bytes (the largest message)")


def test_where_a_channel_lives(name) -> None:
    """nerve.path, nerve.file_size and the lock owner in ChannelInfo: what
    tools need of the file format, from the C library (issue 31)."""
    n = name("where")
    prefix = nerve.path()
    assert nerve.path(n) == prefix + n
    assert nerve.path(n, bell=True) != nerve.path(n)
    with pytest.raises(nerve.InvalidArgument):
        nerve.path("bad name")
    want = nerve.file_size(slots=8, size=5000, type="demo/T", schema=b"s" * 5000)
    with nerve.create(n, slots=8, size=5000, type="demo/T", schema=b"s" * 5000) as w:
        assert os.stat(nerve.path(n)).st_size == want == nerve.stat(n).file_size
        assert os.path.exists(nerve.path(n, bell=True))
        info = nerve.stat(n)
        assert info.lock_owner_tid == 0 and info.lock_flags == 0
        with w.reserve(16) as r:
            r[:1] = b"x"
            held = nerve.stat(n)
            assert held.lock_owner_tid == threading.get_native_id()
            assert not held.lock_flags & nerve.LOCK_OWNER_DIED
        assert nerve.stat(n).lock_owner_tid == 0
    nerve.unlink(n)
    with pytest.raises(nerve.InvalidArgument):
        nerve.file_size(size=(1 << 40) + 1)
    with pytest.raises(ValueError):
        nerve.file_size(slots=0)
