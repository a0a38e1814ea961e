"""The flags several tools share (nerve_tools.options)."""

from __future__ import annotations

import argparse

import pytest

from nerve_tools import options
from nerve_tools.recording import record
from nerve_tools.ros1 import bridge as ros1
from nerve_tools.ros2 import cli as ros2


def test_size_grammar() -> None:
    assert options.size("64M") == 64 << 20
    assert options.size("1KiB") == 1024
    assert options.size("0") == 0
    for bad in ("lots", "-1", "1.5M"):
        with pytest.raises(argparse.ArgumentTypeError, match="bad size"):
            options.size(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="positive"):
        options.positive_size("0")
    assert options.split_spec("cam*:/robot") == ("cam*", "/robot")
    assert options.split_spec("/imu") == ("/imu", "")


def test_ros_bridges_read_their_shared_flags_alike() -> None:
    argv = ["--to-ros", "a*:/x", "--from-ros", "/y:b", "--latch", "--slots", "1K",
            "--size", "2M", "--max-channel-size", "8M"]
    for parser in (ros1.parser(), ros2.parser()):
        a = parser.parse_args(argv)
        assert (a.to_ros, a.from_ros, a.latch, a.slots, a.size, a.max_channel_size) == (
            ["a*:/x"], ["/y:b"], True, 1024, 2 << 20, "8M")
    opts = ros1.Ros1Options.from_args(ros1.parser().parse_args(argv))
    assert opts.to_specs == [("a*", "/x")] and opts.from_specs == [("/y", "b")]
    assert opts.budget.max_channel == 8 << 20
    assert record.parser().parse_args(["-o", "f.mcap", "--split-size", "1M", "-a"]).split_size == 1 << 20
    with pytest.raises(SystemExit):
        record.parser().parse_args(["-o", "f.mcap", "--split-size", "0", "-a"])

