"""Fixtures of the nerve ros2 tests: real ROS 2 nodes (rclpy of the Jazzy
and Kilted wheels on rmw_fastrtps_cpp, in .venv-jazzy / .venv-kilted, see
mk/ros2venv.mk) and the bridge (`nerve-ros2`, data path nerve-ros2-dds on
Cyclone DDS), all on loopback only.

Network. Every DDS participant is confined to 127.0.0.1 with multicast off
and unicast discovery to 127.0.0.1: Cyclone DDS through CYCLONEDDS_URI,
Fast DDS through an XML profile (FASTRTPS_DEFAULT_PROFILES_FILE) with a
loopback-only UDP transport, no built-in transports (no shared memory) and
127.0.0.1 as initial peer. Each test gets a ROS_DOMAIN_ID of its own, drawn
from the process id, so that concurrent runs and earlier tests do not see
each other.

Channel names are "nt-<pid>-r2-<tag>" (the shm_clean check recognises a
leftover; the session fails if one is left)."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional

import pytest

import nerve
import nerve.testing

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from chanfix import channel_fixtures, topic  # noqa: E402,F401
from dds_lo import CYCLONE_XML, FASTDDS_XML, FILTERS  # noqa: E402
from lineproc import Proc  # noqa: E402

PREFIX = nerve.testing.PREFIX + "r2"
ROOT = Path(__file__).resolve().parents[2]
PEER = str(Path(__file__).with_name("rclpy_peer.py"))
DISTROS = ("jazzy", "kilted")


_domains = itertools.count()
_BASE = os.getpid() % 97


def venv_python(distro: str) -> str:
    return str(ROOT / f".venv-{distro}" / "bin" / "python")


class Ros2Env:
    """One test's DDS world: a domain of its own, loopback-only configs,
    and the processes started in it (all stopped at teardown)."""

    def __init__(self, tmp: Path) -> None:
        self.domain = 1 + (_BASE * 2 + next(_domains)) % 230
        self.tmp = tmp
        (tmp / "cyclonedds.xml").write_text(CYCLONE_XML)
        self.env = dict(os.environ)
        for k in ("ROS_LOCALHOST_ONLY", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_STATIC_PEERS",
                  "ROS_NAMESPACE", "FASTDDS_DEFAULT_PROFILES_FILE", "PYTHONPATH"):
            self.env.pop(k, None)
        self.env.update(ROS_DOMAIN_ID=str(self.domain), RMW_IMPLEMENTATION="rmw_fastrtps_cpp",
                        CYCLONEDDS_URI="file://" + str(tmp / "cyclonedds.xml"),
                        ROS_LOG_DIR=str(tmp / "roslog"), ROS_HOME=str(tmp / "roshome"),
                        PYTHONUNBUFFERED="1")
        self.procs: List[Proc] = []
        self.gates = 0  # gate files opened (open_gate)

    def fastdds_env(self, distro: str) -> Dict[str, str]:
        xml = self.tmp / f"fastdds-{distro}.xml"
        if not xml.exists():
            xml.write_text(FASTDDS_XML.format(filter=FILTERS[distro]))
        env = dict(self.env)
        env["FASTRTPS_DEFAULT_PROFILES_FILE"] = str(xml)
        env["FASTDDS_DEFAULT_PROFILES_FILE"] = str(xml)
        return env

    def spawn(self, args: List[str], env: Optional[Dict[str, str]] = None) -> Proc:
        p = Proc(args, env or self.env)
        self.procs.append(p)
        return p

    def bridge(self, *args: str, ready: bool = True) -> Proc:
        exe = shutil.which("nerve-ros2") or str(Path(sys.executable).parent / "nerve-ros2")
        p = self.spawn([exe, *args])
        if ready:
            p.wait_line(r"on DDS domain \d+ \(Cyclone DDS\)", 30)
        return p

    def bridge_to_ros(self, channels: Iterable[str]) -> Proc:
        """The bridge publishing each of `channels` (--to-ros), once it
        says each route is up."""
        channels = list(channels)
        p = self.bridge(*[f"--to-ros={c}" for c in channels])
        for c in channels:
            p.wait_line(f"to-ros {c} -> ")
        return p

    def rclpy(self, distro: str, *args: str, gate: bool = False) -> Proc:
        """rclpy_peer.py; with `gate`, a publisher waits for open_gate()."""
        py = venv_python(distro)
        return self.spawn([py, PEER, *args], self.gated(self.fastdds_env(distro), gate))

    def gated(self, env: Dict[str, str], gate: bool) -> Dict[str, str]:
        """`env` with NERVE_PEER_GO naming the file the next open_gate()
        creates, when `gate`."""
        if not gate:
            return env
        return dict(env, NERVE_PEER_GO=str(self.tmp / f"go{self.gates}"))

    def open_gate(self, br: Proc, topics: Iterable[str], n: int = 1) -> None:
        """Let the gated publishers write, once the bridge's reader of each
        of `topics` has matched `n` writers: a reliable volatile reader
        gets only what is written after that (the publishers' own READY
        says only that their writers matched the bridge's readers)."""
        for t in topics:
            wait_matched(br, f"from-ros {t}", n)
        (self.tmp / f"go{self.gates}").touch()
        self.gates += 1

    def rclpy_run(self, distro: str, *args: str, timeout: float = 60.0) -> dict:
        return self.rclpy(distro, *args).json(timeout)

    def peer(self, which: str, *args: str, gate: bool = False) -> Proc:
        """cyclone_peer or fastdds_peer (tests/ros2, built by CMake into
        $NERVE_ROS2_BIN); Fast DDS 2.9 takes the Jazzy-style profile. With
        `gate`, a publisher waits for open_gate()."""
        exe = peer_path(f"{which}_peer")
        env = self.env if which == "cyclone" else self.fastdds_env("jazzy")
        return self.spawn([exe, *args], self.gated(env, gate))

    def close(self) -> None:
        for p in reversed(self.procs):
            p.stop(5)


def wait_matched(br: Proc, what: str, n: int = 1, timeout: float = 90.0) -> None:
    """Wait until the bridge's last "WHAT matched K reader(s)" (or
    writer(s)) line says K >= n: nerve-ros2-dds prints one each time the
    DDS endpoints matched with its writer of channel C ("to-ros C") or its
    reader of topic T ("from-ros T") change. A reliable volatile endpoint
    gets only what is written after it matched; a test puts after this."""
    rx = re.compile(rf"{re.escape(what)} matched (\d+) (?:reader|writer)\(s\)$")
    end = time.monotonic() + timeout
    while True:
        counts = [int(m.group(1)) for m in map(rx.search, list(br.lines)) if m]
        if counts and counts[-1] >= n:
            return
        if time.monotonic() >= end or br.p.poll() is not None:
            raise AssertionError(f"the bridge never said '{what} matched {n}' in {timeout} s "
                                 f"(exit status {br.p.poll()}):\n" + "\n".join(br.lines))
        time.sleep(0.05)


def to_ros_matched(br: Proc, channels: Iterable[str], n: int = 1) -> None:
    """Wait until the bridge's writer of each of `channels` matched `n`
    readers (see wait_matched)."""
    for c in channels:
        wait_matched(br, f"to-ros {c}", n)


def peer_path(name: str) -> str:
    d = os.environ.get("NERVE_ROS2_BIN") or str(ROOT / "build" / "tests" / "ros2")
    p = Path(d) / name
    if not p.exists():
        pytest.skip(f"{name} not built in {d} (needs cyclonedds-dev / libfastrtps-dev; "
                    f"see tests/ros2/CMakeLists.txt)")
    return str(p)


def need_distro(distro: str) -> None:
    if not os.access(venv_python(distro), os.X_OK):
        pytest.skip(f".venv-{distro} missing (make ros2-venvs creates it)")


def need_dds() -> None:
    if not (shutil.which("nerve-ros2-dds") or os.environ.get("NERVE_ROS2_DDS")):
        pytest.skip("nerve-ros2-dds not built (needs cyclonedds-dev; make deps installs it)")


@pytest.fixture
def r2(tmp_path: Path) -> Iterator[Ros2Env]:
    need_dds()
    e = Ros2Env(tmp_path)
    try:
        yield e
    finally:
        e.close()


no_leftovers, name = channel_fixtures(PREFIX)
