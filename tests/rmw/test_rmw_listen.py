"""Listener callbacks (rclcpp's events executor), an event's callback and
wait sets shared by threads, through rcl in C (tests/rmw/rcl_listen.c,
built beside the library: rcl_listen, and kilted/rcl_listen for the Kilted
run of `make test-rmw`), across processes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from test_rmw_nerve import LIB, _default_sigint, expect

PROG = os.path.join(os.path.dirname(LIB), "rcl_listen")
EXEC = [sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB, "--", PROG]


@pytest.fixture
def prog():
    if not os.path.exists(PROG):
        pytest.skip(f"{PROG} was not built (rcl headers or libpython missing: see cmake's "
                    "rcl_listen line)")
    return PROG


def run(domain: int, *args: str, stdin=None) -> subprocess.Popen:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    return subprocess.Popen([*EXEC, *args], env=env, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)


def finish(p: subprocess.Popen) -> str:
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and "passed" in out, f"exit {p.returncode}\n{out}\nstderr:\n{err}"
    return out


def say(p: subprocess.Popen) -> None:
    p.stdin.write("\n")
    p.stdin.flush()


def publish(domain: int, n: int) -> subprocess.Popen:
    """A publisher process that sent n messages and waits for a line."""
    p = run(domain, "pub", str(n), stdin=subprocess.PIPE)
    expect(p, "ok pub: the subscription is there")
    expect(p, "published")
    return p


def test_listener_callbacks_across_processes(domain, prog):
    procs = [run(domain, "sub", stdin=subprocess.PIPE)]
    sub = procs[0]
    try:
        expect(sub, "ready")
        procs.append(publish(domain, 5))
        say(sub)
        expect(sub, "ok sub: set calls the callback once with the 5")
        expect(sub, "ok sub: (that call")
        expect(sub, "set")
        procs.append(publish(domain, 4))
        say(sub)
        for what in ("calls add up", "from a thread of the RMW", "9 messages",
                     "deadline event's callback", "deadline event is taken"):
            expect(sub, what)
        expect(sub, "cleared")
        procs.append(publish(domain, 3))
        say(sub)
        out = finish(sub)
        assert "ok sub: no call after the callback was cleared" in out
        for p in procs[1:]:
            say(p)
            finish(p)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()


def test_service_client_callbacks_and_threads_waiting(domain, prog):
    out = finish(run(domain, "local"))
    oks = [ln for ln in out.splitlines() if ln.startswith("ok ")]
    for what in ("2 requests before", "a new request is told", "3 replies before",
                 "the first's did not", "woke for its own"):
        assert any(what in ln for ln in oks), out
    assert sum("in turn in another thread" in ln for ln in oks) == 3, out
