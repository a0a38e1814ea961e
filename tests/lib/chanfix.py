"""The channel fixtures the ROS test suites share (tests/ros, tests/ros2):
unique channel names under a suite's prefix, removed at teardown, and a
session check that no channel of the prefix is left behind."""

from __future__ import annotations

from typing import Callable, Iterator, Tuple

import pytest

import nerve
import nerve.testing


def channel_fixtures(prefix: str) -> Tuple[Callable, Callable]:
    """The fixtures ``no_leftovers`` (session, autouse) and ``name`` for
    channels named under ``prefix``; assign both in a conftest."""

    @pytest.fixture(scope="session", autouse=True, name="no_leftovers")
    def no_leftovers() -> Iterator[None]:
        yield
        left = [i.name for i in nerve.list() if i.name.startswith(prefix)]
        for n in left:
            nerve.unlink(n)
        assert not left, f"tests left channels: {left}"

    @pytest.fixture(name="name")
    def name() -> Iterator[Callable[[str], str]]:
        """Factory of unique channel names; removes the channels at teardown."""
        with nerve.testing.unique_names(prefix) as make:
            yield make

    return no_leftovers, name


def topic(channel: str) -> str:
    """The ROS bridges' default topic of a channel."""
    return "/" + channel.replace(".", "/").replace("-", "_")
