"""Does Fast DDS data-sharing apply to the benchmark's ROS 2 types under
rmw_fastrtps_cpp? Asks the library itself rather than assuming.

    python bench/rmw/fastdds_datasharing.py [--out FILE]

Writes a Fast DDS XML profile that turns data-sharing ON (kind ON: "the
creation of the entity will fail if the requirements are not met", Fast
DDS docs) for one publisher and one subscriber profile per topic, with
PREALLOCATED_WITH_REALLOC history memory (a requirement of data-sharing),
and loads it into rmw_fastrtps_cpp the documented way
(FASTRTPS_DEFAULT_PROFILES_FILE, RMW_FASTRTPS_USE_QOS_FROM_XML=1). Then an
rclpy node (the Jazzy wheels', NERVE_ROS2_PYTHON) creates a publisher and a
subscription of std_msgs/String, sensor_msgs/Imu, sensor_msgs/PointCloud2,
sensor_msgs/Image and, as a control, the bounded geometry_msgs/Vector3.
Prints and writes one JSON line per type: created or refused, with Fast
DDS's own log line. (With the default kind AUTO, Fast DDS falls back to
its shared-memory transport silently for the types it refuses here.)"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from rmwbench import write_rows  # bench/rmw/rmwbench.py, beside this script

ROOT = Path(__file__).resolve().parents[2]
PY = os.environ.get("NERVE_ROS2_PYTHON", str(ROOT / ".venv-jazzy/bin/python"))
TYPES = {"String": "std_msgs.msg", "Imu": "sensor_msgs.msg", "PointCloud2": "sensor_msgs.msg",
         "Image": "sensor_msgs.msg", "Vector3": "geometry_msgs.msg"}

PROBE = r'''
import importlib, json, sys
import rclpy
from rclpy.node import Node
types = json.loads(sys.argv[1])
rclpy.init()
n = Node("datasharing_probe")
for name, mod in types.items():
    T = getattr(importlib.import_module(mod), name)
    res = {}
    for kind in ("pub", "sub"):
        try:
            if kind == "pub":
                n.create_publisher(T, "/ds/" + name, 10)
            else:
                n.create_subscription(T, "/ds/" + name, lambda m: None, 10)
            res[kind] = "created"
        except Exception as e:  # the refusal is the result
            res[kind] = "refused: " + str(e).splitlines()[0]
    print("RESULT " + json.dumps({"type": name, **res}), flush=True)
rclpy.shutdown()
'''


def profile() -> str:
    entries = []
    for name in TYPES:
        for tag in ("publisher", "subscriber"):
            entries.append(
                f'    <{tag} profile_name="/ds/{name}">\n'
                f'      <qos><data_sharing><kind>ON</kind></data_sharing></qos>\n'
                f'      <historyMemoryPolicy>PREALLOCATED_WITH_REALLOC</historyMemoryPolicy>\n'
                f'    </{tag}>')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<dds xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">\n'
            '  <profiles>\n' + "\n".join(entries) + '\n  </profiles>\n</dds>\n')


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "datasharing_on.xml"
        xml.write_text(profile())
        env = dict(os.environ, FASTRTPS_DEFAULT_PROFILES_FILE=str(xml),
                   RMW_FASTRTPS_USE_QOS_FROM_XML="1", RMW_IMPLEMENTATION="rmw_fastrtps_cpp",
                   ROS_DOMAIN_ID=str(random.randint(100, 200)),
                   ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
        rows = []
        for name, mod in TYPES.items():  # one process each: its log is its own
            p = subprocess.run([PY, "-c", PROBE, json.dumps({name: mod})], env=env,
                               capture_output=True, text=True, timeout=120)
            log = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout + p.stderr)
            fastdds = sorted({m.group(0).strip() for m in re.finditer(r"\[[A-Z_]+ Error\][^\n]*", log)})
            res = [json.loads(ln[7:]) for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
            if not res:
                print(log, file=sys.stderr)
                return 1
            row = {"bench": "fastdds_datasharing", **res[0], "fastdds_log": fastdds}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if a.out:
        write_rows(a.out, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
