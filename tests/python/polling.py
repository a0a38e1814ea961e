"""Bounded polling shared by the tests: a wait for another thread's or
process's state fails the test after POLL_LIMIT seconds instead of hanging."""

from __future__ import annotations

import time
from typing import Callable

import pytest

# Bound on every poll for another thread's or process's state.
POLL_LIMIT = 30.0


def poll(cond: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + POLL_LIMIT
    while not cond():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.005)
