"""`nerve bridge` (its data path, nerve-bridge-rs) against a bare Zenoh
peer on 127.0.0.1 (no network namespaces): what a peer says reaches
the bridge's stderr escaped (issue 41, item 3), and the channels made for
a peer go when it leaves, returning the import budget (item 7)."""

from __future__ import annotations

import os
from pathlib import Path

from nerve_tools.bridge.wire import Description, live_key, meta_key

from bridgeproc import PeerBridge, until


def test_peer_ids_and_channel_names_are_escaped() -> None:
    """A peer whose liveliness tokens hold escape sequences in its id and
    channel name: the bridge's lines about it ("exports", "left") show
    them escaped; no ESC or BEL byte reaches stderr."""
    br = PeerBridge("--import", "*")
    try:
        peer = br.peer()
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


def test_channels_made_for_a_peer_go_when_it_leaves() -> None:
    """A peer exports a 2 MiB channel; the bridge (import budget 3M) makes
    it. The peer leaves: after the grace period the channel's file goes
    and its bytes return to the budget, so the peer's next 2 MiB channel
    is made too (before, the files stayed and the budget stayed spent)."""
    base = f"nt-doors-{os.getpid()}"
    names = [f"{base}.a", f"{base}.b"]
    br = PeerBridge("--import", "*", "--max-import-total", "3M",
                    env={"NERVE_IMPORT_GRACE": "0.5"})
    try:
        peer = br.peer()
        try:
            for i, name in enumerate(names):
                key = meta_key(br.domain, "peer1", name)
                desc = Description(host="peer1", name=name, slots=8, data_size=2 << 20,
                                   type=None, encoding="raw", schema=None)
                q = peer.declare_queryable(key, lambda query, k=key, d=desc:
                                           query.reply(k, d.to_json()))
                tok = peer.liveliness().declare_token(live_key(br.domain, "peer1", name))
                path = Path(f"/dev/shm/nerve.{name}")
                assert until(path.exists), b"".join(br.err)
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
