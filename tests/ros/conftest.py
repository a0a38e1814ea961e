"""Fixtures of the ROS 1 tests: one real roscore for the session (on
127.0.0.1, a free port, ROS_HOME and ROS_LOG_DIR in a temporary directory,
always torn down), unique channel names removed afterwards, the bridge
(`nerve-ros1`) as a process whose stderr lines can be waited for, and the
C++ peer program (tests/ros/ros1_peer.cpp, found through NERVE_ROS_BIN).

Channel names are "nt-<pid>-rosN-<tag>" so that the shm_clean check of
the C tests recognises a leftover; the session fails if one is left."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import xmlrpc.client
from pathlib import Path
from typing import Callable, Iterator, List, Optional

import pytest

import nerve
import nerve.testing
from nerve_tools.ros1.bridge import master_proxy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
import lineproc  # noqa: E402
from chanfix import channel_fixtures, topic  # noqa: E402,F401

PREFIX = nerve.testing.PREFIX + "ros"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Roscore:
    """A roscore process on 127.0.0.1:port with its own ROS_HOME."""

    def __init__(self, home: Path) -> None:
        self.port = _free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.home = home
        self.env = dict(os.environ)
        for k in ("ROS_HOSTNAME", "ROS_NAMESPACE", "ROS_PACKAGE_PATH"):
            self.env.pop(k, None)
        self.env.update(ROS_MASTER_URI=self.uri, ROS_HOME=str(home), ROS_LOG_DIR=str(home / "log"),
                        ROS_IP="127.0.0.1", PYTHONUNBUFFERED="1")
        self.proc: Optional[subprocess.Popen] = None

    def online(self) -> bool:
        # Bounded: a master that is shutting down may accept and not answer.
        try:
            code, _, _ = master_proxy(self.uri, 2.0).getPid("/test")
            return code == 1
        except (OSError, xmlrpc.client.Error):
            return False

    def start(self, timeout: float = 30.0) -> None:
        log = open(self.home / f"roscore-{time.monotonic_ns()}.log", "w")
        self.proc = subprocess.Popen(["roscore", "-p", str(self.port)], env=self.env,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self.online():
            assert self.proc.poll() is None, f"roscore exited ({log.name})"
            assert time.monotonic() < deadline, "roscore did not come up in time"
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop roscore and its children (its own process group)."""
        if self.proc is None:
            return
        for sig, wait in ((signal.SIGINT, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # The master's port must be free again before a restart.
        deadline = time.monotonic() + 10
        while self.online() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.proc = None


@pytest.fixture(scope="session")
def ros(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Roscore]:
    if shutil.which("roscore") is None:
        pytest.skip("roscore not installed (apt-get install ros-core; make deps does it)")
    core = Roscore(tmp_path_factory.mktemp("ros_home"))
    core.start()
    try:
        yield core
    finally:
        core.stop()


no_leftovers, name = channel_fixtures(PREFIX)


def peer_path() -> str:
    d = os.environ.get("NERVE_ROS_BIN", "")
    p = Path(d) / "ros1_peer"
    if not d or not p.exists():
        pytest.skip(f"ros1_peer not built (NERVE_ROS_BIN={d!r}; needs roscpp, see tests/ros)")
    return str(p)


class Proc(lineproc.Proc):
    """tests/lib/lineproc.py's Proc; a line of the ROS 1 bridge comes
    within 60 s (a bound for a hung test: a process on a loaded host may be
    descheduled for seconds; a line that comes ends the wait at once)."""

    line_timeout = 60.0


@pytest.fixture
def spawn(ros: Roscore) -> Iterator[Callable[..., Proc]]:
    """spawn(*args) starts a process in the ROS environment; all are
    stopped at teardown."""
    procs: List[Proc] = []

    def start(*args: str) -> Proc:
        p = Proc(list(args), ros.env)
        procs.append(p)
        return p

    yield start
    for p in reversed(procs):
        p.stop(5)


@pytest.fixture
def bridge(spawn: Callable[..., Proc], ros: Roscore) -> Callable[..., Proc]:
    """bridge(*args) starts nerve-ros1 on the session's master and waits for
    its ready line."""

    def start(*args: str, ready: bool = True) -> Proc:
        return start_bridge(spawn, ros, *args, ready=ready)

    return start


def start_bridge(spawn: Callable[..., Proc], ros: Roscore, *args: str,
                 ready: bool = True) -> Proc:
    """nerve-ros1 on ``ros``'s master, started with ``spawn`` (the fixture,
    or Proc for a module's own bridge); waits for its ready line."""
    exe = shutil.which("nerve-ros1") or str(Path(sys.executable).parent / "nerve-ros1")
    p = spawn(exe, "--master", ros.uri, *args)
    if ready:
        p.wait_line(r"bridging as /nerve_ros1", 60)
    return p


@pytest.fixture
def peer(spawn: Callable[..., Proc]) -> Callable[..., Proc]:
    exe = peer_path()

    def start(*args: str) -> Proc:
        return spawn(exe, *args)

    return start
