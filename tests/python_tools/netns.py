"""Hosts on one machine for the bridge tests: network namespaces joined by
veth pairs to a Linux bridge (a switch) in a namespace of its own, each host
with its own /dev/shm (a fresh tmpfs in its own mount namespace) and its own
host name (UTS namespace). Addresses are 192.0.2.N/24 (the documentation
range), which exist only inside these namespaces.

A host is a holder process (``sleep``) that owns the namespaces; commands
run in them through nsenter. Everything made is torn down by close(), also
after a failure: processes, namespaces (which take the veths and the
mounts with them)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

SUBNET = "192.0.2"


def unavailable() -> Optional[str]:
    """Why the namespace tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, tmpfs mounts)"
    for tool in ("ip", "nsenter", "unshare", "tc"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (iproute2, util-linux)"
    probe = f"nbprobe{os.getpid() % 100000}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"ip netns unavailable: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


class Host:
    def __init__(self, net: "Net", i: int) -> None:
        self.net = net
        self.i = i
        self.name = f"h{i}"
        self.ns = f"{net.tag}h{i}"
        self.addr = f"{SUBNET}.{i}"
        self.veth = f"{net.tag}v{i}"      # inside the host
        self.port = f"{net.tag}p{i}"      # on the switch
        _run("ip", "netns", "add", self.ns)
        net.namespaces.append(self.ns)
        _run("ip", "link", "add", self.veth, "netns", self.ns, "type", "veth",
             "peer", "name", self.port, "netns", net.switch)
        _run("ip", "-n", net.switch, "link", "set", self.port, "master", "br0", "up")
        _run("ip", "-n", self.ns, "addr", "add", f"{self.addr}/24", "dev", self.veth)
        _run("ip", "-n", self.ns, "link", "set", self.veth, "up")
        _run("ip", "-n", self.ns, "link", "set", "lo", "up")
        # The holder: its own mount and UTS namespaces inside the network
        # namespace, a fresh tmpfs on /dev/shm, its own host name.
        self.holder = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, "unshare", "-m", "-u", "--propagation", "private",
             "sh", "-c", f"mount -t tmpfs -o size=256m tmpfs /dev/shm && hostname {self.name} "
                         "&& echo ready && exec sleep 3600"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        net.procs.append(self.holder)
        line = self.holder.stdout.readline() if self.holder.stdout else ""
        if "ready" not in line:
            err = self.holder.stderr.read() if self.holder.stderr else ""
            raise RuntimeError(f"host {self.name} did not start: {err}")
        # The sh exec'd sleep: same pid, now in the namespaces.
        self.pid = self.holder.pid

    def cmd(self, *argv: str) -> List[str]:
        return ["nsenter", "-t", str(self.pid), "-m", "-u", "-n", "--", *argv]

    def run(self, *argv: str, timeout: float = 30, check: bool = False,
            env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
        return subprocess.run(self.cmd(*argv), capture_output=True, text=True, timeout=timeout,
                              env=env)

    def py(self, code: str, *args: str, timeout: float = 60) -> object:
        """Run Python code in the host; it prints one JSON value."""
        r = self.run(sys.executable, "-c", code, *args, timeout=timeout)
        if r.returncode != 0:
            raise AssertionError(f"{self.name}: python failed:\n{r.stderr}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    def spawn(self, *argv: str, log: Path) -> subprocess.Popen:
        f = open(log, "w")
        p = subprocess.Popen(self.cmd(*argv), stdout=subprocess.PIPE, stderr=f, text=True)
        f.close()
        self.net.procs.append(p)
        return p

    def shm(self) -> List[str]:
        r = self.run("ls", "/dev/shm")
        return r.stdout.split()


class Net:
    """``n`` hosts on one switch."""

    def __init__(self, n: int) -> None:
        self.tag = f"nb{os.getpid() % 100000}"
        self.namespaces: List[str] = []
        self.procs: List[subprocess.Popen] = []
        self.hosts: List[Host] = []
        self.switch = f"{self.tag}sw"
        try:
            _run("ip", "netns", "add", self.switch)
            self.namespaces.append(self.switch)
            _run("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
            _run("ip", "-n", self.switch, "link", "set", "br0", "up")
            for i in range(1, n + 1):
                self.hosts.append(Host(self, i))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            for s in (p.stdout, p.stderr):
                if s is not None:
                    s.close()
        self.procs.clear()
        # Deleting a namespace removes its veths; the tmpfs mounts went with
        # the holders' mount namespaces.
        for ns in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.namespaces.clear()

    def link(self, host: Host, up: bool) -> None:
        _run("ip", "-n", self.switch, "link", "set", host.port, "up" if up else "down")


# A wait for another process's progress is given WAIT_SCALE times the bound
# its caller names: on a loaded CI host any process (a bridge, a zenoh
# thread, a helper) may be descheduled for seconds. The bound only ends a
# hung test; a wait that succeeds returns at once, so a passing test takes
# no longer.
WAIT_SCALE = 3


def wait_for(pred, timeout: float, what: str, step: float = 0.1):
    """Poll pred() until it returns a true value (returned), bounded by
    WAIT_SCALE * timeout seconds."""
    timeout *= WAIT_SCALE
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= end:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)
