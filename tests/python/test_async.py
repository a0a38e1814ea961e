"""The asyncio path: get_async() waits without blocking the event loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import nerve
from nerve import _nerve

from polling import poll


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_ready_message_returns_at_once(chan):
    async def main():
        with nerve.open(chan.name) as r:
            chan.put(b"ready")
            return await r.get_async()

    assert run(main()).data == b"ready"


def test_loop_keeps_running_while_waiting(chan):
    """The message is put by another coroutine on the same loop: if
    get_async() blocked the loop, it could never be sent."""

    async def main():
        with nerve.open(chan.name) as r:
            ticks = 0

            async def ticker():
                nonlocal ticks
                for _ in range(5):
                    await asyncio.sleep(0.001)
                    ticks += 1
                chan.put(b"from the loop")

            waiter = asyncio.create_task(r.get_async(timeout=30))
            await ticker()
            msg = await waiter
            return msg, ticks

    msg, ticks = run(main())
    assert msg.data == b"from the loop" and ticks == 5


def test_newest_and_seq(chan):
    async def main():
        with nerve.open(chan.name) as r:
            for i in range(3):
                chan.put(b"%d" % i)
            newest = await r.get_async(newest=True)
            second = await r.get_async(seq=2)
            return newest, second

    newest, second = run(main())
    assert (newest.data, newest.missed) == (b"2", 2)
    assert second.data == b"1"


def test_timeout(chan):
    async def main():
        with nerve.open(chan.name) as r:
            with pytest.raises(nerve.Timeout):
                await r.get_async(timeout=0.02)

    run(main())


def test_cancel_task_cancels_wait(chan):
    async def main():
        with nerve.open(chan.name) as r:
            task = asyncio.create_task(r.get_async())
            await asyncio.sleep(0.05)  # let the wait start in its thread
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The handle is usable again and no longer cancelled.
            with pytest.raises(nerve.Timeout):
                r.get(wait=True, timeout=0.01)
            chan.put(b"after cancel")
            return await r.get_async(timeout=30)

    assert run(main()).data == b"after cancel"


def test_wait_for_timeout(chan):
    async def main():
        with nerve.open(chan.name) as r:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(r.get_async(), 0.05)
            chan.put(b"still works")
            return await r.get_async(timeout=30)

    assert run(main()).data == b"still works"


def test_many_concurrent_waits(name):
    """More waits than asyncio's default executor has threads."""
    n = 12

    async def main():
        writers = [nerve.create(name(f"w{i}"), slots=4, size=4096) for i in range(n)]
        readers = [nerve.open(w.name) for w in writers]
        try:
            tasks = [asyncio.create_task(r.get_async(timeout=30)) for r in readers]
            await asyncio.sleep(0.02)
            for i, w in enumerate(writers):
                w.put(b"%d" % i)
            msgs = await asyncio.gather(*tasks)
            return [m.data for m in msgs]
        finally:
            for c in readers + writers:
                c.close()

    assert run(main()) == [b"%d" % i for i in range(n)]


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
