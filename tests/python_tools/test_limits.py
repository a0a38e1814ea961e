"""The bounds on what peers may make nerve allocate (nerve_tools._limits).
Their use by `nerve ros1 --from-ros` is tested against a hostile publisher
in tests/ros/test_ros1_hostile.py, by `nerve bridge` in test_bridge.py."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import nerve
from nerve_tools import _limits as limits
from nerve_tools import options

SIZE_CASES = Path(__file__).resolve().parents[1] / "size_cases.txt"


def size_cases():
    """(text, bytes or None for refused) of tests/size_cases.txt, the table
    the C library's test (tests/unit/test_size.c) reads too."""
    for line in SIZE_CASES.read_text().splitlines():
        if line.startswith("#") or not line:
            continue
        text, want = line[1:line.rindex("'")], line[line.rindex("'") + 1:].strip()
        yield text, None if want == "bad" else int(want)


def test_size_grammar_is_the_c_librarys() -> None:
    cases = list(size_cases())
    assert len(cases) >= 30
    for text, want in cases:
        if want is None:
            with pytest.raises(limits.LimitError, match=r"^bad size "):
                limits.parse_size(text)
        else:
            assert limits.parse_size(text) == want, text


def test_file_size_is_the_c_librarys() -> None:
    """The budget charges what nerve_chan_file_size says (the host's page
    size, the layout's rounding), for metadata of any split."""
    assert limits.channel_file_bytes(8, 4096, 5000) == nerve.file_size(
        8, 4096, type="t" * 200, encoding="e" * 50, schema=b"s" * 4750)
    assert limits.channel_file_bytes(8, 4096, 5000) > limits.channel_file_bytes(8, 4096)
    assert limits.channel_file_bytes(8, 4096) == nerve.file_size(8, 4096)
    b = limits.ImportBudget(max_channel=1 << 40, max_total=1 << 40)
    assert "nerve would not create it" in b.admit("huge", 1 << 33, 4096)
    assert "slots and data size" in b.admit("zero", 0, 4096)


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
