"""The bridge kernel through Python (nerve.bridge): the shared conformance
table tests/bridge/cases.txt, which the C test (test_bridge_kernel) and
the Rust test (rust/nerve/tests/bridge.rs) read too, and the channel
directory's events through the descriptor an event loop would poll."""

import os
import select
import time
from pathlib import Path

import pytest

import nerve
import nerve.bridge as nb

CASES = Path(__file__).resolve().parents[1] / "bridge" / "cases.txt"
ERRORS = {"EINVAL": nerve.InvalidArgument, "ENAMETOOLONG": nerve.NameTooLong,
          "EMSGSIZE": nerve.MessageTooLarge, "ENOSPC": nerve.NoSpace,
          "ENOENT": None}


def table():
    for n, line in enumerate(CASES.read_text().splitlines(), 1):
        f = line.split()
        if f and not f[0].startswith("#"):
            yield n, f


def stateless():
    return [pytest.param(f, id=f"line{n}") for n, f in table()
            if f[0] in ("topic", "channel", "glob")]


@pytest.mark.parametrize("f", stateless())
def test_names_and_globs(f):
    kind, arg, value, want = f
    if kind == "glob":
        call = lambda: nb.glob_match(arg, value)  # noqa: E731
        expect = {"1": True, "0": False}.get(want)
    else:
        fn = nb.topic_of_channel if kind == "topic" else nb.channel_of_topic
        call = lambda: fn(value, int(arg))  # noqa: E731
        expect = None if want in ERRORS else want
    if expect is None:
        with pytest.raises(ERRORS[want]) as e:
            call()
        assert str(e.value)
    else:
        assert call() == expect


def test_budget_cases():
    b, n = None, 0
    for _, f in table():
        if f[0] == "budget":
            b = nb.Budget(nerve.parse_size(f[1]), nerve.parse_size(f[2]))
        elif f[0] == "admit":
            args = (f[1], nerve.parse_size(f[2]), nerve.parse_size(f[3]))
            if f[4] == "0":
                assert b.admit(*args) == nerve.file_size(args[1], args[2])
            else:
                with pytest.raises(ERRORS[f[4]]):
                    b.admit(*args)
        elif f[0] == "release":
            assert b.release(f[1]) is (f[2] == "0")
        elif f[0] == "refused":
            assert b.stats()["refused"] == int(f[1])
        else:
            continue
        n += 1
    assert n >= 10


def test_budget_messages():
    b = nb.Budget(64 << 20, 3 << 20)
    with pytest.raises(nerve.MessageTooLarge, match="data ring of 4 GiB"):
        b.admit("big", 8, 4 << 30, count=False)
    assert b.stats()["refused"] == 0
    with pytest.raises(nerve.InvalidArgument):
        b.admit("a", 0, 4096)


def wait_event(d, deadline_s=20.0):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        ev = d.next()
        if ev is not None:
            return ev
        select.select([d], [], [], 0.2)
    raise AssertionError("no channel directory event within 20 s")


@pytest.mark.parametrize("scan", [False, True], ids=["inotify", "scan"])
def test_channel_dir(scan):
    pre = f"pyt-bk-{os.getpid()}-{int(scan)}"
    with nb.ChannelDir([pre + ".*"], scan=scan) as d:
        assert not (scan and d.inotify)  # the scan asked for is the scan used
        assert d.next() is None
        nerve.create(pre + ".a", slots=4, size=4096).close()
        try:
            assert wait_event(d) == ("created", pre + ".a")
        finally:
            nerve.unlink(pre + ".a")
        assert wait_event(d) == ("removed", pre + ".a")
    with pytest.raises(nerve.InvalidArgument, match="no/slash"):
        nb.ChannelDir(["no/slash"])


def test_own_guard(chan):
    """The own-sequence guard through Python: the importer's puts are ours,
    another writer's are not, a failed put records nothing, the table wraps
    (the C test test_bridge_own has the threads and the stalled importer)."""
    g = nb.OwnGuard()
    with g.put() as done:
        done(chan.put(b"imported"))
    foreign = chan.put(b"from another writer")
    with pytest.raises(ValueError), g.put():
        raise ValueError("the put failed")
    assert g.is_own(1) and not g.is_own(foreign) and not g.is_own(0)
    for seq in range(2, nb.OWN_N + 2):
        g.commit(g.begin(), seq)
    assert not g.is_own(1) and g.is_own(nb.OWN_N + 1)  # 1's slot reused
    assert g.stats() == {"committed": nb.OWN_N + 1, "waited": 0, "late": 0}
    g.reset()  # the channel made again
    assert not g.is_own(nb.OWN_N + 1)
    with pytest.raises(nerve.InvalidArgument):
        g.commit(2, 5)  # a token begin() never gives
