"""Shared fixtures: unique channel names, cleanup, the `nerve` command.

Channel names start with "nt-<pid>-" so the shm_clean check of the C tests
(tests/shm_clean.sh) can see anything a Python test leaves behind; every
fixture removes what its test created, and a final check fails the session
if a channel of this process is still in /dev/shm."""

from __future__ import annotations

import itertools
import os
import shutil
import sys
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

import nerve

SHM = Path("/dev/shm")
PREFIX = f"nt-{os.getpid()}-"
_counter = itertools.count()


def _leftovers() -> List[Path]:
    return sorted(p for p in SHM.glob(f"nerve*.{PREFIX}*"))


@pytest.fixture
def name(request: pytest.FixtureRequest) -> Iterator[Callable[[str], str]]:
    """Factory of unique channel names; removes the channels at teardown."""
    made: List[str] = []

    def make(tag: str = "c") -> str:
        n = f"{PREFIX}{next(_counter)}-{tag}"
        made.append(n)
        return n

    yield make
    for n in made:
        try:
            nerve.unlink(n)
        except nerve.ChannelNotFound:
            pass
        except nerve.Error:
            # Files the test corrupted on purpose: remove them directly.
            for p in (SHM / f"nerve.{n}", SHM / f"nerve-bell.{n}"):
                p.unlink(missing_ok=True)


@pytest.fixture
def chan(name: Callable[[str], str]) -> Iterator[nerve.Channel]:
    """A fresh writable channel of 16 slots and 64 KiB."""
    with nerve.create(name("chan"), slots=16, size=1 << 16) as ch:
        yield ch


@pytest.fixture
def nerve_cli() -> str:
    """Path of the `nerve` command (from NERVE_CLI, set by mk/python.mk)."""
    path = os.environ.get("NERVE_CLI") or shutil.which("nerve") or ""
    if not path or not os.access(path, os.X_OK):
        pytest.skip(f"the nerve command is not built (NERVE_CLI={path!r}); "
                    "run `make build` or set NERVE_CLI")
    return path


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    left = _leftovers()
    if left:
        for p in left:
            p.unlink(missing_ok=True)
        print(f"\nFAIL: tests left channels in /dev/shm: {[p.name for p in left]}",
              file=sys.stderr)
        session.exitstatus = 1
