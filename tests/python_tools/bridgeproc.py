"""The bridge's data path, nerve-bridge-rs, as a process listening on
127.0.0.1, for the tests that speak to it as a bare Zenoh peer would
(test_bridge_engine.py, test_bridge_peer_doors.py): no network namespaces,
so they run without root. Its stderr is kept as bytes, its --stats lines
are read from stdout; every wait is bounded."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from typing import Callable, Dict, List, Optional

import pytest

from nerve_tools.bridge import cli
from nerve_tools.bridge.wire import BridgeError, SessionOptions, open_session


def rust_exe() -> str:
    """nerve-bridge-rs as `nerve bridge` finds it; the test is skipped,
    saying why and how to get it, where it is not installed."""
    try:
        return cli.rust_binary()
    except BridgeError as e:
        pytest.skip(str(e))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(cond: Callable[[], object], timeout: float = 30.0) -> bool:
    """Poll cond() until true, bounded: generous, for a loaded host."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


class PeerBridge:
    """nerve-bridge-rs listening on 127.0.0.1 (a domain of this process's
    own), started with ``args`` and ``--stats 0.2``; ready when it returns."""

    def __init__(self, *args: str, env: Optional[Dict[str, str]] = None) -> None:
        exe = rust_exe()
        self.port = free_port()
        self.domain = 4100 + os.getpid() % 1000
        self.p = subprocess.Popen([exe, "--listen", f"tcp/127.0.0.1:{self.port}",
                                   "--domain", str(self.domain), "--stats", "0.2", *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=dict(os.environ, **(env or {})))
        self.err: List[bytes] = []
        self.lines: List[Dict] = []
        self._threads = [threading.Thread(target=self._read_err, daemon=True),
                         threading.Thread(target=self._read_out, daemon=True)]
        for t in self._threads:
            t.start()
        ready = self.wait(b"ready: ", 30)
        self.ident = ready.split(b"ready: id ", 1)[1].split(b",", 1)[0].decode()

    def _read_err(self) -> None:
        for line in self.p.stderr:
            self.err.append(line)

    def _read_out(self) -> None:
        for line in self.p.stdout:
            self.lines.append(json.loads(line))

    def wait(self, what: bytes, timeout: float) -> bytes:
        """The first stderr line holding ``what`` (bounded wait)."""
        found: List[bytes] = []

        def seen() -> bool:
            found.extend(ln for ln in list(self.err) if what in ln)
            return bool(found) or (self.p.poll() is not None and not self._threads[0].is_alive())

        until(seen, timeout)
        assert found, f"no line with {what!r} in {timeout} s: {b''.join(self.err)!r}"
        return found[0]

    def stats(self, pred: Callable[[Dict], bool] = lambda st: True, timeout: float = 30.0) -> Dict:
        """The first --stats line printed from now on that satisfies pred."""
        n = len(self.lines)
        got: List[Dict] = []

        def ok() -> bool:
            got.extend(st for st in self.lines[n:] if pred(st))
            return bool(got)

        assert until(ok, timeout), f"no --stats line as wanted in {timeout} s: {self.lines[-1:]}"
        return got[0]

    def peer(self):
        """A bare Zenoh session connected to this bridge."""
        return open_session(SessionOptions(connect=[f"tcp/127.0.0.1:{self.port}"]))

    def stop(self) -> bytes:
        """SIGTERM, then the exit status must be 0; returns all of stderr."""
        if self.p.poll() is None:
            self.p.terminate()
        try:
            rc = self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait(30)
            rc = None
        for t in self._threads:
            t.join(10)
        err = b"".join(self.err)
        assert rc == 0, f"nerve-bridge-rs exited {rc}: {err!r}"
        return err
