"""nerve-ros2-dds listens where its Cyclone DDS configuration says
(tools/ros2/bind_iface.c): under the loopback-only configuration of these
tests every UDP socket it has is on 127.0.0.1, where Cyclone DDS 0.10 by
itself binds its unicast receive sockets to 0.0.0.0 (so the check fails
without bind_iface.c), also when the configuration names the interface
(`lo`) rather than its address. What `ss -lunp` lists for the process is
what is checked. (No run without a configuration: DDS traffic of these
tests stays on loopback.)"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from typing import List

import pytest

from conftest import Ros2Env
from dds_lo import CYCLONE_XML


def udp_sockets(pid: int) -> List[str]:
    """The local addresses of the UDP sockets of process `pid`."""
    out = subprocess.run(["ss", "-H", "-lunp"], capture_output=True, text=True,
                         timeout=30).stdout
    return [line.split()[3] for line in out.splitlines() if f"pid={pid}," in line]


def sockets_of_bridge(r2: Ros2Env, env: dict) -> List[str]:
    """The bridge's data path alone, started with `env`; its sockets once
    it says it is on the domain and has its three (discovery, data,
    transmit)."""
    exe = shutil.which("nerve-ros2-dds")
    assert exe
    p = r2.spawn([exe, "--domain", str(r2.domain), "--from", f"/bind_t=nt-bind-{r2.domain}"], env)
    p.wait_line(r"on DDS domain \d+ \(Cyclone DDS\)", 30)
    deadline = time.monotonic() + 30
    socks = udp_sockets(p.p.pid)
    while len(socks) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
        socks = udp_sockets(p.p.pid)
    p.stop()
    return socks


def test_sockets_on_the_configured_interface(r2: Ros2Env) -> None:
    if shutil.which("ss") is None:
        pytest.skip("no ss (iproute2) to list the sockets")
    socks = sockets_of_bridge(r2, r2.env)  # CYCLONEDDS_URI: 127.0.0.1 only
    assert len(socks) >= 3, socks
    assert all(s.startswith("127.0.0.1:") for s in socks), socks
    # The interface by name, in inline XML.
    xml = re.sub(r'<NetworkInterface address="127.0.0.1"/>', '<NetworkInterface name="lo"/>',
                 CYCLONE_XML)
    assert 'name="lo"' in xml
    socks = sockets_of_bridge(r2, dict(r2.env, CYCLONEDDS_URI=" ".join(xml.split())))
    assert len(socks) >= 3, socks
    assert all(s.startswith("127.0.0.1:") for s in socks), socks
