"""Regressions for bugs a review found in the binding (one test or more
each): a handle freed under a waiting thread, a null channel, a writer lock
leaked by a failed commit, a buffer leaked by a failed put, a handle used
after Python closed it, Ctrl-C ignored by Task.run(), get_async()
starvation and message loss, and the minor ones listed at the end."""

from __future__ import annotations

import asyncio
import gc
import signal
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any, Callable, Dict

import pytest

import nerve
from nerve import _channel, _errors, _nerve, rt

# Bound on every poll for another thread's or process's state.
POLL_LIMIT = 30.0


def poll(cond: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + POLL_LIMIT
    while not cond():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.005)


def busy(ch: nerve.Channel) -> bool:
    try:
        ch.get()
    except nerve.Busy:
        return True
    return False


class Waiter:
    """A thread blocked in r.get(wait=True) until a message arrives."""

    def __init__(self, r: nerve.Channel) -> None:
        self.out: Dict[str, Any] = {}
        self.th = threading.Thread(target=self._run, args=(r,))
        self.th.start()
        poll(lambda: busy(r) or not self.th.is_alive(), "the waiter to wait")

    def _run(self, r: nerve.Channel) -> None:
        try:
            self.out["msg"] = r.get(wait=True, timeout=POLL_LIMIT)
        except BaseException as e:  # reported by the test
            self.out["exc"] = e

    def finish(self, w: nerve.Channel) -> Any:
        w.put(b"wake")
        self.th.join(POLL_LIMIT)
        assert not self.th.is_alive()
        assert "exc" not in self.out, self.out
        return self.out["msg"].data


# ---- 1. release_chan only by the task that holds the handle ----------------


@pytest.mark.parametrize("how", ["second_join", "drop_task", "never_started"])
def test_task_does_not_free_a_handle_another_thread_waits_on(name, how):
    with nerve.create(name("t"), slots=8, size=4096) as w, nerve.open(w.name) as r:
        t = rt.Task(0.01, lambda tick: None, chan=r, deadline=0.01)
        if how != "never_started":
            t.start()
            t.stop()
            t.join()
        waiter = Waiter(r)
        if how == "second_join":
            t.join()
        else:
            del t
            gc.collect()
        # The handle is still the waiting thread's: close() would unmap it.
        assert busy(r)
        with pytest.raises(nerve.Busy):
            r.close()
        assert waiter.finish(w) == b"wake"


def test_messages_loop_dropped_does_not_free_the_handle(name):
    with nerve.create(name("t"), slots=8, size=4096) as w, nerve.open(w.name) as r:
        w.put(b"a")
        w.put(b"b")
        with rt.messages(r, deadline=0.01) as loop:
            for tick in loop:
                if tick.cycle >= 1:
                    break
        waiter = Waiter(r)
        del loop, tick
        gc.collect()
        with pytest.raises(nerve.Busy):
            r.close()
        assert waiter.finish(w) == b"wake"


# ---- 2. wait_any with None -------------------------------------------------


def test_wait_any_refuses_none(chan):
    with pytest.raises(TypeError):
        nerve.wait_any([chan, None], timeout=0)  # type: ignore[list-item]
    with pytest.raises(TypeError):
        nerve.wait_any([None], timeout=0)  # type: ignore[list-item]


# ---- 3. a failed commit gives the writer lock back -------------------------


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


# ---- 4. no buffer leak when a non-contiguous put fails ---------------------


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


# ---- 5. put does not use a handle Python closed meanwhile -----------------


def test_put_when_coercion_closes_the_channel(chan):
    np = pytest.importorskip("numpy")

    def closing_coerce(obj: Any) -> Any:
        chan.close()
        return _channel._coerce(obj)

    _nerve._set_hooks(_channel.Message, _errors._make, closing_coerce)
    try:
        with pytest.raises(ValueError, match="closed"):
            chan.put(np.array(["2020-01-01"], dtype="M8[ns]"))  # needs coercion
    finally:
        _nerve._set_hooks(_channel.Message, _errors._make, _channel._coerce)
    assert chan.closed


# ---- 6. Ctrl-C stops Task.run() while it waits -----------------------------

_RUN_CTRL_C = textwrap.dedent("""
    import sys
    import nerve
    from nerve import rt
    mode, name = sys.argv[1], sys.argv[2]
    def body(tick):
        if tick.cycle == 0:
            print("ready", flush=True)
    r = nerve.open(name)
    try:
        if mode == "chan":   # no message, no deadline: waits for ever
            print("ready", flush=True)
            rt.Task(None, lambda tick: None, chan=r).run()
        else:                # a clock loop sleeping for an hour
            rt.Task(3600, body).run()
    except KeyboardInterrupt:
        r.close()
        print("interrupted", flush=True)
        sys.exit(0)
    sys.exit("the loop returned")
""")


@pytest.mark.parametrize("mode", ["chan", "clock"])
def test_ctrl_c_stops_a_waiting_run(chan, mode):
    p = subprocess.Popen([sys.executable, "-c", _RUN_CTRL_C, mode, chan.name],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        if mode == "chan":
            poll(lambda: chan.stat().waiters > 0, "the loop to wait on the channel")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 0, err
    assert out.strip() == "interrupted"


# ---- 7 and 8. get_async: no starvation, no lost message --------------------


def test_get_async_more_waits_than_wait_max(name):
    n = _nerve.WAIT_MAX + 1
    ws = [nerve.create(name("a"), slots=4, size=4096) for _ in range(n)]
    rs = [nerve.open(w.name) for w in ws]

    async def main() -> bytes:
        idle = [asyncio.ensure_future(r.get_async()) for r in rs[:-1]]
        await asyncio.sleep(0)  # every idle wait now holds a thread
        last = asyncio.ensure_future(rs[-1].get_async())
        await asyncio.sleep(0)
        ws[-1].put(b"hello")
        try:
            return (await asyncio.wait_for(last, 60)).data
        finally:
            for t in idle:
                t.cancel()
            await asyncio.gather(*idle, return_exceptions=True)

    try:
        assert asyncio.run(main()) == b"hello"
    finally:
        for c in rs + ws:
            c.close()


def test_get_async_cancelled_after_taking_a_message_keeps_it(chan):
    async def main() -> Any:
        with nerve.open(chan.name) as r:
            r.seek(chan.put(b"old"))
            t = asyncio.ensure_future(r.get_async())
            await asyncio.sleep(0)
            poll(lambda: chan.stat().waiters > 0, "the wait to start")
            seq = chan.put(b"important")
            # The wait's thread takes the message; the loop has not run yet.
            poll(lambda: r.cursor == seq, "the wait to take the message")
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            return r.get()

    msg = asyncio.run(main())
    assert msg is not None and msg.data == b"important"


# ---- minor ones ------------------------------------------------------------


def test_join_after_run_on_the_same_thread() -> None:
    t = rt.Task(0.001, lambda tick: tick.cycle >= 2)
    t.run()
    assert t.join() is True


def test_close_inside_a_view_block_still_validates(chan):
    chan.put(b"abc")
    with nerve.open(chan.name) as r:
        with r.view() as m:
            assert m is not None
            r.close()
            assert bytes(m.data) == b"abc"  # the mapping lives until the block ends
        assert r.closed


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
