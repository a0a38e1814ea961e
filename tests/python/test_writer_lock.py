"""The writer lock: a failed commit or put gives it back (and the buffer it
borrowed), and a thread that holds it is refused a wait instead of
deadlocking."""

from __future__ import annotations

import threading
from typing import Dict

import pytest

import nerve

from polling import POLL_LIMIT


@pytest.mark.parametrize("size, exc", [(16, nerve.InvalidArgument), (-1, TypeError),
                                       ("x", TypeError)])
def test_failed_commit_releases_the_writer_lock(name, size, exc):
    with nerve.create(name("c"), slots=8, size=4096) as w, \
            nerve.open(w.name, write=True) as w2:
        res = w.reserve(8)
        with pytest.raises(exc):
            with res as buf:
                buf[:] = b"abcdefgh"
                res.size = size
        assert res.seq is None
        # Another handle (another process, say) and this one can write.
        s1 = w2.put(b"other", timeout=POLL_LIMIT)
        s2 = w.put(b"same", timeout=POLL_LIMIT)
        assert s2 == s1 + 1
        with nerve.open(w.name) as r:
            assert [m.data for m in iter(r.get, None)] == [b"other", b"same"]


def test_no_wait_on_a_handle_with_an_open_reservation(chan):
    out: Dict[str, BaseException] = {}

    def reader() -> None:
        try:
            chan.get(wait=True, timeout=POLL_LIMIT)
        except BaseException as e:
            out["e"] = e

    with chan.reserve(3) as buf:
        buf[:] = b"abc"
        th = threading.Thread(target=reader)
        th.start()
        th.join(POLL_LIMIT)
    # The wait was refused, so the commit could not be made to fail (Busy).
    assert isinstance(out.get("e"), nerve.Busy)
    assert chan.get(seq=1).data == b"abc"


def test_noncontiguous_put_releases_the_buffer_on_failure(name):
    with nerve.create(name("p"), slots=8, size=4096) as w, \
            nerve.open(w.name, write=True) as w2:
        ba = bytearray(b"abcdefgh")
        with pytest.raises(ValueError):
            w.put(memoryview(ba)[::2], timeout=-1)
        ba.extend(b"x")  # BufferError if still exported
        span = w2._reserve(16)  # another writer holds the lock
        try:
            ba2 = bytearray(b"abcdefgh")
            # This thread holds the lock (through w2): refused, not waited for.
            with pytest.raises(nerve.Deadlock):
                w.put(memoryview(ba2)[::2], timeout=0.01)
            ba2.extend(b"x")
        finally:
            del span
            w2._abort()
        assert w.put(memoryview(ba)[::2]) == 1
