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


def test_a_wait_off_the_main_thread_is_one_wait(chan):
    """Only the main thread runs signal handlers: another thread's wait is
    one C wait to its deadline, not the binding's 50 ms slices that wake it
    for nothing. Counted by the thread's voluntary context switches over a
    1 s wait: the C core's own wake every 100 ms (NERVE__WAIT_SLICE_NS in
    src/chan.c) makes 10, the binding's slices would make 20. And cancel()
    still ends a wait without a deadline."""
    out = {}

    def waiter(r):
        tid = threading.get_native_id()
        path = f"/proc/self/task/{tid}/status"

        def switches():
            with open(path) as f:
                return next(int(ln.split()[1]) for ln in f if ln.startswith("voluntary_ctxt_switches"))

        before = switches()
        try:
            r.get(wait=True, timeout=1.0)
        except nerve.Timeout:
            out["timed_out"] = True
        out["switches"] = switches() - before
        try:
            r.get(wait=True)
        except nerve.Cancelled:
            out["cancelled"] = True

    with nerve.open(chan.name) as r:
        th = threading.Thread(target=waiter, args=(r,))
        th.start()
        th.join(timeout=5)  # the 1 s wait; the forever wait then follows
        assert th.is_alive() and "switches" in out, out
        r.cancel()
        th.join(timeout=30)
        assert not th.is_alive()
    assert out.get("timed_out") and out.get("cancelled"), out
    assert out["switches"] <= 15, out
