"""Helpers for tests of code that uses nerve channels.

Tests that share a machine (and its /dev/shm) need channel names nobody
else uses, and must remove what they made even when they fail::

    import nerve.testing

    with nerve.testing.unique_names() as name:
        with nerve.create(name("imu"), slots=16, size=1 << 16) as ch:
            ...
    # every channel made from name(...) is gone here

As a pytest fixture::

    @pytest.fixture
    def name():
        with nerve.testing.unique_names() as make:
            yield make

Names are ``nt-<pid>-<n>-<tag>``; :func:`leftovers` lists the files of this
process's names still in /dev/shm, so a suite can fail when a test leaves
one behind.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path
from typing import Iterator, List

from . import _errors
from ._channel import unlink

__all__ = ["PREFIX", "Names", "unique_names", "leftovers"]

SHM = Path("/dev/shm")
#: The prefix of every name this process makes.
PREFIX = f"nt-{os.getpid()}-"
_counter = itertools.count()


class Names:
    """A factory of unique channel names (call it with a tag) that removes
    the channels made under them with :meth:`remove`."""

    def __init__(self, prefix: str = PREFIX) -> None:
        self.prefix = prefix
        self.made: List[str] = []

    def __call__(self, tag: str = "c") -> str:
        n = f"{self.prefix}{next(_counter)}-{tag}"
        self.made.append(n)
        return n

    def remove(self) -> None:
        """Remove every channel made under these names that still exists.
        A file that is not a channel (a test planted or corrupted it on
        purpose) is removed directly, with its bell."""
        for n in self.made:
            try:
                unlink(n)
            except _errors.ChannelNotFound:
                pass
            except _errors.Error:
                for p in (SHM / f"nerve.{n}", SHM / f"nerve-bell.{n}"):
                    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                        p.unlink()
        self.made.clear()


@contextlib.contextmanager
def unique_names(prefix: str = PREFIX) -> Iterator[Names]:
    """A :class:`Names` whose channels are removed when the block ends."""
    names = Names(prefix)
    try:
        yield names
    finally:
        names.remove()


def leftovers(prefix: str = PREFIX) -> List[Path]:
    """The channel and bell files under ``prefix`` still in /dev/shm."""
    return sorted(SHM.glob(f"nerve*.{prefix}*"))
