"""Loans of C++ types through rcl, as rclcpp makes them (tests/rmw/rcl_loan_cpp.cpp,
built beside the library: rcl_loan_cpp, and kilted/rcl_loan_cpp for the Kilted run
of `make test-rmw`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from test_rmw_nerve import LIB

PROG = os.path.join(os.path.dirname(LIB), "rcl_loan_cpp")


def test_cpp_loans_through_rcl(domain):
    if not os.path.exists(PROG):
        pytest.skip(f"{PROG} was not built (rcl headers or libpython missing: see cmake's "
                    "rcl_loan_cpp line)")
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    env.pop("ROS_DISABLE_LOANED_MESSAGES", None)
    p = subprocess.run([sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB, "--",
                        PROG], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "passed 6 checks" in p.stdout, \
        f"exit {p.returncode}\n{p.stdout}\nstderr:\n{p.stderr}"
