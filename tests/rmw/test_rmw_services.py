"""Services across `nerve ros2 --services`: an rclpy server on rmw_nerve_cpp
(ROS domain N, its channels ros2-dN.*) called by ROS 2 clients on DDS
(rclpy on rmw_fastrtps_cpp, and a Fast DDS program for the type hash
check) in DDS domain N through the bridge, which pairs every reply with
its request by the RTPS sample identity (tools/ros2/ros2_services.cpp).

DDS stays on loopback (tests/ros2/dds_lo.py). Skipped, saying why, where
the bridge or its Fast DDS part is not built."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest
from rmwtest import LIB, PY, drop_domain, need_bridge, need_rmw

import nerve

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "ros2"))
from dds_lo import CYCLONE_XML, FASTDDS_FILTERS, FASTDDS_XML  # noqa: E402

PEER = str(HERE / "services_peer.py")
RAW = Path(os.environ.get("NERVE_ROS2_BIN", str(ROOT / "build" / "tests" / "ros2"))) \
    / "fastdds_srv_client"
CYC = RAW.parent / "cyclone_srv_peer"

need_rmw()
NATIVE = need_bridge()
if "--services" not in subprocess.run([NATIVE, "--help"], capture_output=True,
                                      text=True).stdout:
    pytest.skip("this nerve-ros2-dds has no --services", allow_module_level=True)


class World:
    """One test's domain N (1..232, as DDS wants), loopback DDS configs, the
    rmw_nerve server, the bridge and the DDS clients (all stopped at the
    end, every channel of domain N removed)."""

    def __init__(self, tmp: Path) -> None:
        self.domain = random.randint(1, 232)
        self.tag = f"sv{random.randint(0, 1 << 30)}"
        self.tmp = tmp
        (tmp / "cyclone.xml").write_text(CYCLONE_XML)
        major = "3" if "kilted" in PY else "2"
        (tmp / "fastdds.xml").write_text(FASTDDS_XML.format(filter=FASTDDS_FILTERS[major]))
        (tmp / "fastdds29.xml").write_text(FASTDDS_XML.format(filter=FASTDDS_FILTERS["2"]))
        self.base = dict(os.environ, PYTHONUNBUFFERED="1", ROS_LOG_DIR=str(tmp / "log"),
                         ROS_DOMAIN_ID=str(self.domain))
        for k in ("ROS_LOCALHOST_ONLY", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_STATIC_PEERS"):
            self.base.pop(k, None)
        self.procs: List[subprocess.Popen] = []

    def spawn(self, args: List[str], env: dict) -> subprocess.Popen:
        p = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.procs.append(p)
        return p

    def fast_env(self, xml: str = "fastdds.xml") -> dict:
        return dict(self.base, RMW_IMPLEMENTATION="rmw_fastrtps_cpp",
                    FASTRTPS_DEFAULT_PROFILES_FILE=str(self.tmp / xml),
                    FASTDDS_DEFAULT_PROFILES_FILE=str(self.tmp / xml))

    def server(self) -> subprocess.Popen:
        p = self.spawn([sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB, "--",
                        PY, PEER, "server", self.tag], self.base)
        expect(p, "ready")
        return p

    def bridge(self, *args: str, ready: str = "") -> subprocess.Popen:
        """The bridge with `args`, once it says `ready` (by default that it
        offers /TAG/double). Its Fast DDS part takes the Fast DDS 2.9
        profile, its Cyclone part CYCLONEDDS_URI; AMENT_PREFIX_PATH the
        ROS 2 venv (its .action files, as a sourced ROS 2 would)."""
        env = dict(self.fast_env("fastdds29.xml"),
                   CYCLONEDDS_URI=f"file://{self.tmp}/cyclone.xml",
                   AMENT_PREFIX_PATH=str(Path(PY).parents[1]))
        p = self.spawn([sys.executable, "-m", "nerve_tools.ros2", "--domain", str(self.domain),
                        *args], env)
        expect(p, ready or f"service /{self.tag}/double [test_msgs/srv/BasicTypes] offered")
        return p

    def client(self, role: str, *args: str) -> subprocess.Popen:
        return self.spawn([PY, PEER, role, self.tag, *args], self.fast_env())

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
        drop_domain(self.domain)


def expect(p: subprocess.Popen, what: str) -> None:
    """Reads `p`'s lines (kept in p.seen) up to one containing `what`, unless
    one read already does; its output ending first fails (every process
    here ends within its own bounded waits)."""
    seen = p.__dict__.setdefault("seen", [])
    if any(what in line for line in seen):
        return
    for line in p.stdout:
        seen.append(line.rstrip("\n"))
        if what in line:
            return
    raise AssertionError(f"expected {what!r}; got:\n" + "\n".join(seen))


def stop_bridge(p: subprocess.Popen) -> str:
    """SIGINT; the bridge must end by itself (20 s is only a bound)."""
    os.killpg(p.pid, signal.SIGINT)
    out = "\n".join(p.__dict__.get("seen", [])) + "\n" + p.communicate(timeout=20)[0]
    assert p.returncode == 0, out
    return out


def last_json(p: subprocess.Popen, timeout: float = 150.0) -> dict:
    out = p.communicate(timeout=timeout)[0]
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    assert lines, out
    return json.loads(lines[-1])


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    try:
        yield w
    finally:
        w.close()


def test_calls_pair_under_concurrent_clients_and_parameters(world):
    """Two DDS clients with five calls each all in flight: every reply is
    the one to its own request; then `ros2 param set`'s SetParameters and
    GetParameters on the rmw_nerve node through the bridge. The DDS graph
    names the rmw_nerve node behind the bridged topic and services
    (ros_discovery_info): the DDS node lists svc_server, its publisher of
    /TAG/status, its subscription to /TAG/cmd and its services, beside the
    bridge's own node."""
    world.server()
    pre = f"ros2-d{world.domain}.{world.tag}."
    br = world.bridge("--services", f"/{world.tag}/*", "--services", "/svc_server/*et_parameters",
                      "--to-ros", pre + "*", "--from-ros", f"/{world.tag}/cmd:{pre}cmd")
    r = last_json(world.client("client", "2", "5"))
    log = stop_bridge(br)
    assert r["ready"] and r["calls"] == 10 and r["done"] == 10, (r, log)
    assert r["wrong"] == [], (r, log)
    assert r["set"] is True and r["get"] == 2.5, (r, log)
    assert re.search(rf"service /{world.tag}/double: 10 requests, 10 replies, 0 unanswered", log), log
    # Only what the globs select; the rmw_nerve service channels are never topics.
    assert "/svc_server/list_parameters" not in log and "double-re" not in log, log
    assert f"to-ros {pre}status -> /{world.tag}/status" in log, log
    assert "/svc_server" in r["nodes"] and "/nerve_ros2" in r["nodes"], r
    assert r["pubs"] == [f"/{world.tag}/status"] and r["subs"] == [f"/{world.tag}/cmd"], r
    assert r["srvs"] == sorted([f"/{world.tag}/double", "/svc_server/get_parameters",
                                "/svc_server/set_parameters"]), r


def test_server_killed_mid_call(world):
    """The server is killed while a DDS client waits for its reply: the
    bridge withdraws the service (the client sees it gone, its call
    unanswered) and still ends on SIGINT."""
    jazzy_only()
    srv = world.server()
    br = world.bridge("--services", f"/{world.tag}/*")
    cli = world.client("hang")
    expect(cli, "sent")
    os.killpg(srv.pid, signal.SIGKILL)
    srv.communicate(timeout=30)  # reaped: a zombie still "exists"
    expect(br, f"service /{world.tag}/double: no server left on nerve; withdrawn")
    r = last_json(cli)
    log = stop_bridge(br)
    assert r["ready"] and r["gone"] and not r["answered"], (r, log)


def jazzy_only() -> None:
    """The bridge's side of a test does not depend on the ROS 2 distro; its
    DDS peer is the same Fast DDS program (or the check is the bridge's):
    run once, under Jazzy, for CI time."""
    if "kilted" in PY:
        pytest.skip("distro-independent: run under Jazzy only (CI time)")


def request_hash() -> str:
    """test_msgs/srv/BasicTypes_Request's REP 2011 hash, "RIHS01_<hex>"."""
    return subprocess.run([PY, "-c", "import sys; sys.path.insert(0, %r); "
                           "from services_peer import request_hash; print(request_hash())"
                           % str(HERE)], capture_output=True, text=True, check=True).stdout.strip()


def test_type_hash_mismatch_is_refused(world):
    """A DDS client whose request writer says another type hash is refused
    with one line; one with the server's hash is answered."""
    jazzy_only()
    req = subprocess.run([PY, "-c", "from rclpy.serialization import serialize_message as s; "
                          "from test_msgs.srv import BasicTypes as B; "
                          "print(s(B.Request(int64_value=21)).hex())"],
                         capture_output=True, text=True, check=True).stdout.strip()
    good = request_hash()
    if not RAW.exists():
        pytest.skip(f"{RAW} not built (needs libfastrtps-dev)")
    world.server()
    br = world.bridge("--services", f"/{world.tag}/*")
    results = {}
    for name, h in (("good", good), ("bad", "RIHS01_" + "00" * 32)):
        go = world.tmp / f"go-{name}"
        env = dict(world.fast_env("fastdds29.xml"), NERVE_PEER_GO=str(go))
        if name == "bad":
            env["NERVE_PEER_NO_REPLY"] = "1"
        p = world.spawn([str(RAW), f"/{world.tag}/double", "test_msgs::srv::dds_::BasicTypes",
                         h, req], env)
        expect(p, "ready")
        if name == "bad":
            expect(br, "error: type hash mismatch on service")
        go.touch()
        results[name] = last_json(p)
    expect(br, "a request of a client with another type hash refused")
    log = stop_bridge(br)
    assert results["good"] == {"matched": True, "replies": 1}, (results, log)
    assert results["bad"]["matched"], (results, log)
    lines = [ln for ln in log.splitlines() if "type hash mismatch" in ln]
    assert len(lines) == 1 and "RIHS01_" + "00" * 32 in lines[0] and good in lines[0], log
    assert re.search(rf"service /{world.tag}/double: 2 requests, 1 replies, 0 unanswered "
                     r"dropped, 1 refused", log), log


def test_action_goal_feedback_result_cancel(world):
    """A DDS action client drives an rmw_nerve action server (nodes.py's
    /fib) through the bridge: its three services with --services, its
    feedback and status topics with --to-ros; a goal to its result, then a
    cancel."""
    srv = world.spawn([sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB, "--",
                       PY, str(HERE / "nodes.py"), "action_server"], world.base)
    expect(srv, "ready")
    # An action client counts as "server ready" only once it sees
    # publishers of feedback and status, whose subscription is transient
    # local: --latch makes the bridge's writers transient local. Their
    # channels exist from the server's first goal on (rmw_nerve makes a
    # topic's channel at its first publish): the client's first goal makes
    # them, and the test goes on once the bridge's writers matched it.
    feedback = f"ros2-d{world.domain}.fib._action.feedback"
    status = f"ros2-d{world.domain}.fib._action.status"
    br = world.bridge("--services", "/fib/_action/*", "--to-ros", feedback, "--to-ros", status,
                      "--latch", ready="service /fib/_action/send_goal")
    go = world.tmp / "go"
    cli = world.spawn([PY, PEER, "action", world.tag], dict(world.fast_env(), NERVE_PEER_GO=str(go)))
    expect(cli, "first")
    expect(br, f"to-ros {feedback} matched 1 reader(s)")
    expect(br, f"to-ros {status} matched 1 reader(s)")
    go.touch()
    r = last_json(cli)
    log = stop_bridge(br)
    fib = [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
    assert r["services"] and r["first"] and r["server"], (r, log)
    assert r["result"] == fib and r["status"] == 4, (r, log)  # STATUS_SUCCEEDED
    assert r["feedback"] == [fib[:k] for k in range(3, 11)], (r, log)
    assert r["cancel_goals"] == 1 and r["cancel_status"] == 5, (r, log)  # STATUS_CANCELED
    for svc in ("send_goal", "cancel_goal", "get_result"):
        assert re.search(rf"service /fib/_action/{svc}: [1-9]\d* requests, [1-9]\d* replies",
                         log), log


# ---- the other way: --services-from-ros ------------------------------------

# A DDS server whose death the bridge sees within seconds: its participant's
# lease is 2 s (Fast DDS's default is 20 s).
SHORT_LEASE = ("<builtin><discovery_config><leaseDuration><sec>2</sec></leaseDuration>"
               "<leaseAnnouncement><sec>0</sec><nanosec>500000000</nanosec>"
               "</leaseAnnouncement></discovery_config>")


def need_from_ros() -> None:
    if "--services-from-ros" not in subprocess.run([NATIVE, "--help"], capture_output=True,
                                                   text=True).stdout:
        pytest.skip("this nerve-ros2-dds has no --services-from-ros")


def dds_server(world, lease: bool = False) -> subprocess.Popen:
    """services_peer.py's server on DDS (rmw_fastrtps_cpp) instead of rmw_nerve."""
    env = world.fast_env()
    if lease:
        xml = (world.tmp / "fastdds.xml").read_text().replace("<builtin>", SHORT_LEASE, 1)
        (world.tmp / "fastdds-lease.xml").write_text(xml)
        env = world.fast_env("fastdds-lease.xml")
    p = world.spawn([PY, PEER, "server", world.tag], env)
    expect(p, "ready")
    return p


def nerve_client(world, role: str, *args: str) -> subprocess.Popen:
    """services_peer.py's client ROLE on rmw_nerve_cpp."""
    return world.spawn([sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB, "--",
                        PY, PEER, role, world.tag, *args], world.base)


def test_from_ros_calls_pair_under_concurrent_clients_and_parameters(world):
    """The other way: two rmw_nerve clients with five calls each, all in
    flight, call a DDS server through the bridge; every reply is the one to
    its own request. Then SetParameters and GetParameters on the DDS node."""
    need_from_ros()
    dds_server(world)
    br = world.bridge("--services-from-ros", f"/{world.tag}/*",
                      "--services-from-ros", "/svc_server/*et_parameters",
                      ready=f"service /{world.tag}/double [test_msgs/srv/BasicTypes] of DDS "
                            "served on nerve")
    r = last_json(nerve_client(world, "client", "2", "5", "noview"))
    log = stop_bridge(br)
    assert r["ready"] and r["calls"] == 10 and r["done"] == 10, (r, log)
    assert r["wrong"] == [], (r, log)
    assert r["set"] is True and r["get"] == 2.5, (r, log)
    assert re.search(rf"service /{world.tag}/double \(from DDS\): 10 requests, 10 replies, "
                     r"0 unanswered, 0 errors, 0 refused", log), log
    assert "/svc_server/list_parameters" not in log, log
    # The channels the bridge made are gone with it (the clients ended).
    left = [n for n in os.listdir("/dev/shm") if f".ros2-d{world.domain}.{world.tag}." in n]
    assert left == [], left


def test_from_ros_server_killed_mid_call(world):
    """The DDS server is killed while an rmw_nerve client waits for its
    reply: the bridge says so and withdraws the service from rmw_nerve's
    graph (the client sees no server, its call unanswered)."""
    jazzy_only()
    need_from_ros()
    srv = dds_server(world, lease=True)
    br = world.bridge("--services-from-ros", f"/{world.tag}/*",
                      ready=f"service /{world.tag}/double [test_msgs/srv/BasicTypes] of DDS "
                            "served on nerve")
    cli = nerve_client(world, "hang")
    expect(cli, "sent")
    os.killpg(srv.pid, signal.SIGKILL)
    srv.communicate(timeout=30)
    expect(br, f"service /{world.tag}/double (from DDS): its DDS server is gone; withdrawn "
               "from nerve, 1 call(s) in flight unanswered")
    r = last_json(cli)
    log = stop_bridge(br)
    assert r["ready"] and r["gone"] and not r["answered"], (r, log)


def graph_client_hash(domain: int, name: str, limit: float = 30.0) -> str:
    """The hash ("V:HEX") of the first rmw_nerve client of service `name`
    in domain `domain`'s graph (this user's channel) within `limit` s."""
    g = nerve.open(f"ros2-graph-d{domain}.u{os.geteuid()}")
    try:
        end = time.monotonic() + limit
        while time.monotonic() < end:
            try:
                m = g.get(wait=True, timeout=max(0.1, end - time.monotonic()))
            except nerve.Timeout:
                break
            for line in bytes(m.data).decode(errors="replace").splitlines():
                f = line.split()
                if f[:2] == ["E", "C"] and len(f) > 5 and f[4] == name:
                    return f[-1]
    finally:
        g.close()
    raise AssertionError(f"no rmw_nerve client of {name} in the graph")


def test_from_ros_type_hash_mismatch_is_refused(world):
    """The other way: an rmw_nerve client says its request's hash in the
    graph (that of rclpy's type support, which the DDS server's request
    reader says too) and its request is forwarded; a client that the graph
    gives another hash (written here as rmw_nerve writes it) is refused
    with one line naming both hashes, its request counted, not forwarded."""
    jazzy_only()
    need_from_ros()
    good = subprocess.run([PY, "-c", "import sys; sys.path.insert(0, %r); "
                           "from services_peer import request_hash; print(request_hash())"
                           % str(HERE)], capture_output=True, text=True, check=True).stdout.strip()
    dds_server(world)
    br = world.bridge("--services-from-ros", f"/{world.tag}/*",
                      ready=f"service /{world.tag}/double [test_msgs/srv/BasicTypes] of DDS "
                            "served on nerve")
    cli = nerve_client(world, "hang")  # its request: the DDS server sleeps on it
    expect(cli, "sent")
    assert graph_client_hash(world.domain, f"/{world.tag}/double") == "1:" + good[7:]
    bad = "00" * 32
    gid = os.urandom(16)
    ctx = os.urandom(8).hex()
    line = (f"E C 1 {gid.hex()} /{world.tag}/double test_msgs/srv/BasicTypes "
            f"1 2 1 10 0 0 0 0 0 0 1:{bad}\n")
    with nerve.open(f"ros2-graph-d{world.domain}.u{os.geteuid()}", write=True) as g:
        g.put(f"nerve-rmw-graph 3 {ctx} {os.getpid()} live\nN 1 fake / /\n{line}".encode())
    with nerve.open(f"ros2-d{world.domain}.{world.tag}.double-req", write=True) as rq:
        # rmw_nerve's 32-byte request header (client GID, sequence number),
        # then CDR's 4-byte header and a body never sent to DDS.
        rq.put(gid + (1).to_bytes(8, "little") + bytes(8) + b"\x00\x01\x00\x00" + bytes(64))
    expect(br, f"error: type hash mismatch on service /{world.tag}/double")
    with nerve.open(f"ros2-graph-d{world.domain}.u{os.geteuid()}", write=True) as g:
        g.put(f"nerve-rmw-graph 3 {ctx} {os.getpid()} bye\n".encode())
    log = stop_bridge(br)
    lines = [ln for ln in log.splitlines() if "type hash mismatch" in ln]
    assert len(lines) == 1 and "RIHS01_" + bad in lines[0] and good in lines[0], log
    assert gid.hex() in lines[0], log
    assert re.search(rf"service /{world.tag}/double \(from DDS\): 2 requests, 0 replies, "
                     r"1 unanswered, 0 errors, 1 refused \(type hash\)", log), log


def test_from_ros_action_goal_result_cancel(world):
    """An rmw_nerve action client drives a DDS action server (nodes.py's
    /fib on rmw_fastrtps_cpp): its three services with --services-from-ros,
    its feedback and status with --from-ros (the feedback's type from the
    .action file under AMENT_PREFIX_PATH); wait_for_server() sees the
    bridge's imports as the publishers; a goal to its result with every
    feedback, then a cancel."""
    need_from_ros()
    srv = world.spawn([PY, str(HERE / "nodes.py"), "action_server"], world.fast_env())
    expect(srv, "ready")
    chan = f"ros2-d{world.domain}.fib._action."
    br = world.bridge("--services-from-ros", "/fib/_action/*",
                      "--from-ros", f"/fib/_action/feedback:{chan}feedback",
                      "--from-ros", f"/fib/_action/status:{chan}status",
                      ready="service /fib/_action/send_goal [test_msgs/action/Fibonacci_SendGoal] "
                            "of DDS served on nerve")
    go = world.tmp / "go"
    go.touch()
    cli = world.spawn([sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB, "--",
                       PY, PEER, "action", world.tag], dict(world.base, NERVE_PEER_GO=str(go)))
    r = last_json(cli)
    log = stop_bridge(br)
    fib = [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
    assert r["services"] and r["first"] and r["server"], (r, log)
    assert r["result"] == fib and r["status"] == 4, (r, log)  # STATUS_SUCCEEDED
    assert r["feedback"] == [fib[:k] for k in range(3, 11)], (r, log)
    assert r["cancel_goals"] == 1 and r["cancel_status"] == 5, (r, log)  # STATUS_CANCELED
    assert "from-ros /fib/_action/feedback [test_msgs/action/Fibonacci_FeedbackMessage]" in log
    for svc in ("send_goal", "cancel_goal", "get_result"):
        assert re.search(rf"service /fib/_action/{svc} \(from DDS\): [1-9]\d* requests, "
                         r"[1-9]\d* replies, 0 unanswered, 0 errors", log), log
    assert re.search(r"from-ros /fib/_action/status -> \S+: [1-9]\d* received", log), log


# ---- rmw_cyclonedds_cpp's clients and servers ------------------------------

def cyclone_peer(world, *args: str, env: dict = None) -> subprocess.Popen:
    """cyclone_srv_peer (a client or server as rmw_cyclonedds_cpp makes
    them: its request header in the payload) on loopback Cyclone DDS."""
    if not CYC.exists():
        pytest.skip(f"{CYC} not built (needs cyclonedds-dev)")
    return world.spawn([str(CYC), *args], dict(world.base, **(env or {}),
                                              CYCLONEDDS_URI=f"file://{world.tmp}/cyclone.xml"))


def test_cyclonedds_clients_pair_by_request_header(world):
    """Two rmw_cyclonedds-style clients ("clientid=" in USER_DATA, the
    request header in the payload) with five calls each, all in flight, call
    the rmw_nerve server through --services: each reply comes back to its
    own client with its request's header and answer. A client whose
    request is too short for the header is refused in one line, counted; so
    is (counted) one whose encapsulation is of no known byte order (from the
    Fast DDS client, whose user data then says "clientid=")."""
    jazzy_only()
    good = request_hash()
    svc = f"/{world.tag}/double"
    world.server()
    br = world.bridge("--services", f"/{world.tag}/*")
    assert last_json(cyclone_peer(world, "short", svc)) == {"matched": True}
    expect(br, "shorter than rmw_cyclonedds's request header")
    if RAW.exists():  # the unknown encapsulation 0x0003, 16 bytes of header
        env = dict(world.fast_env("fastdds29.xml"), NERVE_PEER_NO_REPLY="1")
        odd = last_json(world.spawn([str(RAW), svc, "test_msgs::srv::dds_::BasicTypes",
                                     good + ";clientid=01", "0003" + "00" * 40], env))
        assert odd["matched"], odd
    r = last_json(cyclone_peer(world, "client", svc, "2", "5", good))
    log = stop_bridge(br)
    assert r == {"matched": True, "calls": 10, "ok": 10, "wrong": 0}, (r, log)
    bad = 2 if RAW.exists() else 1
    assert re.search(rf"service {svc}: {10 + bad} requests, 10 replies, 0 unanswered dropped, "
                     rf"0 refused \(type hash\), 0 errors, {bad} malformed", log), log
    lines = [ln for ln in log.splitlines() if "request header" in ln]
    assert len(lines) == 1 and "an rmw_cyclonedds request of 12 bytes" in lines[0], log


def test_from_ros_cyclonedds_server_pairs_by_request_header(world):
    """The other way: an rmw_cyclonedds-style server ("serviceid=" in
    USER_DATA) answers two rmw_nerve clients' ten calls in flight through
    --services-from-ros; the bridge writes the request header and pairs the
    replies by it."""
    jazzy_only()
    need_from_ros()
    svc = f"/{world.tag}/double"
    stop = world.tmp / "stop"
    srv = cyclone_peer(world, "server", svc, request_hash(), env={"NERVE_PEER_STOP": str(stop)})
    expect(srv, "ready")
    br = world.bridge("--services-from-ros", f"/{world.tag}/*",
                      ready=f"service {svc} [test_msgs/srv/BasicTypes] of DDS served on nerve "
                            "(rmw_cyclonedds's request header)")
    r = last_json(nerve_client(world, "client", "2", "5", "bare"))
    stop.touch()
    s = last_json(srv)
    log = stop_bridge(br)
    assert r["ready"] and r["calls"] == 10 and r["done"] == 10, (r, log)
    assert r["wrong"] == [] and s == {"served": 10}, (r, s, log)
    assert re.search(rf"service {svc} \(from DDS\): 10 requests, 10 replies, 0 unanswered, "
                     r"0 errors, 0 refused \(type hash\), 0 malformed", log), log
