"""Files a local user can place in /dev/shm and metadata that is not UTF-8:
the binding raises nerve.Error subclasses (never a hang, never a nanobind
conversion error), lists such entries with their error and keeps working
for the others."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest

import nerve

SHM = Path("/dev/shm")
TYPE_OFFSET = 4096  # the metadata region (docs/design/0001-shm-layout.md)


@pytest.fixture(autouse=True)
def watchdog() -> Iterator[None]:
    """A regression that blocks (an open of a FIFO) fails instead of hanging."""

    def expired(signum: int, frame: object) -> None:
        raise AssertionError("watchdog: a call blocked")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.fixture
def fifo(name: Callable[[str], str]) -> Iterator[str]:
    n = name("fifo")
    path = SHM / f"nerve.{n}"
    os.mkfifo(path)
    yield n
    path.unlink(missing_ok=True)


def plant_latin1_type(n: str) -> None:
    """A channel whose type bytes are not UTF-8, as an old version or a
    hostile user could leave: made valid, then patched in the file."""
    nerve.create(n, slots=8, size=4096, type="cafe/Imu", encoding="json").close()
    with open(SHM / f"nerve.{n}", "r+b") as f:
        f.seek(TYPE_OFFSET + 3)
        f.write(b"\xe9")


def test_fifo_is_not_a_channel(fifo: str) -> None:
    with pytest.raises(nerve.NotAChannel):
        nerve.open(fifo)
    with pytest.raises(nerve.NotAChannel):
        nerve.open(fifo, write=True)
    with pytest.raises(nerve.NotAChannel):
        nerve._nerve.stat(fifo)
    with pytest.raises(nerve.NotAChannel, match="not a regular file"):
        nerve.check(fifo)
    with pytest.raises(nerve.NotAChannel):
        nerve.create(fifo, slots=8, size=4096, exist_ok=True)
    with pytest.raises(nerve.NotAChannel):
        nerve.unlink(fifo)
    assert (SHM / f"nerve.{fifo}").exists()  # not removed
    listed = {i.name: i for i in nerve.list_channels()}
    assert listed[fifo].error is not None and "not a nerve channel" in listed[fifo].error


def test_non_utf8_metadata_is_refused_and_reported(name: Callable[[str], str]) -> None:
    n = name("meta")
    # Refused at create, with nerve's error (also a ValueError).
    with pytest.raises(nerve.InvalidArgument):
        nerve.create(n, type="caf\udce9")  # a lone surrogate: not UTF-8
    with pytest.raises(nerve.InvalidArgument):
        nerve.create(n, encoding="a\x00b")  # a NUL would cut it short
    assert not (SHM / f"nerve.{n}").exists()
    # Valid UTF-8 and a binary schema round-trip; the schema is bytes.
    with nerve.create(n, slots=8, size=4096, type="café/Ω", schema=b"\xff\xfe\x80") as ch:
        assert ch.metadata.type == "café/Ω"
        assert ch.metadata.schema == b"\xff\xfe\x80"
    nerve.unlink(n)
    # A file whose type is not UTF-8: CorruptChannel naming the field.
    plant_latin1_type(n)
    with pytest.raises(nerve.CorruptChannel):
        nerve.open(n)
    with pytest.raises(nerve.CorruptChannel):
        nerve._nerve.stat(n)
    with pytest.raises(nerve.CorruptChannel, match="type is not valid UTF-8"):
        nerve.check(n)
    listed = {i.name: i for i in nerve.list_channels()}
    assert listed[n].error is not None


def test_check_returns_the_verdict(name: Callable[[str], str]) -> None:
    n = name("verdict")
    nerve.create(n, slots=8, size=4096).close()
    assert nerve.check(n) == "ok; writer lock: free"
    (SHM / f"nerve-bell.{n}").unlink()
    with nerve.open(n) as ch:
        assert "no bell file" in ch.check()


def test_errno_codes_keep_their_errno() -> None:
    exc = nerve._errors._make(-errno.EIO, "Input/output error", "x")
    assert isinstance(exc, nerve.SystemCallFailed) and isinstance(exc, OSError)
    assert exc.errno == errno.EIO and exc.code == -errno.EIO and exc.code_name == "EIO"
    assert issubclass(nerve.TooManyOpenFiles, OSError)
    assert nerve.TooManyOpenFiles.code == -errno.EMFILE


def test_too_many_open_files_is_not_out_of_memory(name: Callable[[str], str]) -> None:
    n = name("fds")
    nerve.create(n, slots=8, size=4096).close()
    # In a child: the descriptor limit is lowered until an open fails.
    code = (
        "import os, resource, nerve\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))\n"
        "fds = []\n"
        "try:\n"
        "    while True: fds.append(os.dup(0))\n"
        "except OSError: pass\n"
        "try:\n"
        f"    nerve.open({n!r})\n"
        "except nerve.TooManyOpenFiles as e:\n"
        "    print('EMFILE', e.errno)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["EMFILE", str(errno.EMFILE)]
