"""Helpers for tests of code that uses nerve channels.

Tests that share a machine (and its /dev/shm) need channel names nobody
else uses, and must remove what they made even when they fail::

    import nerve.testing

    with nerve.testing.unique_names() as name:
        with nerve.create(name("imu"), slots=16, size=1 << 16) as ch:
            ...
    # every channel made from name(...) is gone here

As a pytest plugin (``pytest_plugins = ["nerve.testing"]`` in a suite's
top conftest.py, or ``pytest -p nerve.testing``), this module gives every
test the fixture ``name`` (a :class:`Names` whose channels are removed at
teardown), fails the session when a channel of this process is left in
/dev/shm (and removes it), and undoes an inherited "ignore SIGINT" so that
programs the tests start can be stopped as Ctrl-C stops them.

Names are ``nt-<pid>-<n>-<tag>``; :func:`leftovers` lists the files of this
process's names still in /dev/shm, so a suite can fail when a test leaves
one behind.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import sys
from pathlib import Path
from typing import Any, Iterator, List

from . import _errors
from ._channel import unlink

__all__ = ["PREFIX", "Names", "unique_names", "leftovers"]  # and, for pytest: name

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


# ---- the pytest plugin -------------------------------------------------------

try:
    import pytest as _pytest
except ImportError:  # pragma: no cover - a program without pytest
    _pytest = None

if _pytest is not None:

    @_pytest.fixture
    def name() -> Iterator[Names]:
        """Factory of unique channel names; removes the channels at
        teardown."""
        with unique_names() as make:
            yield make

    def pytest_configure(config: Any) -> None:
        """A run started with SIGINT ignored (``nohup``, or ``cmd &`` in a
        shell without job control) hands SIG_IGN to every program a test
        starts, and a test that stops one with SIGINT, as Ctrl-C does, would
        wait in vain: give SIGINT Python's handler again, which a program
        started from here sees as the default action."""
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
        """Fail the session if a test left a channel of this process in
        /dev/shm (and remove it, so the machine stays clean)."""
        left = leftovers()
        if left:
            for p in left:
                p.unlink(missing_ok=True)
            print(f"\nFAIL: tests left channels in /dev/shm: {[p.name for p in left]}",
                  file=sys.stderr)
            session.exitstatus = 1
