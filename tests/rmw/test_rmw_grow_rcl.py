"""Growth and leftovers through rcl in C (tests/rmw/rcl_grow.c, built beside
the library: rcl_grow, and kilted/rcl_grow for the Kilted build), each
process under nerve-ros2-exec on a ROS domain of the test's own.

Needs NERVE_RMW_LIB and NERVE_ROS2_PYTHON as test_rmw_nerve.py does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rmwtest import LIB, PY, expect, need_rmw, result

import nerve

HERE = Path(__file__).parent
need_rmw()

PROG = Path(LIB).parent / "rcl_grow"
RCL = Path(PY).parent.parent / "lib" / "librcl.so"
BIN = Path(sys.executable).parent
# The leftovers test's starts of the C node (kill -9 every other one).
STARTS = int(os.environ.get("NERVE_TEST_LIFE_C_STARTS", "200"))


@pytest.fixture(autouse=True)
def _built():
    if not PROG.exists():
        pytest.skip(f"{PROG} was not built (rcl headers or libpython missing: see cmake's "
                    "rcl_grow line)")


def _env(domain: int) -> dict:
    return dict(os.environ, ROS_DOMAIN_ID=str(domain), PYTHONUNBUFFERED="1")


_EXEC_ENV: dict = {}


def rcl(domain: int, *args: str, env: dict | None = None) -> subprocess.Popen:
    """The C program, started with the environment nerve-ros2-exec gives it
    (asked once: the program starts in milliseconds, Python would not)."""
    if not _EXEC_ENV:
        out = subprocess.run([sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB,
                              "--rcl", str(RCL), "--print", "--", str(PROG)], check=True,
                             capture_output=True, text=True).stdout
        _EXEC_ENV.update(ln.split("=", 1) for ln in out.splitlines() if "=" in ln)
        assert _EXEC_ENV.get("RMW_IMPLEMENTATION") == "rmw_nerve_cpp", out
    return subprocess.Popen([str(PROG), *args], env={**_env(domain), **_EXEC_ENV, **(env or {})},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def rclpy(domain: int, role: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB, "--",
                             PY, str(HERE / "nodes.py"), role, *args], env=_env(domain),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("publisher", ["rcl", "rclpy"])
@pytest.mark.parametrize("kind", ["cloud", "path"])
def test_growth_published(domain, publisher, kind):
    """rcl in C (or rclpy) publishes a PointCloud2 growing from 1 kB to 8 MB
    or a Path from 0 to 10,000 poses: an rclpy subscriber, one on rcl in C
    and `nerve echo` each receive every message in order with its content,
    and so does a transient-local late joiner (rcl in C) after the growth."""
    count = 6 if kind == "path" else 5
    subs = [rclpy(domain, "grow_sub", kind, str(count)), rcl(domain, "sub", kind, str(count))]
    procs = list(subs)
    try:
        for s in subs:
            expect(s, "ready")
        pub = rcl(domain, "pub", kind, "2") if publisher == "rcl" else \
            rclpy(domain, "grow_pub", kind, "2")
        procs.append(pub)
        expect(pub, "ready")
        # The topic's channel is made by the first publish; `nerve echo
        # --all` then reads from the oldest message on (the ring keeps the
        # history, as the late joiner below shows).
        chan = f"ros2-d{domain}.grow"
        deadline = time.monotonic() + 60
        while not os.path.exists(nerve.path(chan)) and time.monotonic() < deadline:
            time.sleep(0.01)
        echo = subprocess.Popen([str(BIN / "nerve-echo"), chan, "--all",
                                 "-n", str(count), "--timeout", "60", "--json", "--field",
                                 "header.frame_id"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        procs.append(echo)
        published = json.loads(expect(pub, "published"))["published"]
        py_got = result(subs[0])["got"]
        c_got = result(subs[1])["got"]
        out, err = echo.communicate(timeout=120)
        assert echo.returncode == 0, err
        echoed = [json.loads(ln) for ln in out.splitlines()]
        late = rcl(domain, "sub", kind, str(count))
        procs.append(late)
        expect(late, "ready")
        late_got = result(late)["got"]
        pub.communicate("", timeout=60)
        assert pub.returncode == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    sizes = [1000, 10_000, 100_000, 1_000_000, 8_000_000] if kind == "cloud" else \
        list(range(0, 10_001, 2000))
    assert published == sizes
    assert py_got == [[i, n, True] for i, n in enumerate(sizes)], py_got
    want = [["", i, n, True] for i, n in enumerate(sizes)]
    assert c_got == want, c_got
    assert late_got == want, late_got
    assert [e["value"] for e in echoed] == [str(i) for i in range(count)], echoed
    seqs = [e["seq"] for e in echoed]
    assert seqs == list(range(seqs[0], seqs[0] + count)), seqs


def test_two_publishers_grow_one_topic(domain):
    """Two rcl publishers grow /grow at once: the subscriber takes all ten
    messages, each publisher's in its own order (1 kB to 8 MB), none twice."""
    sub = rcl(domain, "sub", "cloud", "10")
    procs = [sub]
    try:
        expect(sub, "ready")
        pubs = [rcl(domain, "pub", "cloud", "1", tag) for tag in ("a", "b")]
        procs += pubs
        for p in pubs:
            expect(p, "ready")
        for p in pubs:
            expect(p, "published")
        got = result(sub)["got"]
        for p in pubs:
            p.communicate("", timeout=60)
            assert p.returncode == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert all(g[3] for g in got), got
    for tag in ("a", "b"):
        mine = [g[1] for g in got if g[0] == tag]
        assert mine == [0, 1, 2, 3, 4], (tag, got)


# libnerve built with its crash points live (target nerve_crash_shared).
CRASH_LIB = next((d / "crash" / "libnerve.so.1" for d in Path(LIB).resolve().parents
                  if (d / "crash" / "libnerve.so.1").exists()), None)


@pytest.mark.parametrize("point", ["grow.locked", "grow.copied", "grow.renamed",
                                   "grow.marked"])
def test_publisher_killed_while_growing(domain, point):
    """A publisher SIGKILLed at a step of its topic's growth (the core's
    crash point, skip 0: its first growth) leaves a topic that the next
    publisher and the subscriber use: the subscriber takes what the dead
    one committed, in order, then every message of the next one."""
    if CRASH_LIB is None:
        pytest.skip(f"no crash/libnerve.so.1 above {LIB} (cmake --build build --target "
                    "nerve_crash_shared)")
    sub = rcl(domain, "sub", "cloud", "20", "b:4")
    procs = [sub]
    try:
        expect(sub, "ready")
        dying = rcl(domain, "pub", "cloud", "1", "a", env={
            "NERVE_CRASHPOINT": point, "NERVE_CRASHPOINT_SKIP": "0",
            "LD_PRELOAD": f"{CRASH_LIB}:{_EXEC_ENV['LD_PRELOAD']}"})
        procs.append(dying)
        expect(dying, "ready")
        out, err = dying.communicate("", timeout=60)
        assert dying.returncode == -9, f"exit {dying.returncode}\n{out}\nstderr:\n{err}"
        nxt = rcl(domain, "pub", "cloud", "1", "b")
        procs.append(nxt)
        expect(nxt, "ready")
        expect(nxt, "published")
        got = result(sub)["got"]
        nxt.communicate("", timeout=60)
        assert nxt.returncode == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert all(g[3] for g in got), got
    mine = [g[1] for g in got if g[0] == "a"]
    assert mine == list(range(len(mine))) and len(mine) < 5, got
    assert [g[1] for g in got if g[0] == "b"] == [0, 1, 2, 3, 4], got
    assert [g[0] for g in got] == ["a"] * len(mine) + ["b"] * 5, got


def _shm_of(domain: int) -> set[str]:
    """The domain's files in /dev/shm, its graph channel aside."""
    return {f for f in os.listdir("/dev/shm")
            if f"ros2-d{domain}." in f and f"ros2-graph-d{domain}" not in f}


def test_nothing_left_behind_at_scale(domain):
    """STARTS (200) starts of anonymous-name rcl nodes with a publisher and
    a subscription, every other one ended with kill -9: /dev/shm holds the
    domain's channels it held before, a `nerve create`d channel and one
    that `nerve echo` holds open (the graph channel aside)."""
    before = _shm_of(domain)
    kept = f"ros2-d{domain}.kept"
    nerve.create(kept, slots=4, size=4096).close()
    # A node is up while `nerve echo` opens /life; it stays held after.
    first = rcl(domain, "life")
    expect(first, "ready")
    echo = subprocess.Popen([str(BIN / "nerve-echo"), f"ros2-d{domain}.life", "--timeout",
                             "600"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        # The node ends once `nerve echo` has the channel mapped.
        deadline = time.monotonic() + 60
        while f"nerve.ros2-d{domain}.life" not in Path(f"/proc/{echo.pid}/maps").read_text():
            assert echo.poll() is None and time.monotonic() < deadline, echo.stderr.read()
            time.sleep(0.02)
        assert result(first, "")["ok"]
        batch = 25
        for at in range(0, STARTS, batch):
            ps = [rcl(domain, "life") for _ in range(min(batch, STARTS - at))]
            for p in ps:
                expect(p, "ready")
            for i, p in enumerate(ps):
                if (at + i) % 2:
                    p.kill()
                    p.communicate(timeout=60)
                    assert p.returncode == -9
                else:
                    assert result(p, "")["ok"]
        # The next node's start sweeps what the killed ones left.
        assert result(rcl(domain, "life"), "")["ok"]
        assert echo.poll() is None, echo.stderr.read()
        assert _shm_of(domain) - before == {
            f"nerve.{kept}", f"nerve-bell.{kept}",
            f"nerve.ros2-d{domain}.life", f"nerve-bell.ros2-d{domain}.life"}
    finally:
        echo.kill()
        echo.wait(timeout=30)
    # With `nerve echo` gone, the next start sweeps /life too.
    assert result(rcl(domain, "life"), "")["ok"]
    assert _shm_of(domain) - before == {f"nerve.{kept}", f"nerve-bell.{kept}"}
    nerve.unlink(kept)
