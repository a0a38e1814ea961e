"""The bounds on what peers may make nerve allocate (nerve_tools._limits).
Their use by `nerve ros1 --from-ros` is tested against a hostile publisher
in tests/ros/test_ros1_hostile.py, by `nerve bridge` in test_bridge.py."""

from __future__ import annotations

import argparse

import pytest

from nerve_tools import _limits as limits
from nerve_tools import options


def test_parse_size() -> None:
    assert limits.parse_size("64M") == 64 << 20
    assert limits.parse_size("4096") == 4096
    assert limits.parse_size("1GiB") == 1 << 30
    assert limits.parse_size(" 2 kb ") == 2048
    for bad in ("", "-1", "1.5M", "12Q", "M"):
        with pytest.raises(limits.LimitError):
            limits.parse_size(bad)


def test_one_size_grammar() -> None:
    """The spellings of the C verbs' grammar (tools/cli_size.c, tested in
    tests/cli/test_cli.py) read the same here; an "i" needs a unit."""
    for text in ("8K", "8k", "8Ki", "8KiB", "8kb", "8KB", "8KIB"):
        assert limits.parse_size(text) == 8192, text
    assert limits.parse_size("1T") == 1 << 40
    for bad in ("8ib", "8i", "+1", "8KiBB", "1P"):
        with pytest.raises(limits.LimitError):
            limits.parse_size(bad)


def budget(argv) -> limits.ImportBudget:
    p = argparse.ArgumentParser()
    options.add_limits(p)
    return limits.ImportBudget.from_args(p.parse_args(argv))


def test_flag_over_env_over_default(monkeypatch) -> None:
    monkeypatch.delenv(limits.ENV_MAX_CHANNEL, raising=False)
    monkeypatch.delenv(limits.ENV_MAX_TOTAL, raising=False)
    b = budget([])
    assert (b.max_channel, b.max_total) == (64 << 20, 512 << 20)
    monkeypatch.setenv(limits.ENV_MAX_CHANNEL, "1M")
    monkeypatch.setenv(limits.ENV_MAX_TOTAL, "3M")
    b = budget([])
    assert (b.max_channel, b.max_total) == (1 << 20, 3 << 20)
    b = budget(["--max-channel-size", "2M", "--max-import-total", "1G"])
    assert (b.max_channel, b.max_total) == (2 << 20, 1 << 30)
    monkeypatch.setenv(limits.ENV_MAX_TOTAL, "lots")
    with pytest.raises(limits.LimitError, match=r"\$NERVE_MAX_IMPORT_TOTAL: bad size 'lots'"):
        budget([])


def test_admit_charges_refuses_and_releases() -> None:
    b = limits.ImportBudget(max_channel=1 << 20, max_total=3 << 20)
    assert "over --max-channel-size (1 MiB)" in b.admit("big", 8, 4 << 30)
    assert "index of 1000000 slots" in b.admit("slots", 1_000_000, 4096)
    assert b.refused == 2 and b.charged == 0
    assert b.admit("a", 8, 1 << 20) is None
    assert b.admit("b", 8, 1 << 20) is None
    # The file: header page, metadata page, index page, data ring.
    assert b.charged == 2 * ((1 << 20) + 3 * 4096)
    why = b.admit("c", 8, 1 << 20)
    assert why is not None and "over --max-import-total (3 MiB)" in why
    assert b.admit("c", 8, 1 << 20, count=False) is not None and b.refused == 3
    b.release("a")
    assert b.admit("c", 8, 1 << 20) is None and b.holds("c") and not b.holds("a")
