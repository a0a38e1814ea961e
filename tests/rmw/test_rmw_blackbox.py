"""`nerve blackbox --ros2-service`: an rclpy client on rmw_nerve_cpp calls
the recorder's service; the incident file's trigger record says so.

The recorder serves the service from a helper process (rclpy under `nerve
ros2 exec`, nerve_tools/recording/blackbox_ros2.py) and reads a line per
call from it. Runs once per distro with make test-rmw (NERVE_ROS2_PYTHON)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mcap.reader import make_reader

import nerve

LIB = os.environ.get("NERVE_RMW_LIB", "")
PY = os.environ.get("NERVE_ROS2_PYTHON", "")

if not (LIB and Path(LIB).exists() and PY and Path(PY).exists()):
    pytest.skip("needs NERVE_RMW_LIB and NERVE_ROS2_PYTHON (make test-rmw)", allow_module_level=True)

CLIENT = r"""
import sys, rclpy
try:
    from std_srvs.srv import Trigger as Srv
except ImportError:
    from test_msgs.srv import Empty as Srv
rclpy.init()
node = rclpy.create_node('bb_client')
cli = node.create_client(Srv, sys.argv[1])
assert cli.wait_for_service(timeout_sec=60), 'no service'
fut = cli.call_async(Srv.Request())
rclpy.spin_until_future_complete(node, fut, timeout_sec=60)
assert fut.done(), 'no reply'
print('reply', fut.result(), flush=True)
"""


def test_ros2_service_triggers_an_incident(domain, tmp_path):
    tag = f"bb{random.randint(0, 1 << 30)}"
    data, trig = f"{tag}.data", f"{tag}.trigger"
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_LOG_DIR=str(tmp_path / "log"),
               NERVE_RMW_LIB=LIB, PYTHONUNBUFFERED="1")
    exe = shutil.which("nerve-blackbox") or str(Path(sys.executable).parent / "nerve-blackbox")
    ch = nerve.create(data, slots=64, size=1 << 16)
    rec = None
    try:
        # --pre 300s: all five are in the window however long the
        # recorder's and the client's rclpy take to start on a loaded host.
        for i in range(5):
            ch.put(b"state %d" % i)
        rec = subprocess.Popen([exe, data, "--pre", "300s", "--post", "0", "-o", str(tmp_path / "inc"),
                                "--trigger-channel", trig, "--no-holders", "--ros2-service",
                                f"/{tag}/trigger", "--ros2-python", PY], env=env,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
        said = []
        for line in rec.stderr:  # ends with the recorder: bounded by its 30 s start limit
            said.append(line)
            if "armed on" in line:
                break
        assert any("serving the ROS 2 service" in s for s in said), "".join(said)
        client = subprocess.run([sys.executable, "-m", "nerve_tools.ros2.exec", "--", PY, "-c", CLIENT,
                                 f"/{tag}/trigger"], env=env, capture_output=True, text=True, timeout=150)
        assert client.returncode == 0 and "reply" in client.stdout, client.stdout + client.stderr
        path = None
        for line in rec.stderr:
            said.append(line)
            if ": wrote " in line:
                path = Path(line.split(": wrote ", 1)[1].split(" (", 1)[0])
                break
        assert path is not None, "".join(said)
        with open(path, "rb") as f:
            reader = make_reader(f, validate_crcs=True)
            meta = {m.name: dict(m.metadata) for m in reader.iter_metadata()}
            msgs = [m.data for _s, _c, m in reader.iter_messages()]
        t = json.loads(meta["nerve.blackbox.trigger"]["triggers"])[0]
        assert t["kind"] == "ros2-service" and t["source"].startswith(f"ros2 service /{tag}/trigger"), t
        assert msgs == [b"state %d" % i for i in range(5)]
        rec.send_signal(signal.SIGTERM)
        out = rec.communicate(timeout=60)[1]
        assert rec.returncode == 0, "".join(said) + out
        assert not os.path.exists(nerve.path(trig))
    finally:
        if rec is not None and rec.poll() is None:
            os.killpg(rec.pid, signal.SIGKILL)
            rec.communicate()
        ch.close()
        nerve.unlink(data)
        if os.path.exists(nerve.path(trig)):
            nerve.unlink(trig)


def test_ros2_service_without_rclpy_is_a_clear_error(tmp_path):
    """A --ros2-python that cannot run: the recorder says so and ends,
    leaving no trigger channel behind."""
    tag = f"bb{random.randint(0, 1 << 30)}"
    exe = shutil.which("nerve-blackbox") or str(Path(sys.executable).parent / "nerve-blackbox")
    with nerve.create(f"{tag}.data", slots=16, size=1 << 16) as ch:
        ch.put(b"x")
    try:
        r = subprocess.run([exe, f"{tag}.data", "-o", str(tmp_path), "--trigger-channel", f"{tag}.trigger",
                            "--no-holders", "--ros2-service", "/x", "--ros2-python", str(tmp_path / "no-python")],
                           env=dict(os.environ, NERVE_RMW_LIB=LIB), capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and "--ros2-service /x: the service did not start" in r.stderr, r.stderr
        assert not os.path.exists(nerve.path(f"{tag}.trigger"))
    finally:
        nerve.unlink(f"{tag}.data")
