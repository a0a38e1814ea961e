"""`nerve ros2` (its data path nerve-ros2-dds, on Cyclone DDS) through the
bridge engines' conformance table (tests/bridge/engine_cases.txt) against
cyclone_peer, a ROS 2 node on Cyclone DDS's C API (it checks the String
messages it takes: message i is "hello i" and as many '!' as i % 4). One
bridge serves every case of the module but no_echo (see there); its
far-side names are the kernel's topics of the channels. Every wait is
bounded; channels are removed."""

from __future__ import annotations

import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Iterator

import pytest
from test_ros2_rclpy import KINDS, STORE, read_all

import nerve
from nerve.testing import unique_names

from conftest import PREFIX, Ros2Env, need_dds, peer_path, to_ros_matched

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bridge"))
import conformance  # noqa: E402

ENGINE = "ros2"
STRING = KINDS["String"]


def hello(i: int) -> bytes:
    """cyclone_peer's String message i, as little-endian CDR."""
    s = f"hello {i}{'!' * (i % 4)}".encode() + b"\0"
    return b"\0\1\0\0" + len(s).to_bytes(4, "little") + s


class World(conformance.Basics):
    """The bridge (--to-ros BASE.x*; --to-ros BASE.l* under a 500-byte
    prefix; --from-ros of the big topic; --max-channel-size 2M) and the
    channel made before it started."""

    def __init__(self, r2: Ros2Env, names) -> None:
        self.r2, self.names = r2, names
        self.base = names("conf")
        self.x = f"{self.base}.x"
        self.early = self.made("before")
        self.big = f"{self.base}.big"
        names.made.append(self.big)
        self.long = f"{self.base}.l.long"  # under a prefix that makes its topic too long
        names.made.append(self.long)
        self.br = r2.bridge(f"--to-ros={self.x}*", f"--to-ros={self.base}.l*:/{'p' * 499}",
                            f"--from-ros={self.far(self.big)}:{self.big}",
                            "--max-channel-size=2M")

    @staticmethod
    def far(ch: str) -> str:
        return conformance.far_name(ENGINE, ch)

    def made(self, tag: str, exported: bool = True) -> str:
        """A String channel under the export glob (or not), made now."""
        n = f"{self.x if exported else self.x[:-1] + 'n'}.{tag}"
        self.names.made.append(n)
        nerve.create(n, slots=32, size=1 << 16, type=STRING, encoding="cdr",
                     schema=STORE.generate_msgdef(STRING, ros_version=2)[0]).close()
        return n

    def sub(self, ch: str, n: int):
        """A cyclone_peer subscriber of ``ch``'s far name, matched with the
        bridge's writer."""
        self.br.wait_line(f"to-ros {ch} -> {self.far(ch)} ", 60)
        sub = self.r2.peer("cyclone", "sub", "String", self.far(ch), str(n))
        sub.wait_line("^READY$", 120)
        to_ros_matched(self.br, [ch])
        return sub

    def reaches(self, ch: str) -> None:
        sub = self.sub(ch, 1)
        with nerve.open(ch, write=True) as w:
            w.put(hello(0))
        assert sub.json(120) == {"n": 1, "bad": 0, "idx": [0]}

    def unmatched(self) -> None:
        other = self.made("other", exported=False)
        self.reaches(self.made("marker"))
        assert not [ln for ln in self.br.lines if f"to-ros {other}" in ln], self.br.output

    def refused_name(self) -> None:
        nerve.create(self.long, slots=8, size=1 << 12, type=STRING, encoding="cdr").close()
        self.br.wait_line(rf"error: to-ros {self.long}: its topic would be over 511 bytes; "
                          "not published", 60)
        self.reaches(self.made("after-refused-name"))

    def no_echo(self) -> None:
        """nerve ros2 counts what it skipped as its own only when it stops,
        and a far subscriber of the topic would get the publisher's message
        straight from it too: so this case has a bridge of its own, which
        imports a channel's topic into that channel and exports it. The
        import is not sent back ("1 own skipped"), a local message is (a
        subscriber made once the publisher is gone gets it)."""
        ch = f"{self.base}.e.echo"
        self.names.made.append(ch)
        nerve.create(ch, slots=32, size=1 << 16, type=STRING, encoding="cdr").close()
        t = self.far(ch)
        br = self.r2.bridge(f"--to-ros={ch}", f"--from-ros={t}:{ch}", "--node=conformance_echo")
        br.wait_line(f"to-ros {ch} -> {t} ", 60)
        pub = self.r2.peer("cyclone", "pub", "String", t, "1", gate=True)
        self.r2.open_gate(br, [t])
        assert pub.json(120)["matched"]
        deadline = time.monotonic() + 60
        while not read_all(ch):
            assert time.monotonic() < deadline, "no import in 60 s:\n" + br.output
            time.sleep(0.02)
        sub = self.r2.peer("cyclone", "sub", "String", t, "1")
        sub.wait_line("^READY$", 120)
        to_ros_matched(br, [ch])
        with nerve.open(ch, write=True) as w:
            w.put(hello(1))
        assert sub.json(120) == {"n": 1, "bad": 0, "idx": [1]}
        assert br.stop() == 0, br.output
        assert f"to-ros {ch} -> {t}: 1 sent, " in br.output, br.output
        assert ", 1 own skipped" in br.output, br.output

    def over_budget(self) -> None:
        pub = self.r2.peer("cyclone", "pub", "PointCloud2", self.far(self.big), "1", gate=True)
        self.r2.open_gate(self.br, [self.far(self.big)])
        self.br.wait_line(rf"error: from-ros {self.far(self.big)}: channel {self.big} of \d+ bytes "
                          r"refused \(--max-channel-size 2097152", 120)
        assert pub.json(120)["matched"]
        assert not Path(f"/dev/shm/nerve.{self.big}").exists()
        self.reaches(self.made("after-over-budget"))

    def close(self) -> None:
        rc = self.br.stop()
        self.r2.close()
        assert rc == 0, self.br.output  # it kept running through every case


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    need_dds()
    peer_path("cyclone_peer")
    with unique_names(PREFIX) as names:
        r2 = Ros2Env(tmp_path_factory.mktemp("conformance"))
        try:
            w = World(r2, names)
        except BaseException:
            r2.close()
            raise
        with closing(w):
            yield w


test_conformance = conformance.test_of(ENGINE)
