"""`nerve ros1` through the bridge engines' conformance table
(tests/bridge/engine_cases.txt) against raw-socket ROS 1 peers
(ros1_fake.py, test_ros1_hostile.py's helpers) on the session's roscore:
one bridge serves every case of the module; its far-side names are the
kernel's topics of the channels. Every wait is bounded; channels are
removed."""

from __future__ import annotations

import re
import sys
import threading
from contextlib import closing
from pathlib import Path
from typing import Iterator, List

import pytest
from ros1_fake import string_msg
from test_ros1_hostile import Peers, from_ros_works, head, slave_uri, string_channel, to_ros_works, wait_for

import nerve
from nerve.testing import unique_names

from conftest import PREFIX, Proc, Roscore, start_bridge

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bridge"))
import conformance  # noqa: E402

ENGINE = "ros1"


class World(conformance.Basics):
    """The bridge (--to-ros BASE.x*, --from-ros of the echo, too-long and
    big topics, --max-channel-size 2M), the channel made before it
    started, and the fake ROS peers."""

    def __init__(self, ros: Roscore, names) -> None:
        self.names, self.peers = names, Peers(ros)
        self.base = names("conf")
        self.x = f"{self.base}.x"
        self.early, self.echo = self.made("before"), self.made("echo")
        self.long = f"/{self.base.replace('-', '_')}/{'y' * 200}"
        self.big = f"{self.base}.big"
        names.made.append(self.big)
        self.br = start_bridge(lambda *a: Proc(list(a), ros.env), ros,
                               "--to-ros", f"{self.x}*", "--max-channel-size", "2M",
                               "--from-ros", f"{self.far(self.echo)}:{self.echo}",
                               "--from-ros", self.long,
                               "--from-ros", f"{self.far(self.big)}:{self.big}")

    @staticmethod
    def far(ch: str) -> str:
        return conformance.far_name(ENGINE, ch)

    def made(self, tag: str, exported: bool = True) -> str:
        """A String channel under the export glob (or not), made now."""
        n = f"{self.x if exported else self.x[:-1] + 'n'}.{tag}"
        self.names.made.append(n)
        string_channel(n).close()
        return n

    def reaches(self, ch: str) -> None:
        """``ch`` is published as its far name and a payload reaches a
        ROS subscriber."""
        self.br.wait_line(rf"to-ros {re.escape(ch)} -> {re.escape(self.far(ch))} ", 60)
        to_ros_works(self.br, self.peers, ch)

    def unmatched(self) -> None:
        other = self.made("other", exported=False)
        self.reaches(self.made("marker"))
        assert not [ln for ln in self.br.lines if f"to-ros {other}" in ln], self.br.output

    def refused_name(self) -> None:
        line = self.br.wait_line(rf"error: {re.escape(self.long[:60])}.*: no channel name for "
                                 r"it: ENAMETOOLONG: .* over 200 bytes", 60)
        assert self.echo not in line, line  # (it once named the topic before's channel)
        assert not list(Path("/dev/shm").glob(f"nerve.{self.base}.yyy*"))
        self.reaches(self.made("after-refused-name"))

    def no_echo(self) -> None:
        """A subscriber of the echo channel's topic, connected before the
        import: the first message it gets is the local one (an echo of
        the import would come first, the exporter going in order)."""
        self.br.wait_line(rf"to-ros {re.escape(self.echo)} -> ", 60)
        sub = self.peers.sub(slave_uri(self.br), self.far(self.echo), 30)
        from_ros_works(self.br, self.peers, self.far(self.echo), self.echo)
        got: List[bytes] = []
        t = threading.Thread(target=lambda: got.append(sub.recv(60)), daemon=True)
        t.start()
        with nerve.open(self.echo, write=True) as w:
            w.put(string_msg("local"))
        t.join(60)
        assert got == [string_msg("local")], got

    def over_budget(self) -> None:
        p = self.peers.pub(self.far(self.big), caller="/conformance_big")
        wait_for(lambda: p.connected() > 0, 60, "the bridge to connect")
        p.send(bytes(3 << 20))  # over the 2 MiB bound: refused unread
        self.br.wait_line(r"error: .*a 3145728-byte message \(over --max-channel-size 2097152\)",
                          60)
        assert head(self.big) == 0
        self.reaches(self.made("after-over-budget"))

    def close(self) -> None:
        self.peers.close()
        assert self.br.stop() == 0, self.br.output  # it kept running through every case


@pytest.fixture(scope="module")
def world(ros: Roscore) -> Iterator[World]:
    with unique_names(PREFIX) as names, closing(World(ros, names)) as w:
        yield w


test_conformance = conformance.test_of(ENGINE)
