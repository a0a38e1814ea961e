"""A child process whose output lines a test can wait for, with a bound.

Shared by the bridge tests of tests/ros (ROS 1) and tests/ros2 (ROS 2),
which both start the bridge and peer programs in a session of their own
(start_new_session: a signal reaches the whole process group) and wait
for lines such as "to-ros CHANNEL -> ". Each conftest puts this folder on
sys.path and imports Proc from here."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
from typing import Dict, List


class Proc:
    """A process whose output lines are collected by a thread, so that a
    test can wait for a line with a bound."""

    line_timeout = 30.0  # default bound of wait_line, in seconds

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

    def wait_line(self, pattern: str, timeout: float = 0.0) -> str:
        """The first output line matching `pattern` (re.search), waiting
        at most `timeout` seconds (0: line_timeout); fails the test with
        the output so far when none comes or the process exits first."""
        timeout = timeout or self.line_timeout
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
        self._t.join(2)
        return "\n".join(self.lines)
