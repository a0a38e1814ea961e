"""`nerve bridge` (its data path, nerve-bridge-rs) through the bridge
engines' conformance table (tests/bridge/engine_cases.txt) against a bare
Zenoh peer on 127.0.0.1 (test_bridge_engine.py's helpers): one bridge
serves every case of the module; its far-side names are the channel names
(Zenoh keys carry them). Every wait is bounded; channels are removed."""

from __future__ import annotations

import os
import sys
import time
from array import array
from contextlib import closing
from pathlib import Path
from typing import Iterator

import pytest
from test_bridge_engine import announce, exported, subscribed

import nerve
from nerve.testing import unique_names
from nerve_tools.bridge.wire import Description, live_key, pack_table

from bridgeproc import PeerBridge, until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bridge"))
import conformance  # noqa: E402

ENGINE = "zenoh"
SMALL = dict(slots=16, size=1 << 16)


class World(conformance.Basics):
    """The bridge (--export BASE.x*, --import there/BASE.*,
    --max-channel-size 1M), the channel made before it started, and a
    bare Zenoh peer."""

    def __init__(self, names) -> None:
        self.names = names
        self.base = names("conf")
        self.x = f"{self.base}.x"
        self.early = self.made("before")
        self.br = PeerBridge("--export", f"{self.x}*", "--import", f"there/{self.base}.*",
                             "--max-channel-size", "1M")
        self.peer = self.br.peer()

    def made(self, tag: str, exported: bool = True) -> str:
        """A channel under the export glob (or not), made now."""
        n = f"{self.x if exported else self.x[:-1] + 'n'}.{tag}"
        self.names.made.append(n)
        nerve.create(n, **SMALL).close()
        return n

    def reaches(self, ch: str) -> None:
        """``ch`` is announced under its far name and a payload written now
        arrives there."""
        far = conformance.far_name(ENGINE, ch)
        rec = exported(self.peer, self.br, far)
        first = len(rec.samples)
        with nerve.open(ch, write=True) as w:
            w.put(f"payload of {ch}".encode())
        assert until(lambda: any(d == f"payload of {ch}".encode()
                                 for _s, _t, d, _i in rec.messages(first)), 60)
        rec.sub.undeclare()

    def announced(self, ch: str) -> bool:
        return bool(list(self.peer.liveliness().get(live_key(self.br.domain, self.br.ident, ch),
                                                    timeout=2.0)))

    def describe(self, name: str, data_size: int = 1 << 16) -> dict:
        desc = Description(host="there", name=name, slots=16, data_size=data_size, type=None,
                           encoding=None, schema=None, epoch=7)
        return announce(self.peer, self.br, "there", desc)

    def unmatched(self) -> None:
        other = self.made("other", exported=False)
        self.reaches(self.made("marker"))
        assert not self.announced(other), f"{other} exported"

    def refused_name(self) -> None:
        long = f"{self.base}.{'y' * 200}"
        there = self.describe(long)
        line = self.br.wait(b"from there: bad description (bad channel name", 60)
        assert long.encode() in line, line
        assert not os.path.exists(f"/dev/shm/nerve.{long}")
        self.reaches(self.made("after-refused-name"))
        for x in there.values():
            x.undeclare()

    def no_echo(self) -> None:
        ch = self.made("echo")
        rec = exported(self.peer, self.br, ch)
        first = len(rec.samples)
        there = self.describe(ch)
        assert until(lambda: subscribed(there["pub"]), 60), "the bridge did not subscribe"
        now = time.time_ns()
        there["pub"].put(b"abcdef", attachment=pack_table(array("q", [1, now, 6]), 7))
        self.br.stats(lambda st: st["import"].get(f"there/{ch}", {}).get("forwarded") == 1, 60)
        with nerve.open(ch, write=True) as w:
            w.put(b"local")
        assert until(lambda: rec.messages(first), 60), "the local message was not exported"
        self.br.stats(lambda st: st["export"][ch]["looped"] == 1, 60)
        assert [d for _s, _t, d, _i in rec.messages(first)] == [b"local"]
        for x in there.values():
            x.undeclare()
        rec.sub.undeclare()

    def over_budget(self) -> None:
        big = f"{self.base}.big"
        self.names.made.append(big)
        there = self.describe(big, data_size=4 << 20)
        line = self.br.wait(b"big: not imported from there: refused", 60)
        assert b"over --max-channel-size (1 MiB)" in line, line
        assert not os.path.exists(f"/dev/shm/nerve.{big}")
        self.reaches(self.made("after-over-budget"))
        for x in there.values():
            x.undeclare()

    def close(self) -> None:
        self.peer.close()
        self.br.stop()  # exit status 0: the bridge kept running through every case


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with unique_names() as names, closing(World(names)) as w:
        yield w


test_conformance = conformance.test_of(ENGINE)


def test_table_is_checked(tmp_path: Path) -> None:
    """A case without a line for an engine, a second line for one, and a
    skip without a reason are refused, naming the place."""
    head = "case a text\nengine e channel t.py\n"
    for body, want in (("", "no run or skip line for: a e"),
                       ("a e run\na e run\n", "t.txt:4: a second line for a e"),
                       ("a e skip\n", "t.txt:3: want 'run', or 'skip' and a reason")):
        (tmp_path / "t.txt").write_text(head + body)
        with pytest.raises(ValueError, match=want):
            conformance.Table(tmp_path / "t.txt")
