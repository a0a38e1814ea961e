"""Timeouts of every blocking call: negative ones are refused even when they
would not be used, and huge ones (inf, 1e300) mean forever."""

from __future__ import annotations

import threading

import pytest

import nerve


@pytest.mark.parametrize("call", ["put", "put_nc", "reserve", "get", "wait_any"])
def test_negative_timeout_is_always_refused(chan, call):
    # No contention and a message ready: the timeout would not be used.
    chan.put(b"x")
    with nerve.open(chan.name) as r, pytest.raises(ValueError, match="timeout"):
        if call == "put":
            chan.put(b"y", timeout=-1)
        elif call == "put_nc":
            chan.put(memoryview(b"abcd")[::2], timeout=-1)
        elif call == "reserve":
            with chan.reserve(4, timeout=-1):
                pass
        elif call == "get":
            r.get(wait=True, timeout=-1)
        else:
            nerve.wait_any([r], timeout=-1)
    assert chan.stat().head_seq == 1


@pytest.mark.parametrize("timeout", [float("inf"), 1e300, 1e10, 9.3e9])
def test_huge_timeouts_mean_forever(chan, timeout):
    with nerve.open(chan.name) as r:
        chan.put(b"x")
        assert r.get(wait=True, timeout=timeout).data == b"x"
        # And a real wait: the message comes from another thread.
        th = threading.Timer(0.05, chan.put, args=(b"y",))
        th.start()
        try:
            assert r.get(wait=True, timeout=timeout).data == b"y"
        finally:
            th.join()
        chan.put(b"z")
        assert nerve.wait_any([r], timeout=timeout) == [r]


def test_realtime_conversion_saturates():
    # nerve_clock_to_realtime_ns() adds the clocks' offset with saturation
    # (src/timeconv.h): a time at the end of int64 stays there instead of
    # wrapping to a date before 1970.
    from nerve import _nerve

    assert _nerve.mono_to_realtime_ns(2**63 - 1) == 2**63 - 1
    assert _nerve.mono_to_realtime_ns(-(2**63)) < 0
    now = nerve.now_ns()
    assert _nerve.mono_to_realtime_ns(now) > now  # the epoch is older than boot
