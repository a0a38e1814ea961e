"""Shared fixtures: unique channel names, cleanup, the `nerve` command.

The fixture `name` and the final check that fails the session if a channel
of this process is still in /dev/shm come from the plugin nerve.testing,
shared with tests/python_tools. Channel names start with "nt-<pid>-" so the
shm_clean check of the C tests (tests/shm_clean.sh) can see anything a
Python test leaves behind."""

from __future__ import annotations

import os
import shutil
import signal
from typing import Callable, Iterator

import pytest

import nerve

pytest_plugins = ["nerve.testing"]  # the fixture `name`, the leftovers check

# Several tests send SIGINT to a child Python and expect KeyboardInterrupt.
# A child inherits an *ignored* SIGINT across exec, and Python then installs
# no handler: that is the case whenever the test run itself was started in
# the background of a non-interactive shell (`cmd &`, nohup, some CI
# runners). Give SIGINT back its usual Python handler here, so children start
# with the default disposition whatever the parent run had.
signal.signal(signal.SIGINT, signal.default_int_handler)


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
