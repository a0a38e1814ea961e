"""Fixtures shared by the pytest files of tests/cli (test_toolbox.py,
test_escapes.py; make test-toolbox). test_cli.py and test_bench.py are
plain scripts run by ctest and do not use them."""

from __future__ import annotations

import subprocess
from typing import Callable, Iterator, List

import pytest

import nerve.testing


@pytest.fixture
def name() -> Iterator[Callable[[str], str]]:
    """Factory of unique channel names; removes the channels at teardown."""
    with nerve.testing.unique_names(nerve.testing.PREFIX) as make:
        yield make


@pytest.fixture
def procs() -> Iterator[List[subprocess.Popen]]:
    """Processes a test starts; those still running are killed at teardown."""
    ps: List[subprocess.Popen] = []
    yield ps
    for p in ps:
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=10)
