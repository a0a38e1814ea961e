"""What the rmw_nerve tests share: the library and the wheels' Python they
run (NERVE_RMW_LIB and NERVE_ROS2_PYTHON, which `make test-rmw` sets), the
skips when those or `nerve ros2` are missing, a domain's clean-up, and
reading a node's lines and its closing JSON result."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import nerve

LIB = os.environ.get("NERVE_RMW_LIB", "")
PY = os.environ.get("NERVE_ROS2_PYTHON", "")


def need_rmw() -> None:
    """Skip the calling test module without the library and the wheels."""
    if not (LIB and Path(LIB).exists() and PY and Path(PY).exists()):
        pytest.skip("rmw_nerve tests need NERVE_RMW_LIB and NERVE_ROS2_PYTHON "
                    "(make test-rmw: the Jazzy wheels' venv and the built library)",
                    allow_module_level=True)


def need_bridge() -> str:
    """The path of `nerve ros2`'s nerve-ros2-dds; skips the calling module
    without it."""
    try:
        from nerve_tools.ros2 import cli as ros2
    except ImportError:
        ros2 = None
    native = ros2.find_native() if ros2 is not None else None
    if not native or not os.access(native, os.X_OK):
        pytest.skip("needs `nerve ros2` (nerve_tools.ros2) and its nerve-ros2-dds (Cyclone DDS)",
                    allow_module_level=True)
    return native


def drop_domain(d: int) -> None:
    """Removes every channel of ROS domain d: topics, services, graphs."""
    for info in nerve.list_channels():
        if info.name.startswith((f"ros2-d{d}.", f"ros2-graph-d{d}.")):
            try:
                nerve.unlink(info.name)
            except nerve.Error:
                pass


def expect(p: subprocess.Popen, what: str) -> str:
    """The next line of p, which must contain `what` (else p is killed and
    its output is the failure's message)."""
    line = p.stdout.readline()
    if what not in line:
        p.kill()
        out, err = p.communicate(timeout=30)
        raise AssertionError(f"expected {what!r}, got {line!r}{out}\nstderr:\n{err}")
    return line


def result(p: subprocess.Popen, stdin: str = "") -> dict:
    """p's last JSON line once it ended with 0 ("_stderr": its stderr)."""
    out, err = p.communicate(stdin, timeout=120)
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    assert p.returncode == 0 and lines, f"exit {p.returncode}\n{out}\nstderr:\n{err}"
    d = json.loads(lines[-1])
    d["_stderr"] = err
    return d
