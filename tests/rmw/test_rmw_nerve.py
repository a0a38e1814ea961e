"""rmw_nerve_cpp through the real rclpy and rcl of the ROS 2 Jazzy wheels,
each node started with nerve-ros2-exec (`nerve ros2 exec`).

Needs NERVE_RMW_LIB (the built librmw_nerve_cpp.so) and NERVE_ROS2_PYTHON
(the Python of .venv-jazzy); `make test-rmw` sets both. Every test runs on
its own ROS domain, so its channels are ros2-d<N>.*, removed afterwards."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rmwtest import LIB, PY, expect, need_rmw, result

import nerve

HERE = Path(__file__).parent
need_rmw()

EXEC = [sys.executable, "-m", "nerve_tools.ros2.exec", "--lib", LIB, "--"]


def _default_sigint():
    # A shell's background job, and so CI, may start us with SIGINT
    # ignored, which a child inherits; a node in a terminal has it default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def node(domain: int, role: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), PYTHONUNBUFFERED="1")
    return subprocess.Popen([*EXEC, PY, str(HERE / "nodes.py"), role, *args], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)


def test_every_rmw_function_is_defined():
    fastrtps = Path(PY).parent.parent / "lib" / "librmw_fastrtps_cpp.so"

    def rmw_symbols(path):
        out = subprocess.run(["nm", "-D", "--defined-only", str(path)], check=True,
                             capture_output=True, text=True).stdout
        return {ln.split()[-1] for ln in out.splitlines() if ln.split()[-1].startswith("rmw_")}

    missing = rmw_symbols(fastrtps) - rmw_symbols(LIB)
    assert not missing, f"would fall through to Fast DDS: {sorted(missing)}"


def test_exec_preloads_where_rcl_links_an_rmw():
    out = subprocess.run([*EXEC[:-1], "--print", "--", PY], check=True, capture_output=True,
                         text=True).stdout
    assert "librmw_fastrtps_cpp.so (NEEDED): preloading" in out
    assert "RMW_IMPLEMENTATION=rmw_nerve_cpp" in out
    assert f"LD_PRELOAD={Path(LIB).resolve()}" in out
    # The same through the ros2 verb: `nerve ros2 exec`.
    verb = subprocess.run([sys.executable, "-m", "nerve_tools.ros2", "exec", "--lib", LIB,
                           "--print", "--", PY], check=True, capture_output=True, text=True).stdout
    assert verb == out


def test_types_exact_late_joiner_no_dds(domain):
    pub = node(domain, "types_pub")
    expect(pub, "ready")
    # The subscriber starts after everything was published: transient local
    # hands it the newest message of each ring.
    sub = result(node(domain, "types_sub"))
    assert sub["rmw"] == "rmw_nerve_cpp"
    assert sub["equal"] == {"/t/string": True, "/t/imu": True, "/t/cloud": True,
                            "/t/image": True}
    assert sub["sockets"] == [0, 0], "the subscriber opened sockets (DDS?)"
    with nerve.open(f"ros2-d{domain}.t.imu") as ch:
        meta = ch.metadata
        assert (meta.type, meta.encoding) == ("sensor_msgs/msg/Imu", "cdr")
        assert "MSG: std_msgs/Header" in meta.schema.decode()
        msg = ch.get()
        assert bytes(msg.data[:4]) == b"\x00\x01\x00\x00"
    with nerve.open(f"ros2-d{domain}.t.string") as ch:
        # CDR of std_msgs/String: length (with NUL) then the UTF-8 bytes.
        text = "hello nerve \u00e9".encode()
        assert bytes(ch.get().data) == (b"\x00\x01\x00\x00" + (len(text) + 1).to_bytes(4, "little")
                                        + text + b"\x00")
    pubres = result(pub, "\n")
    assert pubres["sockets"] == [0, 0], "the publisher opened sockets (DDS?)"


def test_nerve_tools_see_the_topics(domain, tmp_path):
    pub = node(domain, "types_pub")
    expect(pub, "ready")
    try:
        bindir = Path(sys.executable).parent
        echo = subprocess.run([str(bindir / "nerve-echo"), f"ros2-d{domain}.t.imu", "--all",
                               "-n", "1", "--timeout", "20", "--json"],
                              capture_output=True, text=True, timeout=60)
        assert echo.returncode == 0, echo.stderr
        value = json.loads(echo.stdout.splitlines()[0])["value"]
        assert value["header"]["frame_id"] == "imu_link"
        assert value["linear_acceleration"]["x"] == 9.81
        out = tmp_path / "t.mcap"
        rec = subprocess.run([str(bindir / "nerve-record"), f"ros2-d{domain}.t.string",
                              "--from-start", "--count", "1", "-q", "-o", str(out)],
                             capture_output=True, text=True, timeout=60)
        assert rec.returncode == 0, rec.stderr
        from mcap.reader import make_reader

        with open(out, "rb") as f:
            msgs = list(make_reader(f).iter_messages())
        assert len(msgs) == 1
        schema, channel, _ = msgs[0]
        assert schema.name == "std_msgs/msg/String" and schema.encoding == "ros2msg"
        assert channel.message_encoding == "cdr"
    finally:
        result(pub, "\n")


def test_several_publishers_and_subscriptions(domain):
    sub = node(domain, "multi_sub", "50")
    expect(sub, "ready")
    pubs = [node(domain, "multi_pub", name, "50") for name in "AB"]
    for p in pubs:
        assert result(p)["saw_subscribers"]
    got = result(sub)["got"]
    for g in got:  # each subscription: every message of both, each in order
        assert [x for x in g if x[0] == "A"] == [f"A-{i}" for i in range(50)]
        assert [x for x in g if x[0] == "B"] == [f"B-{i}" for i in range(50)]


@pytest.mark.parametrize("size,ring", [("128KiB", 128 << 10), ("64Q", None)])
def test_stamps_and_env_sizes(domain, monkeypatch, size, ring):
    """source_timestamp is the commit time on the wall clock; a channel's
    data ring follows NERVE_RMW_DATA_SIZE in nerve's size grammar, and a
    malformed value is said once and ignored (the default ring)."""
    monkeypatch.setenv("NERVE_RMW_DATA_SIZE", size)
    p = node(domain, "stamps")
    r = json.loads(expect(p, '"source"'))
    data_size = nerve.stat(f"ros2-d{domain}.stamps").data_size  # while it runs
    _, err = p.communicate("\n", timeout=60)
    assert p.returncode == 0, err
    # Within the publish call's wall-clock bracket, give or take 1 ms (the
    # offset between the clocks is an estimate).
    assert r["source"] is not None, r
    assert r["before"] - 1_000_000 <= r["source"] <= r["after"] + 1_000_000, r
    if ring is None:
        assert err.count("NERVE_RMW_DATA_SIZE='64Q' ignored") == 1, err
        assert data_size == 64 << 10  # the default for a small message
    else:
        assert data_size == ring


def test_message_lost_event(domain):
    r = result(node(domain, "lost"))
    # depth 4, 20 published before the first take: the newest 4 arrive and
    # the event counts the 16 the ring overwrote.
    assert r["got"] == ["16", "17", "18", "19"]
    assert r["events"] and r["events"][-1][0] == 16 and sum(e[1] for e in r["events"]) == 16


def test_incompatible_type_events(domain):
    # A publisher of Int32 and a subscription of String on one topic: both
    # get the incompatible-type event once, for the one other endpoint.
    r = result(node(domain, "type_mismatch"))
    assert r["pub"] == [1] and r["sub"] == [1]


@pytest.mark.parametrize("order", ["pub_first", "sub_first"])
def test_incompatible_qos_events(domain, order):
    # A best-effort publisher and a reliable subscription, a volatile
    # publisher and a transient-local subscription: each side gets its
    # incompatible-QoS event once, with the policy, whichever came first.
    # A compatible pair gets none. Messages still pass (docs/ros2.md).
    r = result(node(domain, "qos_mismatch", order))
    ev = r["events"]
    assert ev["/q/rel"] == {"pub": [[1, 1, "RELIABILITY"]], "sub": [[1, 1, "RELIABILITY"]]}
    assert ev["/q/dur"] == {"pub": [[1, 1, "DURABILITY"]], "sub": [[1, 1, "DURABILITY"]]}
    assert ev["/q/ok"] == {"pub": [], "sub": []}
    assert r["got"] == {"/q/rel": ["x/q/rel"], "/q/dur": ["x/q/dur"], "/q/ok": ["x/q/ok"]}
    c = r["checks"]
    assert c["rel"][0] == "ERROR" and "Best effort publisher and reliable" in c["rel"][1]
    assert c["dur"][0] == "ERROR" and "Volatile publisher and transient local" in c["dur"][1]
    assert c["live"][0] == "ERROR" and "Automatic liveliness" in c["live"][1]
    assert c["ok"] == ["OK", ""] and c["default"] == ["OK", ""]


def test_incompatible_qos_across_processes(domain):
    # The subscription's process first, the publisher's later: both learn
    # of the other from the shared-memory graph.
    sub = node(domain, "qos_sub")
    pub = None
    try:
        expect(sub, "ready")
        pub = node(domain, "qos_pub")
        expect(pub, "ready")
        rs = result(sub)
        rp = result(pub, "\n")
    finally:
        for p in (sub, pub):
            if p and p.poll() is None:
                p.kill()
                p.communicate()
    assert rs["events"] == [[1, 1, "DURABILITY"]] and rs["got"]
    assert rp["events"] == [[1, 1, "DURABILITY"]]


def test_keep_all_is_refused(domain):
    r = result(node(domain, "qos_refuse"))
    assert "KEEP_ALL is refused" in r["errors"]["pub"]
    # Jazzy's rcl replaces the subscription's error by one of its own
    # cleanup (it prints the first, which is rmw_nerve's, on stderr).
    assert r["errors"]["sub"] is not None
    said = "subscription '/refused': QoS history KEEP_ALL is refused"
    assert said in r["errors"]["sub"] or said in r["_stderr"]
    assert "/refused" not in r["topics"]


def test_parameter_services_and_a_killed_server(domain):
    srv = node(domain, "param_server")
    expect(srv, "ready")
    cli = node(domain, "param_client")
    try:
        expect(cli, "kill")
        srv.send_signal(signal.SIGKILL)
        srv.wait(timeout=30)  # reaped: a zombie still "exists"
        r = result(cli, "\n")
    finally:
        srv.kill()
        srv.communicate()
    assert r["list"] == ["gain", "label", "start_type_description_service", "use_sim_time"]
    assert r["get"] == 1.5 and r["set"] is True and r["get_after_set"] == 2.5
    assert r["nodes_before"] == ["pclient", "pserver"]
    assert "/pserver/get_parameters" in r["services_of_server"]
    assert r["gone"], "the killed server stayed in the graph"
    assert r["service_ready_after_kill"] is False
    assert "no server for this service" in r["call_after_kill"]


SIGNAL_TRIES = int(os.environ.get("NERVE_RMW_SIGNAL_TRIES", "50"))
SIGNAL_BATCH = 10
# Generous: a node ends within milliseconds of the signal; this bound only
# tells a hang (the wait never woken) from a slow, loaded CI host.
SIGNAL_BOUND_S = 15.0


def _signal_batch(domain: int, kind: str, sigs: list) -> list:
    """Starts one node per signal in `sigs`, each blocked in its wait, sends
    each its signal once, and returns (signal, seconds to exit or None,
    returncode, last stdout line, stderr) per node."""
    procs = [node(domain, "sig_wait", kind) for _ in sigs]
    out = []
    try:
        for p in procs:
            expect(p, "ready")
        time.sleep(0.3)  # into the wait (a signal before it is handled too)
        for p, sig in zip(procs, sigs):
            t0 = time.monotonic()
            p.send_signal(sig)
            try:
                o, e = p.communicate(timeout=SIGNAL_BOUND_S)
                out.append((sig, time.monotonic() - t0, p.returncode,
                            (o.strip().splitlines() or [""])[-1], e))
            except subprocess.TimeoutExpired:
                out.append((sig, None, None, "", ""))
    finally:
        for p in procs:
            p.kill()
            p.communicate()
    return out


@pytest.mark.parametrize("kind", ["sub", "service", "action", "mt"])
def test_first_signal_ends_a_waiting_node(domain, kind):
    """The first SIGINT or SIGTERM ends a node blocked in rmw_wait: a
    subscriber-only node, a service server, an action server and a
    multi-threaded executor, SIGNAL_TRIES times each, half of each signal."""
    sigs = [signal.SIGINT if i % 2 == 0 else signal.SIGTERM for i in range(SIGNAL_TRIES)]
    results = []
    for i in range(0, len(sigs), SIGNAL_BATCH):
        results += _signal_batch(domain, kind, sigs[i:i + SIGNAL_BATCH])
    hung = [r for r in results if r[1] is None]
    assert not hung, f"{len(hung)} of {len(results)} {kind} nodes ignored their first signal"
    # Ended by the signal's path through rclpy, not by a crash: SIGINT
    # raises KeyboardInterrupt; SIGTERM shuts the context down (rclpy then
    # raises ExternalShutdownException, a multi-threaded executor's spin
    # returns, or a new wait set fails on the invalid context when the
    # shutdown lands between rclpy's check of the context and it).
    for sig, _, rc, last, err in results:
        assert rc is not None and rc >= 0, f"{sig!r}: killed by a signal ({rc})\n{err}"
        if sig == signal.SIGINT:
            assert "KeyboardInterrupt" in last, f"SIGINT: {last!r}\n{err}"
        else:
            assert ("ExternalShutdownException" in last or "spin returned" in last
                    or "context is not valid" in err), f"SIGTERM: {last!r}\n{err}"
    slowest = max(r[1] for r in results)
    print(f"{kind}: {len(results)} nodes ended on their first signal; slowest {slowest:.3f} s")


def test_action_goal_feedback_result_cancel(domain):
    srv = node(domain, "action_server")
    expect(srv, "ready")
    try:
        r = result(node(domain, "action_client", "full"))
    finally:
        srv.kill()
        srv.communicate()
    assert r["server"] and r["accepted"]
    assert r["result"] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
    assert r["status"] == 4  # GoalStatus.STATUS_SUCCEEDED
    assert r["feedback"] and r["feedback"][-1] == r["result"]
    assert r["feedback"] == [r["result"][:k] for k in range(3, 11)]
    assert r["cancel_goals"] == 1
    assert r["cancel_status"] == 5  # GoalStatus.STATUS_CANCELED


def test_action_server_killed_is_reported(domain, monkeypatch):
    monkeypatch.setenv("FIB_PERIOD", "0.5")  # the goal outlives the kill
    srv = node(domain, "action_server")
    expect(srv, "ready")
    cli = node(domain, "action_client", "killed")
    try:
        expect(cli, "feedback")
        srv.send_signal(signal.SIGKILL)
        srv.wait(timeout=30)
        r = result(cli)
    finally:
        srv.kill()
        srv.communicate()
    assert r["server"] and r["accepted"]
    assert r["server_gone"], "the client was not told that the action server died"
    assert not r["result_done"]


@pytest.mark.parametrize("kind", ["image", "cloud", "path", "text"])
def test_messages_that_grow(domain, kind):
    """A topic whose messages grow (Image 100 B to 4 MB, PointCloud2 1 kB to
    8 MB, Path 0 to 10,000 poses) or go up and down (String of 0 to 5000
    characters: below rmw_publish's size guess, filling it exactly, one
    byte past it, far past it): every one is published (the channel grows),
    received in order and intact by a subscriber that was there from the
    start and by a transient-local late joiner after the growth, and the
    channel left under the name holds the largest."""
    count = {"path": "6", "text": "11"}.get(kind, "5")
    sub = node(domain, "grow_sub", kind, count)
    expect(sub, "ready")
    pub = node(domain, "grow_pub", kind, "1")
    try:
        expect(pub, "ready")
        published = json.loads(expect(pub, "published"))["published"]
        got = result(sub)["got"]
        late = node(domain, "grow_sub", kind, str(len(published)))
        expect(late, "ready")
        late_got = result(late)["got"]
        st = nerve.stat(f"ros2-d{domain}.grow")
    finally:
        pub.kill()
        pub.communicate()
    want = [[i, n, True] for i, n in enumerate(published)]
    assert got == want, f"the subscriber got {got}"
    assert late_got == want, f"the late joiner got {late_got}"
    # Grown from the first message's 64 KiB to hold the largest twice.
    largest = 10_000 * 64 if kind == "path" else max(published)
    assert st.data_size >= 2 * largest


def test_a_leftover_small_channel_grows(domain):
    """An earlier run's channel, made for small messages, is grown for
    larger ones rather than "used as it is"."""
    nerve.create(f"ros2-d{domain}.grow", slots=10, size=65536, type="sensor_msgs/msg/Image",
                 encoding="cdr")
    sub = node(domain, "grow_sub", "image", "5")
    expect(sub, "ready")
    pub = node(domain, "grow_pub", "image", "1")
    try:
        expect(pub, "ready")
        json.loads(expect(pub, "published"))
        got = result(sub)["got"]
    finally:
        pub.kill()
        pub.communicate()
    assert [g[1] for g in got] == [100, 1000, 100_000, 1_000_000, 4_000_000]
    assert all(g[2] for g in got)


def test_graph_changes_and_kill(domain):
    watcher = node(domain, "graph")
    expect(watcher, "ready")
    other = node(domain, "graph_other")
    try:
        expect(other, "ready")
        expect(watcher, "kill")
        other.send_signal(signal.SIGKILL)
        other.wait(timeout=30)
        r = result(watcher, "\n")
    finally:
        other.kill()
        other.communicate()
    assert r["with_other"] == [1, 1]
    assert r["pub_info"] == [["other", "/ns1", "std_msgs/msg/String"]]
    # REP 2011 hash of std_msgs/msg/String (Jazzy's type description).
    assert len(r["pub_hash"]) == 1 and r["pub_hash"][0].startswith("RIHS01_")
    assert r["pub_hash"][0] != "RIHS01_" + "0" * 64
    assert r["topics"]["/g/topic"] == ["std_msgs/msg/String"]
    assert r["after_kill"] == [0, 0]
    assert r["nodes_after"] == ["watcher"]
    assert r["own_topic"]
    assert r["after_kill_got"] == ["after"]


def test_foreign_and_corrupt_channels(domain):
    foreign = nerve.create(f"ros2-d{domain}.foreign", slots=4, size=4096, type="foo/msg/Bar",
                           encoding="raw")
    foreign.close()
    corrupt = nerve.create(f"ros2-d{domain}.corrupt", slots=16, size=65536,
                           type="std_msgs/msg/String", encoding="cdr")
    bad = node(domain, "bad")
    try:
        expect(bad, "ready")
        corrupt.put(b"\x00\x01\x00\x00\xff\xff\xff\x7fnot a string")  # length past the end
        corrupt.put(b"\x01")  # shorter than an encapsulation header
        valid = b"valid"
        corrupt.put(b"\x00\x01\x00\x00" + (len(valid) + 1).to_bytes(4, "little") + valid + b"\0")
        # The channel the subscription to /late made (a subscription makes
        # its topic's channel, to hold it), written by no ROS node.
        with nerve.open(f"ros2-d{domain}.late", write=True) as late:
            late.put(b"\x00\x01\x00\x00\x05\x00\x00\x00late\x00")
        r = result(bad)
    finally:
        corrupt.close()
    # The subscription's message may reach stderr only (test_keep_all_is_refused).
    assert r["sub"] is not None
    said = ("subscription to '/foreign': channel 'ros2-d%d.foreign': the channel carries type "
            "'foo/msg/Bar' encoding 'raw', not type 'std_msgs/msg/String'" % domain)
    assert said in r["sub"] or said in r["_stderr"]
    assert "carries type 'foo/msg/Bar' encoding 'raw'" in r["pub"]
    assert r["corrupt_got"] == ["valid"]
    assert r["late_got"] == ["late"]
    assert ("carries type 'std_msgs/msg/String' encoding 'cdr', not type 'std_msgs/msg/Int32'"
            in r["other_type"])
    assert "is not a CDR std_msgs/msg/String; skipped" in r["_stderr"]




def test_domains_do_not_see_each_other(domain):
    other = node(domain + 1, "graph_other")  # domain + 1: cleaned up below
    try:
        expect(other, "ready")
        r = result(node(domain, "init_only"))
    finally:
        other.kill()
        other.communicate()
        for info in nerve.list_channels():
            if info.name.startswith((f"ros2-d{domain + 1}.", f"ros2-graph-d{domain + 1}.")):
                nerve.unlink(info.name)
    assert r["init"] is None and r["nodes"] == ["init_only"]


def test_graph_channel_garbage_and_foreign(domain):
    # Garbage in the graph channel (anyone who may write it could write
    # anything) is ignored; the node starts and sees itself.
    mine = f"ros2-graph-d{domain}.u{os.geteuid()}"  # this user's graph channel
    g = nerve.create(mine, slots=4096, size=4 << 20, type="rmw_nerve/graph",
                     encoding="text")
    g.put(b"nerve-rmw-graph 2 zz 1 live\nE X")
    g.put(b"\xff\xfe garbage")
    g.put(b"nerve-rmw-graph 2 0123456789abcdef 1 live\nN 1 ghost / /\nE P 1 00 /t x 1 1 1 1 1\n")
    # A well-formed message of another format version (1: no liveliness).
    g.put(b"nerve-rmw-graph 1 0123456789abcdee %d live\nN 1 ghost1 / /\n" % os.getpid())
    g.close()
    r = result(node(domain, "init_only"))
    assert r["init"] is None and r["nodes"] == ["init_only"]
    # A channel of another kind under the graph's name: init fails, saying so.
    nerve.unlink(mine)
    nerve.create(mine, slots=4, size=4096, type="foo/msg/Bar",
                 encoding="raw").close()
    r = result(node(domain, "init_only"))
    assert f"graph channel '{mine}': the channel carries type 'foo/msg/Bar'" in r["init"]


def plant_as_nobody(name: str, type_: str, encoding: str, slots: int, size: int) -> None:
    """A channel of the right type and mode 0666 that user nobody owns, as
    if nobody had created it before any node started (issue 41, item 1)."""
    nerve.create(name, slots=slots, size=size, type=type_, encoding=encoding,
                 mode=0o666).close()
    for path in (f"/dev/shm/nerve.{name}", f"/dev/shm/nerve-bell.{name}"):
        os.chown(path, 65534, 65534)


def test_planted_channels_of_another_user_are_refused(domain):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a channel to user nobody")
    plant_as_nobody(f"ros2-d{domain}.planted", "std_msgs/msg/String", "cdr", 16, 65536)
    r = result(node(domain, "planted"))
    said = "owned by uid 65534 (nobody), who is not trusted"
    # The subscription opens the channel later and says so on stderr.
    assert said in (r["sub"] or "") + r["_stderr"] and said in r["pub"], r

    def planted(trust: str) -> dict:
        return result(subprocess.Popen(
            [*EXEC, PY, str(HERE / "nodes.py"), "planted"],
            env=dict(os.environ, ROS_DOMAIN_ID=str(domain), NERVE_RMW_TRUST_USERS=trust),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE, text=True))

    # A setting that names no user is an error that says so.
    r = planted("no-such-user-41")
    assert "NERVE_RMW_TRUST_USERS names no user: 'no-such-user-41'" in r["pub"], r
    # Trusted by name, but mode 0666 lets anyone write (and truncate) it:
    # still refused, saying why; with mode 0644 the same node uses it.
    r = planted("daemon,nobody")
    assert "has mode 0666: users who are not trusted may write it" in r["pub"], r
    for path in (f"/dev/shm/nerve.ros2-d{domain}.planted",
                 f"/dev/shm/nerve-bell.ros2-d{domain}.planted"):
        os.chmod(path, 0o644)
    r = planted("daemon,nobody")
    assert r["sub"] is None and r["pub"] is None, r


def test_graph_squatted_by_another_user(domain):
    """User nobody makes this user's graph channel first and a graph of its
    own holding a fake node: nodes start anyway, see each other through a
    channel of their own, and never the fake node (issue 41, item 1)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give a channel to user nobody")
    me = f"ros2-graph-d{domain}.u0"
    plant_as_nobody(me, "rmw_nerve/graph", "text", 4096, 4 << 20)
    plant_as_nobody(f"ros2-graph-d{domain}.u65534", "rmw_nerve/graph", "text", 16, 65536)
    g = nerve.open(f"ros2-graph-d{domain}.u65534", write=True)
    g.put(b"nerve-rmw-graph 2 0123456789abcdef %d live\nN 1 ghost / /\n" % os.getpid())
    g.close()
    other = node(domain, "graph_other")
    try:
        expect(other, "ready")
        r = result(node(domain, "init_only"))
    finally:
        other.kill()
        other.communicate()
    assert r["init"] is None and sorted(r["nodes"]) == ["init_only", "other"], r
    err = r["_stderr"]
    assert f"graph channel '{me}' refused: the channel's file is owned by uid 65534" in err, err
    assert f"using '{me}." in err, err
    assert (f"graph channel 'ros2-graph-d{domain}.u65534' not read: the channel's file is "
            "owned by uid 65534 (nobody)" in err), err


def test_truncation_by_another_user_under_a_live_node(domain):
    """A channel root owns with mode 0666, and a graph channel of nobody's:
    a node uses neither, so when nobody truncates both (setpriv) the node
    lives on; before, it died of SIGBUS (issue 41, item 1)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to act as user nobody")
    topic = f"ros2-d{domain}.planted"
    nerve.create(topic, slots=16, size=65536, type="std_msgs/msg/String",
                 encoding="cdr", mode=0o666).close()
    plant_as_nobody(f"ros2-graph-d{domain}.u65534", "rmw_nerve/graph", "text", 16, 65536)
    p = node(domain, "planted_live")
    line = expect(p, "pub")
    assert "has mode 0666: users who are not trusted may write it" in line, line
    for name in (topic, f"ros2-graph-d{domain}.u65534"):
        for path in (f"/dev/shm/nerve.{name}", f"/dev/shm/nerve-bell.{name}"):
            subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            "truncate", "-s", "0", path], check=True)
            assert os.path.getsize(path) == 0
    r = result(p, "go\n")
    assert r["alive"] and r["nodes"] == ["planted_live"], r


def _until_exists(path: str, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.05)
    return os.path.exists(path)


def test_truncation_by_a_trusted_writer_is_not_defended(domain):
    """What stays trusted by design (docs/ros2.md, "Trusted owners"): the
    node's own user truncating a channel the node uses makes the node
    fault with SIGBUS on its next publish; no guard catches it."""
    p = node(domain, "planted_live")
    line = expect(p, "pub")
    assert '"pub": null' in line, line
    name = f"ros2-d{domain}.planted"
    assert _until_exists(f"/dev/shm/nerve.{name}"), sorted(os.listdir("/dev/shm"))
    os.truncate(f"/dev/shm/nerve.{name}", 0)
    out, err = p.communicate("go\n", timeout=90)
    assert p.returncode in (-signal.SIGBUS, 128 + signal.SIGBUS), (p.returncode, out, err)


def test_graph_bounds_big_message_and_non_utf8_names(domain):
    """A 3 MiB graph message of fake nodes is skipped unread, a node name of
    bytes \\xff\\xfe is skipped, and rclpy's get_node_names_and_namespaces
    neither raises nor lists them; each skip says one line (issue 41, 4)."""
    g = nerve.create(f"ros2-graph-d{domain}.u{os.geteuid()}", slots=4096, size=8 << 20,
                     type="rmw_nerve/graph", encoding="text")
    ctx = 0x0123456789abcdef
    fake = b"".join(b"N %d fake%d / /\n" % (i, i) for i in range(300000))
    assert len(fake) > 3 << 20
    g.put(b"nerve-rmw-graph 2 %016x %d live\n" % (ctx, os.getpid()) + fake)
    small = b"nerve-rmw-graph 2 %016x %d live\nN 1 \xff\xfe / /\nN 2 fine / /\n" % (
        ctx + 1, os.getpid())
    # As a live process does, say it again every 0.3 s: a context not heard
    # from for 2 s is dropped, and a node may take longer to start.
    done = threading.Event()

    def again() -> None:
        while not done.is_set():
            g.put(small)
            done.wait(0.3)

    t = threading.Thread(target=again)
    t.start()
    try:
        r = result(node(domain, "init_only"))
    finally:
        done.set()
        t.join()
        g.close()
    assert r["init"] is None, r
    assert sorted(r["nodes"]) == ["fine", "init_only"], r
    assert r["_stderr"].count("a message over 1 MiB skipped") == 1, r["_stderr"]
    assert r["_stderr"].count("a name that is not valid UTF-8 skipped") == 1, r["_stderr"]


def _shm_of(domain: int) -> set[str]:
    """The domain's files in /dev/shm, its graph channel aside."""
    return {f for f in os.listdir("/dev/shm")
            if f"ros2-d{domain}." in f and f"ros2-graph-d{domain}." not in f}


def _sweep(domain: int) -> int:
    """nerve_chan_sweep_unused() on the domain, as the next rmw_nerve
    context's init does: rcl does not destroy a node's
    get_type_description service before the process exits, so the last
    node's two channels wait for the next sweep of the domain."""
    import ctypes

    lib = next(d / "libnerve.so.1" for d in Path(LIB).resolve().parents
               if (d / "libnerve.so.1").exists())
    n = ctypes.c_uint(0)
    rc = ctypes.CDLL(str(lib)).nerve_chan_sweep_unused(f"ros2-d{domain}.".encode(),
                                                       ctypes.byref(n))
    assert rc == 0
    return n.value


@pytest.mark.timeout(900)
def test_nothing_left_behind(domain):
    """Issue 35 item 2: 200 starts of anonymous-name nodes (topic, service,
    the seven parameter services each), half ended with kill -9: the
    domain's channels that rmw_nerve made are gone afterwards; one made with
    `nerve create` and one that `nerve echo` holds open stay."""
    starts = int(os.environ.get("NERVE_TEST_LIFE_STARTS", "200"))
    before = _shm_of(domain)
    bindir = Path(sys.executable).parent
    kept = f"ros2-d{domain}.kept"
    with nerve.create(kept, slots=4, size=4096):
        pass
    # A topic whose node ends while `nerve echo` still reads it.
    holder = node(domain, "life", "held")
    expect(holder, "ready")
    echo = subprocess.Popen([str(bindir / "nerve-echo"), f"ros2-d{domain}.held",
                             "--timeout", "600"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        batch = 20
        for first in range(0, starts, batch):
            ps = [node(domain, "life") for _ in range(min(batch, starts - first))]
            for p in ps:
                expect(p, "ready")
            for i, p in enumerate(ps):
                if (first + i) % 2:
                    p.kill()
                    p.communicate(timeout=60)
                else:
                    assert result(p, "")["ok"]
        result(holder, "")
        assert echo.poll() is None, echo.stderr.read()
        # A last node's start sweeps what the killed ones left; it removes
        # its own channels when it ends.
        result(node(domain, "life"), "")
        assert _sweep(domain) == 2  # the last node's type description
        left = _shm_of(domain) - before
        assert left == {f"nerve.{kept}", f"nerve-bell.{kept}",
                        f"nerve.ros2-d{domain}.held", f"nerve-bell.ros2-d{domain}.held"}, \
            sorted(left)
    finally:
        echo.kill()
        echo.wait(timeout=30)
    # Once `nerve echo` is gone, the next sweep collects the held topic;
    # the created channel stays until removed by hand.
    result(node(domain, "life"), "")
    assert _sweep(domain) == 2
    assert _shm_of(domain) - before == {f"nerve.{kept}", f"nerve-bell.{kept}"}
    nerve.unlink(kept)
