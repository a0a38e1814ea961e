"""Loaned messages of rmw_nerve_cpp, through rcl in C (rclpy never loans):
tests/rmw/rcl_loan.c, built beside the library (rcl_loan, and kilted/rcl_loan
for the Kilted build), run under nerve-ros2-exec on a ROS domain of its own.

Needs NERVE_RMW_LIB and NERVE_ROS2_PYTHON as test_rmw_nerve.py does; the
program is looked for beside NERVE_RMW_LIB."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from rmwtest import LIB, PY, need_rmw

import nerve

need_rmw()

PROG = Path(LIB).parent / "rcl_loan"
RCL = Path(PY).parent.parent / "lib" / "librcl.so"


def test_loans_through_rcl(domain):
    if not PROG.exists():
        pytest.skip(f"{PROG} was not built (rcl headers or libpython missing: see cmake's "
                    "rcl_loan line)")
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    env.pop("ROS_DISABLE_LOANED_MESSAGES", None)
    # Made here, so that they outlive the program: rmw_nerve removes the
    # channels it made itself when their last user goes, never one a user
    # made (the fixture removes these).
    for topic in ("wire", "plain"):
        nerve.create(f"ros2-d{domain}.loan.{topic}", slots=10, size=65536,
                     type="geometry_msgs/msg/Vector3", encoding="cdr").close()
    p = subprocess.run([sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB,
                        "--rcl", str(RCL), "--", str(PROG)], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, f"exit {p.returncode}\n{p.stdout}\nstderr:\n{p.stderr}"
    assert json.loads(p.stdout.splitlines()[-1])["checks"] >= 25, p.stdout
    # The wire does not change with a loan: the newest message of /loan/wire
    # (a loaned publish) and of /loan/plain (rcl_publish) are the same CDR.
    want = b"\x00\x01\x00\x00" + struct.pack("<ddd", 1.5, -2.25, 1e300)
    got = {}
    for topic in ("wire", "plain"):
        with nerve.open(f"ros2-d{domain}.loan.{topic}") as ch:
            assert (ch.metadata.type, ch.metadata.encoding) == ("geometry_msgs/msg/Vector3",
                                                                "cdr")
            got[topic] = bytes(ch.get(newest=True).data)
    assert got["wire"] == got["plain"] == want
    # ... and nerve's tools read it as any other ROS 2 message.
    echo = subprocess.run([str(Path(sys.executable).parent / "nerve-echo"),
                           f"ros2-d{domain}.loan.wire", "--newest", "-n", "1", "--timeout", "20",
                           "--json"], capture_output=True, text=True, timeout=60)
    assert echo.returncode == 0, echo.stderr
    assert json.loads(echo.stdout.splitlines()[0])["value"] == {"x": 1.5, "y": -2.25, "z": 1e300}
