"""`nerve bridge` (the Rust data path, nerve-bridge-rs, and the Python one)
against a bare Zenoh peer on 127.0.0.1 (no network namespaces): what a peer says reaches
the bridge's stderr escaped (issue 41, item 3), and the channels made for
a peer go when it leaves, returning the import budget (item 7)."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from nerve_tools.bridge import cli
from nerve_tools.bridge.wire import Description, SessionOptions, live_key, meta_key, open_session

from conftest import tool


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PeerBridge:
    """A bridge of the given data path ("rust": nerve-bridge-rs; "python":
    nerve-bridge with NERVE_BRIDGE_DATA_PATH=python) listening on
    127.0.0.1, its stderr kept as bytes."""

    def __init__(self, path: str, *args: str, env: Optional[Dict[str, str]] = None) -> None:
        if path == "rust":
            exe = cli.rust_binary()
            if exe is None:
                pytest.skip("nerve-bridge-rs is not installed (make rust-bridge-install)")
        else:
            exe = tool("bridge")
            env = dict(env or {}, NERVE_BRIDGE_DATA_PATH="python")
        self.port = _free_port()
        self.domain = 4100 + os.getpid() % 1000
        self.p = subprocess.Popen([exe, "--listen", f"tcp/127.0.0.1:{self.port}",
                                   "--domain", str(self.domain), *args],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  env=dict(os.environ, **(env or {})))
        self.err: List[bytes] = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()
        self.wait(b"ready: ", 30)

    def _read(self) -> None:
        for line in self.p.stderr:
            self.err.append(line)

    def wait(self, what: bytes, timeout: float) -> bytes:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for ln in list(self.err):
                if what in ln:
                    return ln
            if self.p.poll() is not None and not self._t.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"no line with {what!r} in {timeout} s: {b''.join(self.err)!r}")

    def stop(self) -> bytes:
        if self.p.poll() is None:
            self.p.terminate()
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait(30)
        self._t.join(10)
        return b"".join(self.err)


@pytest.mark.parametrize("path", ["rust", "python"])
def test_peer_ids_and_channel_names_are_escaped(path: str) -> None:
    """A peer whose liveliness tokens hold escape sequences in its id and
    channel name: the bridge's lines about it ("exports", "left") show
    them escaped; no ESC or BEL byte reaches stderr."""
    br = PeerBridge(path, "--import", "*")
    try:
        peer = open_session(SessionOptions(connect=[f"tcp/127.0.0.1:{br.port}"]))
        try:
            host, name = "evil\x1b[2J", "chan\x1b]0;owned\x07"
            tok = peer.liveliness().declare_token(f"nerve/{br.domain}/live/{host}/{name}")
            line = br.wait(b" exports ", 30)
            assert b"evil\\u001b[2J exports chan\\u001b]0;owned\\u0007" in line, line
            tok.undeclare()
            br.wait(b" left: ", 30)
        finally:
            peer.close()
    finally:
        err = br.stop()
    assert b"\x1b" not in err and b"\x07" not in err, err


def _until(cond, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("path", ["rust", "python"])
def test_channels_made_for_a_peer_go_when_it_leaves(path: str) -> None:
    """A peer exports a 2 MiB channel; the bridge (import budget 3M) makes
    it. The peer leaves: after the grace period the channel's file goes
    and its bytes return to the budget, so the peer's next 2 MiB channel
    is made too (before, the files stayed and the budget stayed spent)."""
    base = f"nt-doors-{os.getpid()}"
    names = [f"{base}.a", f"{base}.b"]
    br = PeerBridge(path, "--import", "*", "--max-import-total", "3M",
                    env={"NERVE_IMPORT_GRACE": "0.5"})
    try:
        peer = open_session(SessionOptions(connect=[f"tcp/127.0.0.1:{br.port}"]))
        try:
            for i, name in enumerate(names):
                key = meta_key(br.domain, "peer1", name)
                desc = Description(host="peer1", name=name, slots=8, data_size=2 << 20,
                                   type=None, encoding="raw", schema=None)
                q = peer.declare_queryable(key, lambda query, k=key, d=desc:
                                           query.reply(k, d.to_json()))
                tok = peer.liveliness().declare_token(live_key(br.domain, "peer1", name))
                path = Path(f"/dev/shm/nerve.{name}")
                assert _until(path.exists), b"".join(br.err)
                if i == 0:
                    tok.undeclare()
                    q.undeclare()
                    line = br.wait(b"removed the channel made for it", 30)
                    assert b"MiB returned to the import budget" in line, line
                    assert not path.exists()
        finally:
            peer.close()
    finally:
        err = br.stop()
        for name in names:
            try:
                os.unlink(f"/dev/shm/nerve.{name}")
                os.unlink(f"/dev/shm/nerve-bell.{name}")
            except FileNotFoundError:
                pass
    assert b"refused" not in err, err
