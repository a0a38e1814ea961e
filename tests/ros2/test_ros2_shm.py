"""nerve ros2 where Cyclone DDS's shared memory (iceoryx) is enabled, as a
ROS 2 user of rmw_cyclonedds with iceoryx configures it: the bridge's raw
CDR type is not fixed-size, so its samples must go over the network, and
the bridge must neither crash nor lose them. Before tools/ros2/rawcdr.c
stopped offering Cyclone the serialize-into-iceoryx operations, the
bridge's first dds_write crashed inside iceoryx here.

The readers: the Fast DDS peer (UDP; Fast DDS knows nothing of iceoryx),
which must get every message, and a Cyclone peer whose type Cyclone 0.10
puts on iceoryx (an idlc type: it serializes into shared memory). Its
presence made the bridge's writer take the iceoryx path, where it crashed;
what it receives is not asserted: on the same host with <SharedMemory>
enabled it got nothing from the bridge's network writer (Cyclone 0.10
delivers a same-host iceoryx-enabled participant's data to such a reader
over iceoryx only; docs/ros2.md, "Not guaranteed").

Needs Debian's iceoryx package (iox-roudi, a `make bench-ros2` dependency);
skipped without it. The RouDi daemon is started here and stopped at the
end (or an already running one is used); the shared-memory segments of a
RouDi started here are gone afterwards, even if it had to be killed."""

from __future__ import annotations

import getpass
import os
import shutil

import pytest
from test_ros2_peers import DDS_TYPES, same_bytes_but_tail
from test_ros2_rclpy import KINDS, N, make_channels, put_serialized

from conftest import CYCLONE_XML, Ros2Env, need_distro, to_ros_matched, topic

SHM = "<SharedMemory><Enable>true</Enable><LogLevel>warn</LogLevel></SharedMemory></Domain>"


def test_to_peer_with_shared_memory_enabled(r2: Ros2Env, name) -> None:
    roudi = shutil.which("iox-roudi")
    if roudi is None:
        pytest.skip("iox-roudi not installed (apt-get install iceoryx; make bench-ros2 does)")
    need_distro("jazzy")
    # RouDi's segments: /dev/shm/iceoryx_mgmt and one named after the user.
    segments = [f"/dev/shm/{n}" for n in ("iceoryx_mgmt", getpass.getuser())]
    ours = [s for s in segments if not os.path.exists(s)]
    d = r2.spawn([roudi, "-l", "warning"])
    try:
        d.wait_line(r"RouDi is ready for clients|ROUDI_STILL_RUNNING", 30)
        shm_bridge_to_fastdds(r2, name)
    finally:
        # Its clients first, then RouDi with time to unlink its segments
        # (SIGINT); what a killed RouDi left is removed here.
        for p in reversed(r2.procs):
            if p is not d:
                p.stop(5)
        d.stop(30)
        for s in ours:
            if os.path.exists(s):
                os.unlink(s)


def shm_bridge_to_fastdds(r2: Ros2Env, name) -> None:
    xml = r2.tmp / "cyclonedds-shm.xml"
    xml.write_text(CYCLONE_XML.replace("</Domain>", SHM))
    r2.env["CYCLONEDDS_URI"] = f"file://{xml}"
    chans = make_channels(name, KINDS)
    br = r2.bridge_to_ros(chans.values())
    subs = {}
    for kind, c in chans.items():
        (r2.tmp / f"got-{kind}").mkdir()
        subs[kind] = r2.peer("fastdds", "sub", topic(c), DDS_TYPES[kind], str(r2.tmp / f"got-{kind}"), str(N))
    shm_reader = r2.peer("cyclone", "sub", "Imu", topic(chans["Imu"]), str(N))
    for p in [*subs.values(), shm_reader]:
        p.wait_line("^READY$", 120)
    # The Imu writer matched the Fast DDS subscriber and the SHM reader.
    to_ros_matched(br, chans.values())
    to_ros_matched(br, [chans["Imu"]], 2)
    put_serialized(r2, "jazzy", chans)
    for kind, p in subs.items():
        assert p.json(150) == {"n": N}, kind
        for i in range(N):
            same_bytes_but_tail((r2.tmp / f"got-{kind}" / f"{i}.cdr").read_bytes(),
                                (r2.tmp / f"ser-{kind}-{N}" / f"{i}.cdr").read_bytes())
    assert br.p.poll() is None, "the bridge died:\n" + "\n".join(br.lines)
    assert br.stop() == 0
