"""`nerve bridge --ros2` (rmw_zenoh's protocol, bridge/rmw_zenoh.py)
through the bridge engines' conformance table
(tests/bridge/engine_cases.txt) against a bare Zenoh session on
test_ros2_zenoh.py's router, which subscribes to the bridge's topics and
announces publishers as rmw_zenoh does. One bridge serves every case of
the module; its far-side names are the kernel's topics of the channels.
Every wait is bounded; channels are removed."""

from __future__ import annotations

import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path
from typing import Iterator, List

import pytest
import zenoh
from test_ros2_zenoh import router  # noqa: F401 (the module's router fixture)

import nerve
from nerve.testing import unique_names
from nerve_tools.bridge import rmw_zenoh as r2

from bridgeproc import until
from conftest import start

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bridge"))
import conformance  # noqa: E402

ENGINE = "zenoh-ros2"
STRING = "std_msgs/msg/String"


class World(conformance.Basics):
    """The bridge (--export BASE.x*, --import BASE.*) and a Zenoh session
    on the router."""

    def __init__(self, port: int, names) -> None:
        self.names = names
        self.base = names("conf")
        self.x = f"{self.base}.x"
        self.early = self.made("before")
        self.hash = r2.Types().type_hash(STRING)
        self.p, _ = start("bridge", "--ros2", "--connect", f"tcp/127.0.0.1:{port}",
                          "--export", f"{self.x}*", "--import", f"{self.base}.*", ready="ready")
        self.lines: List[str] = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.p.stderr), daemon=True)
        self.reader.start()
        conf = zenoh.Config()
        conf.insert_json5("connect/endpoints", f'["tcp/127.0.0.1:{port}"]')
        conf.insert_json5("scouting/multicast/enabled", "false")
        self.peer = zenoh.open(conf)

    def made(self, tag: str, exported: bool = True) -> str:
        """A String channel under the export glob (or not), made now."""
        n = f"{self.x if exported else self.x[:-1] + 'n'}.{tag}"
        self.names.made.append(n)
        nerve.create(n, slots=16, size=1 << 16, type=STRING, encoding="cdr",
                     schema="string data").close()
        return n

    def said(self, text: str) -> str:
        """The bridge's first stderr line holding ``text`` (bounded wait)."""
        assert until(lambda: any(text in ln for ln in self.lines), 60), "".join(self.lines)
        return next(ln for ln in self.lines if text in ln)

    def reaches(self, ch: str) -> None:
        """``ch`` is exported as its far name and a payload written now
        arrives on that topic's key."""
        far = conformance.far_name(ENGINE, ch)
        self.said(f"exporting channel {ch} as ROS 2 topic {far} ")
        got: List[bytes] = []
        sub = self.peer.declare_subscriber(r2.data_key(0, far, STRING, self.hash),
                                           lambda s: got.append(s.payload.to_bytes()))
        payload = f"payload of {ch}".encode()
        with nerve.open(ch, write=True) as w:
            assert until(lambda: w.put(payload) and payload in got, 60), f"nothing of {ch} arrived"
        sub.undeclare()

    def unmatched(self) -> None:
        other = self.made("other", exported=False)
        self.reaches(self.made("marker"))
        assert not [ln for ln in self.lines if f"channel {other} " in ln], self.lines

    def refused_name(self) -> None:
        """A publisher of a topic whose channel would be over 200 bytes."""
        long = f"/{self.base}/{'y' * 200}"
        zid = str(self.peer.info.zid())
        tok = self.peer.liveliness().declare_token(
            r2.endpoint_token(0, zid, 0, 1, "MP", "talker", long, STRING, self.hash))
        line = self.said(f"topic {long} not imported: ")
        assert "200" in line, line
        self.reaches(self.made("after-refused-name"))
        tok.undeclare()

    def close(self) -> None:
        self.peer.close()
        self.p.terminate()
        try:
            rc = self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait(10)
        self.reader.join(10)
        self.p.stderr.close()
        self.p.stdout.close()
        assert rc == 0, f"exit status {rc}: " + "".join(self.lines)  # it ran through every case


@pytest.fixture(scope="module")
def world(router: int) -> Iterator[World]:  # noqa: F811
    with unique_names() as names, closing(World(router, names)) as w:
        yield w


test_conformance = conformance.test_of(ENGINE)
