"""Deadline and liveliness QoS events of rmw_nerve_cpp through rclpy's
event callbacks (the roles are in events_nodes.py); run in both distros
by `make test-rmw`, as test_rmw_nerve.py is."""

from __future__ import annotations

import os
import subprocess

from test_rmw_nerve import EXEC, HERE, PY, _default_sigint, expect, result


def enode(domain: int, role: str) -> subprocess.Popen:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), PYTHONUNBUFFERED="1",
               PYTHONPATH=str(HERE))
    return subprocess.Popen([*EXEC, PY, str(HERE / "events_nodes.py"), role], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)


def _counts_add_up(events: list) -> bool:
    # Each event's total is the one before plus its change.
    total = 0
    for t, change in events:
        if change < 1 or t != total + change:
            return False
        total = t
    return True


def test_deadline_missed_offered_and_requested(domain):
    # 20 Hz for 1 s with a 100 ms deadline, then paused: both sides count
    # the periods missed (what a loaded host missed while publishing is
    # counted too, so only the pause is asserted).
    r = result(enode(domain, "deadline"))
    assert r["got"] == [str(i) for i in range(20)]
    assert r["qos_deadline"] == 100_000_000
    for side in ("offered", "requested"):
        ev = r[side]
        assert len(ev) > r["before"][0 if side == "offered" else 1], r
        assert ev[-1][0] >= 3 and _counts_add_up(ev), r


def test_liveliness_manual_automatic_and_killed(domain):
    sub = enode(domain, "live_sub")
    pub = None
    try:
        expect(sub, "ready")
        pub = enode(domain, "live_pub")
        expect(pub, "ready")
        expect(sub, "alive")
        expect(pub, "stopped")
        lost = expect(pub, "lost")
        # A manual-by-topic publisher silent past its 300 ms lease.
        assert "[[1, 1]]" in lost or "[1, 1]" in lost, lost
        sub.stdin.write("\n")
        sub.stdin.flush()
        expect(sub, "manual lost")
        pub.stdin.write("\n")
        pub.stdin.flush()
        expect(pub, "asserted")
        sub.stdin.write("\n")
        sub.stdin.flush()
        expect(sub, "manual back")
        pub.kill()  # SIGKILL: no goodbye, only the graph's liveness
        pub.communicate(timeout=30)
        r = result(sub, "\n")
    finally:
        for p in (sub, pub):
            if p and p.poll() is None:
                p.kill()
                p.communicate()
    auto, manual = r["/auto"], r["/manual"]
    # Automatic: alive from the start until the process was killed.
    assert auto[0] == [1, 0, 1, 0] and auto[-1] == [0, 0, -1, 0], auto
    # Manual: alive, lost (not alive), alive again, then gone.
    states = [tuple(e[:2]) for e in manual]
    at = 0
    for state in ((1, 0), (0, 1), (1, 0)):
        assert state in states[at:], manual
        at = states.index(state, at)
    assert states[-1] == (0, 0), manual
    # Each event's changes are the differences from the one before.
    for ev in (auto, manual):
        for a, b in zip([[0, 0]] + [e[:2] for e in ev], ev):
            assert b[2:] == [b[0] - a[0], b[1] - a[1]], ev
