"""Command-line options that several tools share, defined once: the same
flag has the same spelling, type and meaning in every tool that takes it.

- :func:`size`: the argparse type of every SIZE/BYTES/slot-count argument
  (one grammar, :func:`nerve_tools._limits.parse_size`: a count with an
  optional K, M, G or T suffix);
- :func:`add_limits`: ``--max-channel-size`` and ``--max-import-total``,
  the bounds on what a peer may make a tool allocate (issue 27 item 4);
- :func:`add_ros_channels`: ``--to-ros``, ``--from-ros``, ``--latch``,
  ``--slots`` and ``--size`` of the ROS bridges (``nerve ros1``,
  ``nerve ros2``), and :func:`split_spec` for their ``A:B`` values;
- :func:`add_patterns`: the channel names or globs a tool looks at;
- :func:`add_json`, :func:`add_quiet`, :func:`add_count`,
  :func:`add_timeout`: the output and stop flags of the channel verbs.
"""

from __future__ import annotations

import argparse
from typing import Tuple

from . import _limits as limits


def size(text: str) -> int:
    """argparse type: ``"64M"`` -> 67108864 (see the module docstring)."""
    try:
        return limits.parse_size(text)
    except limits.LimitError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def positive_size(text: str) -> int:
    """argparse type: :func:`size`, above zero."""
    n = size(text)
    if n <= 0:
        raise argparse.ArgumentTypeError("a size must be positive")
    return n


def add_limits(p: argparse.ArgumentParser) -> None:
    """The two bounds, with their help (the same in every tool). Values
    stay text: :meth:`nerve_tools._limits.ImportBudget.from_args` reads
    them, after the environment, and says which source was wrong."""
    g = p.add_argument_group("bounds on what peers may make this host allocate")
    g.add_argument("--max-channel-size", metavar="SIZE", default=None,
                   help=f"largest data ring (and index) of a channel a peer may size "
                        f"(${limits.ENV_MAX_CHANNEL}, default 64M)")
    g.add_argument("--max-import-total", metavar="SIZE", default=None,
                   help=f"all channels created from peers' word together "
                        f"(${limits.ENV_MAX_TOTAL}, default 512M)")


def add_ros_channels(p: argparse.ArgumentParser, ros: str, encoding: str, latch_help: str) -> None:
    """The channel-to-topic flags of a ROS bridge: ``ros`` names the ROS
    ("ROS" or "ROS 2"), ``encoding`` the channels it publishes."""
    p.add_argument("--to-ros", action="append", default=[], metavar="GLOB[:TOPIC]",
                   help=f"publish {encoding} channels matching GLOB (also ones created later) as "
                        f"{ros} topics; TOPIC names the topic of one channel, or prefixes the "
                        f"topics of a glob (default topic: the name with '.' as '/')")
    p.add_argument("--from-ros", action="append", default=[], metavar="TOPIC[:CHANNEL]",
                   help=f"mirror {ros} topic TOPIC into a channel (default name: the topic "
                        f"with '/' as '.')")
    p.add_argument("--latch", action="store_true", help=latch_help)
    p.add_argument("--slots", type=size, default=0,
                   help=f"index slots of channels created from {ros} topics (default: from "
                        f"the first message's size)")
    p.add_argument("--size", type=size, default=0, metavar="BYTES",
                   help=f"data ring bytes of channels created from {ros} topics (default: at "
                        f"least 16 messages, at least 1 MiB, within --max-channel-size)")


def split_spec(spec: str) -> Tuple[str, str]:
    """A ``--to-ros``/``--from-ros`` value: ``"a:b"`` -> ("a", "b");
    ``"a"`` -> ("a", "")."""
    left, _, right = spec.partition(":")
    return left, right


def add_patterns(p: argparse.ArgumentParser, default: str) -> None:
    """The channels a tool looks at: names or globs (``args.patterns``,
    matched by :func:`nerve_tools._common.select`); ``default`` says which
    channels none means."""
    p.add_argument("patterns", nargs="*", metavar="NAME",
                   help=f"channel names or globs, quoted ('cam*') (default: {default})")


def add_json(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("--json", action="store_true", help=help)


def add_quiet(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("-q", "--quiet", action="store_true", help=help)


def add_count(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("-n", "--count", type=int, metavar="N", help=help)


def add_timeout(p: argparse.ArgumentParser, help: str, default: object = None) -> None:
    p.add_argument("--timeout", type=float, default=default, metavar="SEC", help=help)
