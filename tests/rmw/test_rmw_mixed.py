"""A mixed system: an rclpy node on rmw_nerve_cpp and one on
rmw_fastrtps_cpp (DDS) exchange messages through `nerve ros2`, the DDS
bridge of issue 24, with no translation: the bridge reads and writes the
channels rmw_nerve uses. Skipped (saying why) where `nerve ros2` or its
native data path (nerve-ros2-dds, needs Cyclone DDS) is not there.

DDS stays on loopback: Cyclone DDS and Fast DDS get unicast-only
configurations with 127.0.0.1 as their peer, multicast off."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from rmwtest import LIB, PY, drop_domain, need_bridge, need_rmw

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "ros2"))
from dds_lo import CYCLONE_XML, FASTDDS_FILTERS, FASTDDS_XML  # noqa: E402  (tests/ros2/dds_lo.py)

need_rmw()
NATIVE = need_bridge()

PEER = r'''
import json, os, sys, time, rclpy
from rclpy.node import Node
from std_msgs.msg import String
sub_topic, pub_topic, word, done = sys.argv[1:5]
rclpy.init()
n = Node("mixed_" + word, start_parameter_services=False, enable_rosout=False)
got = []
n.create_subscription(String, sub_topic, lambda m: got.append(m.data), 10)
p = n.create_publisher(String, pub_topic, 10)
# Publish until this side has its three and the other side says it has
# its own (a file in `done` each): either may start or stall late.
end = time.monotonic() + 150
i = 0
while time.monotonic() < end and not (len(got) >= 3 and len(os.listdir(done)) == 2):
    rclpy.spin_once(n, timeout_sec=0.1)
    i += 1
    p.publish(String(data=f"{word} {i}"))
    if len(got) >= 3:
        open(os.path.join(done, word), "w").close()
print(json.dumps({"got": got[:3], "rmw": rclpy.get_rmw_implementation_identifier()}), flush=True)
'''


def test_rmw_nerve_and_fastrtps_through_nerve_ros2(tmp_path):
    domain = random.randint(1000, 60000)  # rmw_nerve's
    dds_domain = random.randint(1, 232)  # the DDS side's
    tag = f"mx{random.randint(0, 1 << 30)}"
    chatter, back = f"ros2-d{domain}.{tag}.chatter", f"ros2-d{domain}.{tag}.back"
    (tmp_path / "cyclone.xml").write_text(CYCLONE_XML)
    fast_major = "3" if "kilted" in PY else "2"
    (tmp_path / "fastdds.xml").write_text(FASTDDS_XML.format(filter=FASTDDS_FILTERS[fast_major]))
    base = dict(os.environ, PYTHONUNBUFFERED="1", ROS_LOG_DIR=str(tmp_path / "log"))
    for k in ("ROS_LOCALHOST_ONLY", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_STATIC_PEERS"):
        base.pop(k, None)
    bridge_env = dict(base, CYCLONEDDS_URI=f"file://{tmp_path}/cyclone.xml")
    fast_env = dict(base, ROS_DOMAIN_ID=str(dds_domain), RMW_IMPLEMENTATION="rmw_fastrtps_cpp",
                    FASTRTPS_DEFAULT_PROFILES_FILE=str(tmp_path / "fastdds.xml"),
                    FASTDDS_DEFAULT_PROFILES_FILE=str(tmp_path / "fastdds.xml"))
    nerve_env = dict(base, ROS_DOMAIN_ID=str(domain))
    bridge = subprocess.Popen(
        [sys.executable, "-m", "nerve_tools.ros2", "--domain", str(dds_domain),
         "--to-ros", f"{chatter}:/{tag}/chatter", "--from-ros", f"/{tag}/back:{back}"],
        env=bridge_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    done = tmp_path / "done"
    done.mkdir()
    try:
        fast = subprocess.Popen([PY, "-c", PEER, f"/{tag}/chatter", f"/{tag}/back", "fast",
                                 str(done)], env=fast_env, stdout=subprocess.PIPE, text=True)
        mine = subprocess.Popen([sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB, "--",
                                 PY, "-c", PEER, f"/{tag}/back", f"/{tag}/chatter", "nerve",
                                 str(done)], env=nerve_env, stdout=subprocess.PIPE, text=True)
        out_mine = mine.communicate(timeout=200)[0]
        out_fast = fast.communicate(timeout=200)[0]
    finally:
        os.killpg(bridge.pid, signal.SIGINT)
        try:
            log = bridge.communicate(timeout=20)[0]
        except subprocess.TimeoutExpired:
            os.killpg(bridge.pid, signal.SIGKILL)
            log = bridge.communicate()[0]
        drop_domain(domain)
    r_mine, r_fast = json.loads(out_mine.splitlines()[-1]), json.loads(out_fast.splitlines()[-1])
    assert r_mine["rmw"] == "rmw_nerve_cpp" and r_fast["rmw"] == "rmw_fastrtps_cpp"
    assert len(r_fast["got"]) == 3 and all(g.startswith("nerve ") for g in r_fast["got"]), log
    assert len(r_mine["got"]) == 3 and all(g.startswith("fast ") for g in r_mine["got"]), log


