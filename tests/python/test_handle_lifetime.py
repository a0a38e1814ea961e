"""When a channel handle is freed: not by a task or a messages loop while
another thread waits on it, not by a put whose argument closes it, and not
under a view block that still uses its mapping."""

from __future__ import annotations

import gc
import threading
from typing import Any, Dict

import pytest

import nerve
from nerve import _channel, _errors, _nerve, rt

from polling import POLL_LIMIT, poll


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


def test_close_inside_a_view_block_still_validates(chan):
    chan.put(b"abc")
    with nerve.open(chan.name) as r:
        with r.view() as m:
            assert m is not None
            r.close()
            assert bytes(m.data) == b"abc"  # the mapping lives until the block ends
        assert r.closed
