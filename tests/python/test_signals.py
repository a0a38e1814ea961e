"""Ctrl-C (SIGINT) interrupts a blocking wait promptly and cleanly."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

WAITS = {
    "get": "r.get(wait=True)",
    "get_timeout": "r.get(wait=True, timeout=3600)",
    "view": "r.view(wait=True).__enter__()",
    "follow": "next(iter(r.follow()))",
    "wait_any": "nerve.wait_any([r])",
    # A spin of a minute (the most there is): interrupted within a slice.
    "get_spin": "r.get(wait=True, spin=60.0)",
    "view_spin": "r.view(wait=True, spin=60.0).__enter__()",
}


@pytest.mark.parametrize("how", sorted(WAITS))
def test_sigint_interrupts_wait(chan, how):
    code = textwrap.dedent(f"""
        import sys, time, nerve
        r = nerve.open({chan.name!r})
        try:
            print("ready", flush=True)
            {WAITS[how]}
            print("returned", flush=True)
        except KeyboardInterrupt:
            # the handle still works after the interrupted wait
            assert r.get() is None
            r.close()
            print("interrupted", flush=True)
            sys.exit(0)
        sys.exit(3)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, (out, err)
    assert out.strip() == "interrupted"
    print(f"{how}: SIGINT to exit {elapsed * 1e3:.1f} ms")


def test_sigint_in_main_thread_while_other_thread_waits(chan):
    """A wait in a worker thread does not keep Ctrl-C from the main thread."""
    code = textwrap.dedent(f"""
        import sys, threading, nerve
        r = nerve.open({chan.name!r})
        t = threading.Thread(target=lambda: r.get(wait=True, timeout=3600), daemon=True)
        t.start()
        try:
            print("ready", flush=True)
            t.join()
        except KeyboardInterrupt:
            r.cancel()      # clean shutdown of the waiting thread
            t.join()
            print("interrupted", flush=True)
            sys.exit(0)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, (out, err)
    assert out.strip() == "interrupted"


@pytest.mark.parametrize("kind", ["daemon_thread", "pending_get_async"])
def test_exit_while_waiting(chan, kind):
    """The interpreter exits cleanly while a thread still waits: a daemon
    thread (Python ends those mid-wait) or an un-awaited get_async()."""
    body = {
        "daemon_thread": """
            t = threading.Thread(target=lambda: r.get(wait=True), daemon=True)
            t.start()
        """,
        "pending_get_async": """
            async def main():
                asyncio.ensure_future(r.get_async())
                await asyncio.sleep(0.05)
            loop = asyncio.new_event_loop()
            loop.run_until_complete(main())   # leaves the wait running
        """,
    }[kind]
    code = "import asyncio, threading, nerve\n" + f"r = nerve.open({chan.name!r})\n" + \
        textwrap.dedent(body) + "print('exiting', flush=True)\n"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "exiting"
    assert "terminate" not in p.stderr and "leaked" not in p.stderr
