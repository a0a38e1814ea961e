"""The flags several tools share (nerve_tools.options) and the host record
that Python and C write alike (nerve_tools.host, tools/report.c)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess

import pytest

from nerve_tools import host, options
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


def test_stamp_is_iso8601_utc_with_nanoseconds() -> None:
    assert host.stamp(1_700_000_000_123_456_789) == "2023-11-14T22:13:20.123456789Z"
    assert host.stamp(5) == "1970-01-01T00:00:00.000000005Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", host.stamp())


def test_host_record_matches_the_c_writer(name) -> None:
    """nerve bench's host record (tools/report.c) and nerve_tools.host's:
    the same keys, and the same values for what does not depend on the
    run (rt_granted: neither asked for SCHED_FIFO)."""
    cli = os.environ.get("NERVE_CLI")
    if not cli or not os.access(cli, os.X_OK):
        pytest.skip(f"the nerve command is not built (NERVE_CLI={cli!r})")
    out = subprocess.run([cli, "bench", "--name", name("hostrec"), "--transport", "pipe",
                          "--duration", "0.1", "--rounds", "1", "--json", "-", "--quiet"],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout.splitlines()[0])
    c_host, py_host = row["host"], host.record()
    assert set(c_host) == set(py_host)
    assert c_host == py_host
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", row["started"])


def test_ros2_names_its_subcommands_and_catches_typos(capsys) -> None:
    """`nerve ros2 --help` lists and describes `exec`; a mistyped
    subcommand is told so (with the nearest one), not given the bridge's
    usage for a missing --to-ros."""
    text = ros2.parser().format_help()
    assert "nerve ros2 exec [--lib PATH]" in text
    assert re.search(r"subcommands:\n  exec +run a ROS 2 program on rmw_nerve_cpp", text), text
    with pytest.raises(SystemExit) as e:
        ros2.main(["exce", "--", "true"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert ("'exce' is not a subcommand of nerve ros2 (subcommands: exec, config); "
            "did you mean 'exec'?") in err
    assert "--to-ros" not in err.splitlines()[-1]
    assert re.search(r"\n  config +list the shipped DDS configurations", text), text


def test_ros2_config_lists_and_finds_the_shipped_files(capsys) -> None:
    """`nerve ros2 config` lists the shipped DDS files with what each is
    for; NAME prints one's path (by file name, stem, or Cyclone short
    name); an unknown NAME is refused with the list."""
    from nerve_tools.ros2 import ddsconfig

    assert ros2.main(["config"]) == 0
    out = capsys.readouterr().out
    for f in ("cyclonedds-loopback.xml", "cyclonedds-large-data.xml", "fastdds-large-data.xml",
              "fastdds-loopback-jazzy.xml", "fastdds-loopback-kilted.xml"):
        assert f"/{f}\n    " in out, out
    assert ros2.main(["config", "loopback"]) == 0
    path = capsys.readouterr().out.strip()
    assert path.endswith("/cyclonedds-loopback.xml") and "<AllowMulticast>false" in open(path).read()
    assert str(ddsconfig.find("fastdds-loopback-kilted.xml")) == str(
        ddsconfig.find("fastdds-loopback-kilted"))
    assert ros2.main(["config", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no shipped configuration 'nope' (shipped: cyclonedds-large-data," in err, err
