"""nerve top: the numbers (with an injected clock) and the textual app,
driven headlessly by textual's test pilot."""

from __future__ import annotations

import asyncio
import subprocess

import nerve
from nerve_tools._common import human_age
from nerve_tools.monitor.top import Monitor, make_app

from conftest import tool


def test_monitor_numbers(name) -> None:
    a, b = name("a"), name("b")
    nerve.create(a, slots=4, size=4096, type="demo/Thing", encoding="json").close()
    nerve.create(b, slots=64, size=1 << 16).close()
    t0 = nerve.now_ns()
    now = [t0]
    mon = Monitor([a, b], clock=lambda: now[0])
    try:
        rows = {r.name: r for r in mon.sample()}
        assert set(rows) == {a, b} and rows[a].total == 0 and rows[a].age_ns is None
        with nerve.open(a, write=True) as wa, nerve.open(b, write=True) as wb:
            for _ in range(10):  # 4 slots: the monitor misses 6
                wa.put(b"x" * 100)
            for _ in range(6):
                wb.put(b"y" * 10)
            newest = wa.stat().newest_time_ns
        now[0] = t0 + 2_000_000_000
        rows = {r.name: r for r in mon.sample()}
    finally:
        mon.close()
    ra, rb = rows[a], rows[b]
    assert (ra.rate, ra.bandwidth, ra.size, ra.total, ra.missed, ra.read) == (5.0, 500.0, 100.0, 10, 6, 4)
    assert (rb.rate, rb.bandwidth, rb.size, rb.total, rb.missed, rb.read) == (3.0, 30.0, 10.0, 6, 0, 6)
    assert ra.age_ns == now[0] - newest
    assert (ra.type, ra.encoding, ra.slots, ra.data_size) == ("demo/Thing", "json", 4, 4096)


def test_app_renders_sorts_and_filters(name) -> None:
    a, b = name("top-a"), name("top-b")
    nerve.create(a, slots=4, size=4096, type="demo/Thing", encoding="json").close()
    nerve.create(b, slots=64, size=1 << 16).close()
    t0 = nerve.now_ns()
    now = [t0]
    mon = Monitor([a, b], clock=lambda: now[0])
    app = make_app(mon, interval=3600)  # refreshed by hand below

    async def drive() -> None:
        from textual.widgets import DataTable

        async with app.run_test(size=(160, 30)) as pilot:
            with nerve.open(a, write=True) as wa, nerve.open(b, write=True) as wb:
                for _ in range(10):
                    wa.put(b"x" * 100)
                for _ in range(6):
                    wb.put(b"y" * 10)
                newest = wa.stat().newest_time_ns
            now[0] = t0 + 1_500_000_000
            app.refresh_now()
            await pilot.pause()
            table = app.query_one(DataTable)

            # Cells are rich Text (never read as markup): compare their text.
            def row(key: str) -> list:
                return [str(c) for c in table.get_row(key)]

            def first(i: int) -> str:
                return str(table.get_row_at(i)[0])

            assert table.row_count == 2
            assert row(a) == [a, "6.7", "667 B/s", "100 B", human_age(now[0] - newest),
                                        "10", "600 ms", "W0 R0", "demo/Thing (json)", "4 x 4.0 KiB"]
            row_b = row(b)
            assert row_b[5] == "6" and row_b[8] == "-"
            # The rendered screen shows the same numbers.
            screen = app.export_screenshot()
            flat = screen.replace("&#160;", " ")
            assert a.replace("-", "") in flat.replace("-", "")
            # Cells wider than their first value are not cut (the type and
            # the ring appeared only after the first screen).
            assert "demo/Thing (json)" in flat and human_age(now[0] - newest) in flat
            # Sort: by name, then (s) by rate, (r) reversed: a (6.7 Hz) first.
            assert [first(i) for i in range(2)] == [a, b]
            await pilot.press("s", "r")
            assert [first(i) for i in range(2)] == [a, b]
            await pilot.press("r")
            assert [first(i) for i in range(2)] == [b, a]
            # Filter: "/" then a substring; escape clears it.
            await pilot.press("slash", *"top-b")
            await pilot.pause()
            assert table.row_count == 1 and first(0) == b
            await pilot.press("escape")
            await pilot.pause()
            assert table.row_count == 2
            await pilot.press("q")

    try:
        asyncio.run(drive())
    finally:
        mon.close()
    assert app.return_code in (0, None)


def test_once_prints_a_table(name) -> None:
    a = name("once")
    with nerve.create(a, slots=8, size=4096, type="demo/Once", encoding="json") as w:
        for _ in range(3):
            w.put(b"abc")
    r = subprocess.run([tool("top"), "--once", "--interval", "0.05", a],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if a in ln)
    assert "demo/Once (json)" in line and " 3 " in line + " " and "8 x 4.0 KiB" in line


def _top_in_a_pty(args, stop) -> tuple:
    """Run nerve top in a pseudo-terminal until it has drawn its table,
    then stop it with ``stop(pid, fd)``; returns (rendered, exit status or
    None if it did not exit within 20 s, after which it is killed)."""
    import os
    import pty
    import select
    import signal
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: the tool, on the terminal
        os.environ["TERM"] = "xterm-256color"
        os.execv(tool("top"), [tool("top"), *args])
    out, status = b"", None
    try:
        deadline = time.monotonic() + 30
        while b"channel" not in out and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    break
        stop(pid, fd)
        deadline = time.monotonic() + 20
        while status is None and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    os.read(fd, 65536)  # keep the terminal drained
                except OSError:
                    pass
            done, st = os.waitpid(pid, os.WNOHANG)
            status = st if done else None
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    return b"channel" in out, status


def test_ctrl_c_stops_top_in_a_terminal(name) -> None:
    """Ctrl-C ends nerve top as it ends every other verb: the key (the
    terminal is in raw mode, so no SIGINT) and the signal; and docs/tools.md's
    `nerve top 'cam*' --sort rate --reverse` is accepted."""
    import os
    import signal

    ch = name("cam0")
    nerve.create(ch, slots=8, size=4096).close()
    for args, stop in (
        ([f"{ch[:-4]}cam*", "--sort", "rate", "--reverse"], lambda pid, fd: os.write(fd, b"\x03")),
        ([], lambda pid, fd: os.kill(pid, signal.SIGINT)),
    ):
        rendered, status = _top_in_a_pty(args, stop)
        assert rendered, args
        assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (args, status)
