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
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

import pytest

import nerve
import nerve.testing

PREFIX = nerve.testing.PREFIX + "r2"
ROOT = Path(__file__).resolve().parents[2]
PEER = str(Path(__file__).with_name("rclpy_peer.py"))
DISTROS = ("jazzy", "kilted")

CYCLONE_XML = """<CycloneDDS><Domain id="any"><General>
<Interfaces><NetworkInterface address="127.0.0.1"/></Interfaces>
<AllowMulticast>false</AllowMulticast></General>
<Discovery><Peers><Peer address="127.0.0.1"/></Peers>
<ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>30</MaxAutoParticipantIndex>
</Discovery></Domain></CycloneDDS>
"""

# Fast DDS 2.14 (Jazzy) names the interface filter interfaceWhiteList;
# Fast DDS 3 (Kilted) replaced it with interfaces/allowlist. Both pin the
# locators to 127.0.0.1, which alone keeps multicast off.
FASTDDS_XML = """<?xml version="1.0" encoding="UTF-8" ?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <transport_descriptors>
    <transport_descriptor>
      <transport_id>udp_lo</transport_id>
      <type>UDPv4</type>
      {filter}
      <maxInitialPeersRange>30</maxInitialPeersRange>
    </transport_descriptor>
  </transport_descriptors>
  <participant profile_name="nerve_lo" is_default_profile="true">
    <rtps>
      <userTransports><transport_id>udp_lo</transport_id></userTransports>
      <useBuiltinTransports>false</useBuiltinTransports>
      <builtin>
        <metatrafficUnicastLocatorList>
          <locator><udpv4><address>127.0.0.1</address></udpv4></locator>
        </metatrafficUnicastLocatorList>
        <initialPeersList>
          <locator><udpv4><address>127.0.0.1</address></udpv4></locator>
        </initialPeersList>
      </builtin>
      <defaultUnicastLocatorList>
        <locator><udpv4><address>127.0.0.1</address></udpv4></locator>
      </defaultUnicastLocatorList>
    </rtps>
  </participant>
</profiles>
"""
FILTERS = {
    "jazzy": "<interfaceWhiteList><address>127.0.0.1</address></interfaceWhiteList>",
    "kilted": '<interfaces><allowlist><interface name="127.0.0.1"/></allowlist></interfaces>',
}

_domains = itertools.count()
_BASE = os.getpid() % 97


def venv_python(distro: str) -> str:
    return str(ROOT / f".venv-{distro}" / "bin" / "python")


class Proc:
    """A process whose output lines are collected by a thread, so that a
    test can wait for a line with a bound."""

    def __init__(self, args: List[str], env: Dict[str, str]) -> None:
        self.args = args
        self.p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, start_new_session=True)
        self.lines: List[str] = []
        self._q: "queue.Queue[str]" = queue.Queue()
        self._t = threading.Thread(target=self._pump, daemon=True)
        self._t.start()

    def _pump(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.lines.append(line.rstrip("\n"))
            self._q.put(line.rstrip("\n"))

    def wait_line(self, pattern: str, timeout: float = 30.0) -> str:
        rx = re.compile(pattern)
        for line in list(self.lines):
            if rx.search(line):
                return line
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line matching {pattern!r} from {self.args[:2]} in "
                                     f"{timeout} s; output:\n" + "\n".join(self.lines))
            try:
                line = self._q.get(timeout=min(left, 0.5))
            except queue.Empty:
                if self.p.poll() is not None and self._q.empty():
                    self._t.join(1)
                    if not any(rx.search(x) for x in self.lines):
                        raise AssertionError(f"{self.args[:2]} exited ({self.p.returncode}) "
                                             f"without {pattern!r}:\n" + "\n".join(self.lines)) from None
                continue
            if rx.search(line):
                return line

    def json(self, timeout: float = 60.0) -> dict:
        """The last line of output, as JSON, once the process ended."""
        self.wait(timeout)
        for line in reversed(self.lines):
            if line.startswith("{"):
                return json.loads(line)
        raise AssertionError(f"{self.args[:3]} printed no JSON:\n" + "\n".join(self.lines))

    def kill(self) -> None:
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait(10)
        self._t.join(5)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGINT, then SIGKILL after `timeout`; returns the exit status."""
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._t.join(5)
        return self.p.returncode

    def wait(self, timeout: float) -> int:
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop(1)
            raise AssertionError(f"{self.args[:3]} did not finish in {timeout} s:\n"
                                 + "\n".join(self.lines)) from None
        self._t.join(5)
        return rc

    @property
    def output(self) -> str:
        self._t.join(1)
        return "\n".join(self.lines)


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

    def rclpy(self, distro: str, *args: str) -> Proc:
        py = venv_python(distro)
        return self.spawn([py, PEER, *args], self.fastdds_env(distro))

    def rclpy_run(self, distro: str, *args: str, timeout: float = 60.0) -> dict:
        return self.rclpy(distro, *args).json(timeout)

    def peer(self, which: str, *args: str) -> Proc:
        """cyclone_peer or fastdds_peer (tests/ros2, built by CMake into
        $NERVE_ROS2_BIN); Fast DDS 2.9 takes the Jazzy-style profile."""
        exe = peer_path(f"{which}_peer")
        env = self.env if which == "cyclone" else self.fastdds_env("jazzy")
        return self.spawn([exe, *args], env)

    def close(self) -> None:
        for p in reversed(self.procs):
            p.stop(5)


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


@pytest.fixture
def r2(tmp_path: Path) -> Iterator[Ros2Env]:
    native = shutil.which("nerve-ros2-dds") or os.environ.get("NERVE_ROS2_DDS")
    if not native:
        pytest.skip("nerve-ros2-dds not built (needs cyclonedds-dev; make deps installs it)")
    e = Ros2Env(tmp_path)
    try:
        yield e
    finally:
        e.close()


@pytest.fixture(scope="session", autouse=True)
def no_leftovers() -> Iterator[None]:
    yield
    left = [i.name for i in nerve.list() if i.name.startswith(PREFIX)]
    for n in left:
        nerve.unlink(n)
    assert not left, f"tests left channels: {left}"


@pytest.fixture
def name() -> Iterator[Callable[[str], str]]:
    """Factory of unique channel names; removes the channels at teardown."""
    with nerve.testing.unique_names(PREFIX) as make:
        yield make


def topic(channel: str) -> str:
    """The bridge's default topic of a channel."""
    return "/" + channel.replace(".", "/").replace("-", "_")
