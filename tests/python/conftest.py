"""Shared fixtures: unique channel names, cleanup, the `nerve` command.

Channel names start with "nt-<pid>-" so the shm_clean check of the C tests
(tests/shm_clean.sh) can see anything a Python test leaves behind; every
fixture removes what its test created, and a final check fails the session
if a channel of this process is still in /dev/shm."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

import nerve
import nerve.testing

SHM = Path("/dev/shm")
PREFIX = nerve.testing.PREFIX


def _leftovers() -> List[Path]:
    return nerve.testing.leftovers(PREFIX)


@pytest.fixture
def name(request: pytest.FixtureRequest) -> Iterator[Callable[[str], str]]:
    """Factory of unique channel names; removes the channels at teardown."""
    with nerve.testing.unique_names(PREFIX) as make:
        yield make


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
