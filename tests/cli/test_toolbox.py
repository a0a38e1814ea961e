"""The integrator's verbs of the `nerve` command, run through the C command
(`nerve VERB` -> nerve-VERB): echo, pub, hz, bw, delay, who, graph, and
`ls PATTERN`/`--watch`. Golden files in tests/cli/golden/ pin the printed
text (volatile numbers normalised). Runs in `make test-toolbox` (pytest,
the tools' virtual environment on the PATH, NERVE_CLI = the built command).

Channel names start with "nt-<pid>-"; every channel made is removed and the
session fails if one is left in /dev/shm. Processes started are killed in
teardown; every wait has a timeout."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Tuple

import pytest

import nerve
import nerve.testing
from nerve_tools.codec import schemas

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
NERVE = os.environ.get("NERVE_CLI") or "nerve"
PREFIX = nerve.testing.PREFIX
IMU = "sensor_msgs/msg/Imu"


def run(*args: str, input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([NERVE, *args], input=input, capture_output=True, timeout=timeout)


def ok(*args: str, input: bytes | None = None) -> str:
    p = run(*args, input=input)
    assert p.returncode == 0, f"nerve {' '.join(args)}: exit {p.returncode}: {p.stderr.decode()}"
    return p.stdout.decode()


def golden(tag: str, text: str) -> None:
    path = GOLDEN / f"{tag}.txt"
    if os.environ.get("NERVE_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"no golden file {path} (NERVE_UPDATE_GOLDEN=1 writes it)"
    assert text == path.read_text(), f"golden {tag} differs:\n{text}"


def norm(text: str, *names: str) -> str:
    for i, n in enumerate(names):
        text = text.replace(n, f"<chan{i}>")
    return text


# ---- echo / pub round trips, one per encoding ---------------------------

IMU_VALUE = "{header: {stamp: {sec: 5, nanosec: 7}, frame_id: base}, linear_acceleration: {z: 9.5}}"


@pytest.mark.parametrize("encoding", ["cdr", "ros1msg"])
def test_echo_pub_ros(name, encoding) -> None:
    ch = name("imu")
    nerve.create(ch, slots=16, size=1 << 16, **schemas.channel_options(IMU, encoding)).close()
    out = ok("pub", ch, IMU_VALUE)
    assert out.startswith("published 1 message")
    text = ok("echo", ch, "--all", "--count", "1")
    golden(f"echo_{encoding}", text)
    # The bytes are what rosbags makes of the same message.
    with nerve.open(ch) as r:
        data = r.get(seq=1).data
    msg = schemas.decode(data, IMU, encoding)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (5, 7, "base")
    assert msg.linear_acceleration.z == 9.5
    js = json.loads(ok("echo", ch, "--all", "--count", "1", "--json"))
    assert js["seq"] == 1 and js["value"]["linear_acceleration"]["z"] == 9.5
    assert ok("echo", ch, "--all", "--count", "1", "--field", "header.frame_id") == "base\n---\n"
    golden(f"echo_{encoding}_noarrays",
           ok("echo", ch, "--all", "--count", "1", "--no-arrays", "--field", "header"))
    na = ok("echo", ch, "--all", "--count", "1", "--no-arrays")
    assert "orientation_covariance: <9 items>" in na


def test_echo_pub_json(name) -> None:
    ch = name("pose")
    nerve.create(ch, slots=16, size=4096, type="demo.Pose", encoding="json").close()
    ok("pub", ch, '{"x": 1.5, "tags": ["a", "b"], "ok": true}')
    ok("pub", ch, "{x: 2, tags: [], ok: false}")  # YAML works too
    golden("echo_json", ok("echo", ch, "--all", "--count", "2"))
    lines = ok("echo", ch, "--all", "--count", "2", "--json").splitlines()
    assert [json.loads(x)["value"]["x"] for x in lines] == [1.5, 2]
    with nerve.open(ch) as r:
        assert json.loads(r.get(seq=1).data) == {"x": 1.5, "tags": ["a", "b"], "ok": True}


def test_echo_follows_a_channel_that_grows(name) -> None:
    """`nerve echo` waiting on a channel that a writer grows (GROWTH) goes
    on with the successor: every message, in order, then the large one."""
    ch = name("grows")
    w = nerve.create(ch, slots=16, size=4096, type="demo.Blob", encoding="json")
    w.put(json.dumps({"n": 1}).encode())
    echo = subprocess.Popen([NERVE, "echo", ch, "--all", "--count", "3", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # into its wait on the small channel (a later start also passes)
        w.grow(1 << 16)
        w.put(json.dumps({"n": 2}).encode())
        w.put(json.dumps({"n": 3, "pad": "x" * 20_000}).encode())
        out, err = echo.communicate(timeout=60)
    finally:
        echo.kill()
        w.close()
    assert echo.returncode == 0, err
    values = [json.loads(x)["value"] for x in out.splitlines()]
    assert [v["n"] for v in values] == [1, 2, 3]
    assert len(values[2]["pad"]) == 20_000


def _pose_descriptor_set() -> bytes:
    from google.protobuf import descriptor_pb2

    fd = descriptor_pb2.FileDescriptorProto(name="pose.proto", package="demo", syntax="proto3")
    m = fd.message_type.add(name="Pose")
    T = descriptor_pb2.FieldDescriptorProto
    m.field.add(name="x", number=1, type=T.TYPE_DOUBLE, label=T.LABEL_OPTIONAL)
    m.field.add(name="frame", number=2, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    m.field.add(name="ids", number=3, type=T.TYPE_INT32, label=T.LABEL_REPEATED)
    return descriptor_pb2.FileDescriptorSet(file=[fd]).SerializeToString()


def test_echo_pub_protobuf(name) -> None:
    ch = name("pb")
    nerve.create(ch, slots=16, size=4096, type="demo.Pose", encoding="protobuf",
                 schema=_pose_descriptor_set()).close()
    ok("pub", ch, "{x: 0.25, frame: map, ids: [3, 4]}")
    golden("echo_protobuf", ok("echo", ch, "--all", "--count", "1"))
    with nerve.open(ch) as r:
        data = r.get(seq=1).data
    # Decoded independently: protobuf's own parser on the message class.
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(_pose_descriptor_set()).file:
        pool.Add(f)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("demo.Pose"))
    m = cls.FromString(data)
    assert (m.x, m.frame, list(m.ids)) == (0.25, "map", [3, 4])
    p = run("pub", ch, "{nope: 1}")
    assert p.returncode == 2 and b"nope" in p.stderr


def test_echo_pub_raw_and_undecodable(name) -> None:
    raw, js = name("raw"), name("js")
    nerve.create(raw, slots=16, size=4096).close()
    nerve.create(js, slots=16, size=4096, encoding="json").close()
    ok("pub", raw, "hello world")
    ok("pub", raw, "--file", "-", input=b"\x00\x01\xfe")
    golden("echo_raw", ok("echo", raw, "--all", "--count", "2"))
    with nerve.open(raw) as r:
        assert r.get(seq=1).data == b"hello world" and r.get(seq=2).data == b"\x00\x01\xfe"
    with nerve.open(js, write=True) as w:
        w.put(b"{not json")
    golden("echo_undecodable", ok("echo", js, "--all", "--count", "1"))
    e = json.loads(ok("echo", js, "--all", "--count", "1", "--json"))
    assert e["hex"] == b"{not json".hex() and "not a valid json" in e["error"]


def test_pub_rate_count_and_errors(name) -> None:
    ch = name("rate")
    nerve.create(ch, slots=64, size=4096, encoding="json").close()
    lines = ok("pub", ch, "{a: 1}", "--rate", "200", "--count", "5", "--json").splitlines()
    assert [json.loads(x)["seq"] for x in lines] == [1, 2, 3, 4, 5]
    assert run("pub", ch, "{a: 1}", "--rate", "0").returncode == 2
    assert run("pub", ch).returncode == 2                       # no value
    assert run("pub", "bad/name", "1").returncode == 2          # bad channel name
    p = run("pub", f"{PREFIX}missing", "1")
    assert p.returncode == 1 and b"no such channel" in p.stderr.lower(), p.stderr
    p = run("echo", ch, "--all", "--count", "1", "--field", "b")
    assert p.returncode == 2 and b"no field 'b'" in p.stderr
    p = run("echo", ch, "--timeout", "0.2")
    assert p.returncode == 1 and b"no message for 0.2 s" in p.stderr
    small = name("small")
    nerve.create(small, slots=4, size=4096).close()
    p = run("pub", small, "--file", "-", input=b"x" * 10000)
    assert p.returncode == 1 and b"EMSGSIZE: a message of 10000 bytes" in p.stderr, p.stderr
    assert b"data ring is 4096 bytes" in p.stderr


def test_pub_example(name) -> None:
    ch = name("imu")
    nerve.create(ch, slots=16, size=1 << 16, **schemas.channel_options(IMU)).close()
    ex = json.loads(ok("pub", ch, "--example"))
    assert ex["header"]["stamp"] == {"sec": 0, "nanosec": 0}
    # The definition's defaults (geometry_msgs/Quaternion: float64 w 1), as
    # rclpy's Imu() has them, and as the channel's schema text says.
    assert ex["orientation"] == {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}
    with nerve.open(ch) as c:
        assert "\nfloat64 w 1\n" in bytes(c.metadata.schema).decode()
    # A value that leaves the orientation out gets the default too.
    ok("pub", ch, "{linear_acceleration: {z: 9.81}}", "-q")
    got = json.loads(ok("echo", ch, "--all", "-n", "1", "--json", "--timeout", "30"))
    got = got["value"]
    assert got["orientation"]["w"] == 1.0 and got["linear_acceleration"]["z"] == 9.81
    assert nerve.open(ch).stat().head_seq == 1


def test_pub_takes_ros2_topic_pub_order(name) -> None:
    """`nerve pub NAME TYPE VALUE` (the `ros2 topic pub` habit): the type is
    checked against the channel's; a type where the value goes is told so."""
    ch = name("imu")
    nerve.create(ch, slots=16, size=1 << 16, **schemas.channel_options(IMU)).close()
    ok("pub", ch, IMU, "{linear_acceleration: {z: 2.5}}", "-q")
    ok("pub", ch, "sensor_msgs/Imu", "{}", "-q")
    got = json.loads(ok("echo", ch, "--all", "-n", "1", "--json", "--timeout", "30"))
    assert got["value"]["linear_acceleration"]["z"] == 2.5
    for args, words in (([ch, "geometry_msgs/msg/Twist", "{}"],
                         "carries sensor_msgs/msg/Imu, not geometry_msgs/msg/Twist"),
                        ([ch, IMU], "is a message type, not a value"),
                        ([ch, "geometry_msgs/msg/Twist"], "is a message type, not a value"),
                        ([ch, "not-a-type", "{}"], "'not-a-type' is not a message type")):
        p = run("pub", *args)
        assert p.returncode == 2 and words.encode() in p.stderr, (args, p.stderr)
    assert nerve.open(ch).stat().head_seq == 2


# ---- hz, bw, delay -------------------------------------------------------

def _publisher(ch: str, value: str, rate: int, count: int) -> subprocess.Popen:
    return subprocess.Popen([NERVE, "pub", ch, value, "--rate", str(rate), "--count", str(count),
                             "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.parametrize("verb", ["hz", "bw", "delay"])
def test_rates(name, procs, verb) -> None:
    ch = name(verb)
    # A ring for 80 s of the publisher: the monitor, descheduled for
    # seconds on a loaded host, still misses nothing.
    nerve.create(ch, slots=8192, size=4 << 20, **schemas.channel_options(IMU)).close()
    # The publisher first, and until the monitor is done: the monitor
    # follows from its start, whenever a loaded host lets it start.
    pub = _publisher(ch, "{header: {stamp: now}}", 100, 6000)
    procs.append(pub)
    with nerve.open(ch) as r:
        assert r.get(wait=True, timeout=60) is not None, "the publisher put nothing"
    mon = subprocess.Popen([NERVE, verb, ch, "--every", "0.5", "--reports", "3", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    procs.append(mon)
    out, err = mon.communicate(timeout=60)
    pub.kill()
    pub.communicate(timeout=60)
    assert mon.returncode == 0, err.decode()
    reports = [json.loads(x) for x in out.decode().splitlines()]
    assert len(reports) == 3
    last = reports[-1]
    assert last["messages"] > 2 and last["missed"] == 0
    assert 2 <= last["window"] <= 100
    keys = {"hz": {"rate_hz", "min_ns", "max_ns", "std_dev_ns"},
            "bw": {"bytes_per_s", "mean_size", "min_size", "max_size"},
            "delay": {"delay_ns", "min_ns", "max_ns", "stamp_delay_ns", "stamp_window"}}[verb]
    assert keys <= set(last), last
    if verb == "bw":
        size = len(nerve.open(ch).get(newest=True).data)
        assert last["mean_size"] == size == last["min_size"] == last["max_size"]
    if verb == "delay":
        assert last["delay_ns"] >= 0 and last["min_ns"] >= 0


def test_rates_text_and_usage(name) -> None:
    ch = name("quiet")
    nerve.create(ch, slots=16, size=4096).close()
    for verb in ("hz", "bw", "delay"):
        assert ok(verb, ch, "--every", "0.1", "--reports", "1") == "no new messages\n"
        assert run(verb, ch, "--window", "1").returncode == 2
        assert run(verb, "bad/name").returncode == 2


# ---- who, graph ----------------------------------------------------------

HOLDER = """
import sys, time, nerve
r = nerve.open(sys.argv[1])
w = nerve.open(sys.argv[2], write=True)
with w.reserve(16):
    print("ready", flush=True)
    time.sleep(60)
"""


def test_who_and_graph(name, procs, tmp_path) -> None:
    a, b = name("a"), name("b")
    for n in (a, b):
        nerve.create(n, slots=16, size=4096).close()
    reader = subprocess.Popen([sys.executable, "-c",
                               "import sys, time, nerve\nr = nerve.open(sys.argv[1])\n"
                               "print('ready', flush=True)\ntime.sleep(60)", a],
                              stdout=subprocess.PIPE)
    procs.append(reader)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, a, b], stdout=subprocess.PIPE)
    procs.append(holder)
    for p in (reader, holder):
        assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    res = json.loads(ok("who", f"{PREFIX}*", "--json"))
    uses = {(u["channel"], u["pid"]): u for u in res["uses"]}
    assert uses[(a, reader.pid)]["access"] == "read"
    assert uses[(a, holder.pid)]["access"] == "read"
    assert uses[(b, holder.pid)]["access"] == "write"
    assert len(uses) == 3, res
    u = uses[(b, holder.pid)]
    assert u["user"] and u["pidns"].startswith("pid:[") and u["same_pidns"] is True
    assert "reserve" in Path(f"/proc/{holder.pid}/cmdline").read_text() and "python" in u["command"]
    holders = {h["channel"]: h for h in res["lock_holders"]}
    assert set(holders) == {b} and holders[b]["pid"] == holder.pid
    # Text form, with the pids and the interpreter replaced.
    text = ok("who", a, b)
    rows = []
    for line in text.splitlines():
        if line.startswith(PREFIX) and ": writer lock" not in line:
            f = line.split(None, 6)
            if len(f) == 7:  # CHANNEL PID ACCESS USER PIDNS CONTAINER COMMAND
                f[3], f[4], f[6] = "<user>", "<ns>", "<command>"
                line = " ".join(f)
        elif line.startswith(PREFIX):  # the lock holder line
            line = re.sub(r"\(pid (\d+), .*\)$", r"(pid \1, <command>)", line)
        rows.append(" ".join(line.split()))
    text = "\n".join(r for r in rows if "could not be inspected" not in r) + "\n"
    text = re.sub(r"\b%d\b" % reader.pid, "<reader>", text)
    text = re.sub(r"\b%d\b" % holder.pid, "<holder>", text)
    golden("who", norm(text, a, b))
    # graph: DOT with both channels, the writer edge bold (lock holder).
    d = ok("graph", f"{PREFIX}*")
    assert d.startswith("digraph nerve {")
    assert f'p{holder.pid} -> "c:{b}" [color=firebrick, style=bold, label="lock"];' in d
    assert f'"c:{a}" -> p{reader.pid} [color=steelblue];' in d
    assert f'"c:{a}" -> p{holder.pid} [color=steelblue];' in d
    svg = tmp_path / "g.svg"
    if os.path.exists("/usr/bin/dot"):
        ok("graph", f"{PREFIX}*", "-o", str(svg))
        assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))
    else:
        print("SKIP svg: graphviz's dot is not installed", file=sys.stderr)
    # Readers of who write nothing: the channel files are unchanged.
    before = Path(f"/dev/shm/nerve.{a}").read_bytes()
    ok("who", a)
    assert Path(f"/dev/shm/nerve.{a}").read_bytes() == before
    # Nobody: after the processes ended.
    for p in (reader, holder):
        p.kill()
        p.communicate(timeout=10)
    assert ok("who", a) == "no process has a matching channel open\n" or "could not be inspected" in ok("who", a)


MAPPER = r"""
import mmap, os, sys, time
path, how = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDWR if how in ("fd-rw", "shared-rw") else os.O_RDONLY)
maps = []
if how == "private":
    # Copy-on-write: writes stay in this process; any reader may do this.
    maps.append(mmap.mmap(fd, 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE))
    maps[0][0:1] = b"X"
elif how in ("shared-ro", "fd-rw"):
    maps.append(mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ))
elif how == "shared-rw":
    maps.append(mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE))
print("ready", flush=True)
time.sleep(60)
"""


def start_mapper(procs: List[subprocess.Popen], path: str, how: str, user: str = "") -> subprocess.Popen:
    """A process that maps (or only opens) `path` as `how` says, as `user`
    (setpriv) if given. The system python: no venv needed by `nobody`."""
    cmd = ["/usr/bin/python3", "-c", MAPPER, path, how]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user if user != 'nobody' else 'nogroup'}",
               "--clear-groups", *cmd]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    procs.append(p)
    assert p.stdout is not None and p.stdout.readline() == b"ready\n", how
    return p


def who_access(pattern: str) -> Tuple[dict, dict]:
    res = json.loads(ok("who", pattern, "--json"))
    return {u["pid"]: u["access"] for u in res["uses"]}, res


def test_who_writer_only_where_it_could_write(name, procs) -> None:
    """`nobody` may only read root's 0644 channel: its read-only and its
    private writable mappings are reads. A writer is a shared writable
    mapping or a descriptor opened for writing (issue 28, item 4)."""
    if os.geteuid() != 0 or not os.path.exists("/usr/bin/setpriv"):
        pytest.skip("needs root and setpriv to map a channel as user nobody")
    n = name("truth")
    nerve.create(n, slots=8, size=4096, mode=0o644).close()
    path = f"/dev/shm/nerve.{n}"
    before = Path(path).read_bytes()
    ro = start_mapper(procs, path, "shared-ro", "nobody")
    priv = start_mapper(procs, path, "private", "nobody")
    rw = start_mapper(procs, path, "shared-rw")
    fd_rw = start_mapper(procs, path, "fd-rw")
    fd_only = start_mapper(procs, path, "fd-only")
    acc, _ = who_access(n)
    assert acc.get(ro.pid) == "read"
    assert acc.get(priv.pid) == "read", "a private writable mapping is not a writer"
    assert acc.get(rw.pid) == "write"
    assert acc.get(fd_rw.pid) == "write", "a descriptor open for writing is"
    assert acc.get(fd_only.pid) == "read"
    # The private mapping's write reached nobody's copy only.
    assert Path(path).read_bytes() == before


def test_who_reads_lock_owners_only_from_channels(name, procs) -> None:
    """A planted file that is not a channel (nerve check: ENOTCHAN) whose
    bytes at the lock word's offset name PID 1 names no lock holder; nor
    do a FIFO, a symlink or a sparse file under a channel's name; a real
    channel's holder is still found (issue 28, item 4)."""
    planted, fifo, link, sparse = name("planted"), name("fifo"), name("link"), name("sparse")
    paths = [f"/dev/shm/nerve.{x}" for x in (planted, fifo, link, sparse)]
    try:
        word = (1).to_bytes(4, "little")
        Path(paths[0]).write_bytes(b"\0" * 128 + word + b"\0" * (8192 - 132))
        os.mkfifo(paths[1])
        os.symlink(paths[0], paths[2])
        with open(paths[3], "wb") as f:
            f.truncate(1 << 20)
        assert run("check", planted).returncode == 1
        mapper = start_mapper(procs, paths[0], "shared-ro")
        res = json.loads(ok("who", f"{PREFIX}*", "--json"))
        assert {u["pid"] for u in res["uses"]} >= {mapper.pid}
        assert res["lock_holders"] == [], res
        assert "writer lock" not in ok("who", f"{PREFIX}*")
    finally:
        for p in paths:
            if os.path.lexists(p):
                os.unlink(p)
    # A real channel with its lock held is still reported.
    b = name("held")
    nerve.create(b, slots=8, size=4096).close()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, b, b], stdout=subprocess.PIPE)
    procs.append(holder)
    assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
    res = json.loads(ok("who", b, "--json"))
    assert [h["pid"] for h in res["lock_holders"]] == [holder.pid]


def test_who_under_churn(name, procs) -> None:
    """Processes that open a channel and exit while who scans, and many
    handles in one process: every scan completes and lists what it saw."""
    n = name("churn")
    nerve.create(n, slots=8, size=4096).close()
    many = subprocess.Popen([sys.executable, "-c",
                             "import sys, time, nerve\nhs = [nerve.open(sys.argv[1]) for _ in range(500)]\n"
                             "print('ready', flush=True)\ntime.sleep(60)", n], stdout=subprocess.PIPE)
    procs.append(many)
    assert many.stdout is not None and many.stdout.readline() == b"ready\n"
    churn = subprocess.Popen([sys.executable, "-c",
                              "import subprocess, sys, time\nend = time.monotonic() + 3\n"
                              "while time.monotonic() < end:\n"
                              "    subprocess.run([sys.executable, '-c', 'import nerve, sys; nerve.open(sys.argv[1])',"
                              " sys.argv[1]])\n", n])
    procs.append(churn)
    for _ in range(5):
        acc, _ = who_access(n)
        assert acc.get(many.pid) == "read"
    churn.wait(timeout=60)


# ---- ls patterns and --watch (C) ------------------------------------------

def test_ls_pattern_and_watch(name) -> None:
    a, b = name("lsa"), name("lsb")
    for n in (a, b):
        nerve.create(n, slots=8, size=4096).close()
    out = ok("ls", f"{PREFIX}*-lsa")
    assert a in out and b not in out
    out = ok("ls", f"{PREFIX}*-lsa", f"{PREFIX}*-lsb", "--json")
    assert [e["name"] for e in json.loads(out)] == [a, b]
    assert json.loads(ok("ls", f"{PREFIX}no-such-*", "--json")) == []
    out = ok("ls", a, "--watch", "--count", "3", "--interval", "0.05")
    assert out.count("NAME") == 3 and out.count(a) == 3
    assert run("ls", "--watch", "--interval", "0").returncode == 2
    golden("ls_pattern", re.sub(r" +", " ", norm(ok("ls", a), a)))


def test_no_leftovers_in_shm() -> None:
    """Runs last in this file: no channel of this process is left."""
    left = sorted(p.name for p in Path("/dev/shm").glob(f"nerve*.{PREFIX}*"))
    assert not left, left


# ---- shell completion ----------------------------------------------------

COMPLETION = HERE.parent.parent / "tools" / "completion"


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{Path(NERVE).resolve().parent}:{env['PATH']}" if os.sep in NERVE else env["PATH"]
    return env


def _bash_complete(*words: str) -> List[str]:
    script = ('. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _nerve; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "--norc", "-c", script, "_", str(COMPLETION / "nerve.bash"), *words],
                       capture_output=True, text=True, timeout=60, env=_env())
    assert p.returncode == 0, p.stderr
    return [x for x in p.stdout.splitlines() if x]


def test_bash_completion(name) -> None:
    ch = name("compl")
    nerve.create(ch, slots=4, size=4096).close()
    assert _bash_complete("nerve", "cr") == ["create"]
    assert "echo" in _bash_complete("nerve", "ec")          # an external verb
    assert _bash_complete("nerve", "get", ch[:-3]) == [ch]  # a channel name
    assert "--newest" in _bash_complete("nerve", "get", "--ne")
    assert _bash_complete("nerve", "get", "--format", "js") == ["json"]
    assert "--no-arrays" in _bash_complete("nerve", "echo", "--no")


def test_zsh_completion(name) -> None:
    """The script is registered by compinit from the fpath, and its
    candidate lists hold verbs (external ones too) and channel names; a
    real completion is driven through zsh's zpty (an interactive shell
    in a pseudo-terminal) and must insert the verb."""
    ch = name("zcompl")
    nerve.create(ch, slots=4, size=4096).close()
    script = r'''
fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -D
[[ $_comps[nerve] == _nerve ]] || { print "not registered"; exit 1 }
source "$1/_nerve"
print -l -- "verbs:" $(_nerve_verbs) "chans:" $(_nerve_channels) "flags:" $(_nerve_flags get)
'''
    p = subprocess.run(["zsh", "-f", "-c", script, "_", str(COMPLETION)], capture_output=True,
                       text=True, timeout=60, env=_env())
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout.split()
    verbs = out[out.index("verbs:") + 1: out.index("chans:")]
    chans = out[out.index("chans:") + 1: out.index("flags:")]
    flags = out[out.index("flags:") + 1:]
    assert {"create", "get", "echo", "who"} <= set(verbs)
    assert ch in chans and "--newest" in flags
    # An interactive completion: "nerve crea<TAB>" becomes "nerve create ".
    drive = r'''
zmodload zsh/zpty
zpty -b z 'zsh -f -i'
zpty -w z "PS1='> '; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z "print READY"
zpty -r -m z out '*READY*READY*' || exit 3
zpty -w -n z $'nerve crea\t'
sleep 1
zpty -w -n z $'\x01print -r -- X-\x05-X\n'
out=""
for i in 1 2 3 4 5 6 7 8 9 10; do
    zpty -r -t z line && out+=$line
    [[ $out == *X-nerve\ create*-X* ]] && { print OK; zpty -d z; exit 0 }
    sleep 0.3
done
print -r -- "got: $out"; zpty -d z; exit 1
'''
    p = subprocess.run(["zsh", "-f", "-c", drive, "_", str(COMPLETION)], capture_output=True,
                       text=True, timeout=60, env=_env())
    assert "OK" in p.stdout, p.stdout + p.stderr


# ---- rough edges ------------------------------------------------------------

def test_missed_is_what_this_reader_lost(name) -> None:
    """A new reader is not told it missed the history before it: `nerve
    get` and a fresh Python handle report missed 0; messages overwritten
    after the handle opened are counted."""
    ch = name("missed")
    with nerve.create(ch, slots=4, size=4096) as w:
        for i in range(14):
            w.put(b"m%d" % i)
        for args in (["--newest"], ["--next"]):
            m = json.loads(ok("get", ch, *args, "--format", "json"))
            assert m["missed"] == 0, (args, m)
        assert json.loads(ok("cat", ch, "--all", "--count", "1", "--format", "json"))["missed"] == 0
        r = nerve.open(ch)
        try:
            m = r.get()
            assert (m.seq, m.missed) == (11, 0)   # the oldest present, nothing lost
            for i in range(10):                   # 12..20 overwritten after it opened
                w.put(b"n%d" % i)
            m = r.get()
            assert (m.seq, m.missed) == (21, 9)
        finally:
            r.close()


def test_error_messages_say_what_is_wrong(name, procs) -> None:
    ch = name("err")
    nerve.create(ch, slots=4, size=4096).close()
    p = run("get", ch, "--seq", "3")
    assert p.returncode == 1 and b"has no message yet" in p.stderr
    for i in range(6):
        ok("put", ch, f"m{i}")
    p = run("get", ch, "--seq", "9")
    assert p.returncode == 1 and b"message 9 is not published yet (the newest is 6" in p.stderr
    p = run("get", ch, "--seq", "1")
    assert p.returncode == 1 and b"message 1 was overwritten (present: 3 to 6)" in p.stderr
    p = run("get", ch, "--at", "5")
    assert p.returncode == 1 and b"no message committed at or before 5 ns: the oldest present (seq 3)" in p.stderr
    p = run("put", ch, input=b"x" * 5000)
    assert p.returncode == 1
    assert b"EMSGSIZE: a message of 5000 bytes does not fit: the channel's data ring is 4096 bytes" in p.stderr
    assert run("get", "bad/name").returncode == 2
    # The writer lock held by another process: put --timeout names it.
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, ch, ch], stdout=subprocess.PIPE)
    procs.append(holder)
    assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
    p = run("put", ch, "x", "--timeout", "0.2")
    assert p.returncode == 1, p.stderr
    assert (b"ETIMEDOUT: the writer lock was not free within 0.2 s: held by thread %d (pid %d: "
            % (holder.pid, holder.pid)) in p.stderr, p.stderr


def test_create_says_memory_is_committed(name) -> None:
    ch = name("mem")
    out = ok("create", ch, "--slots", "16", "--size", "64K")
    assert out.startswith(f"{ch}: 16 slots, 64 KiB data ring: ") and "of memory committed" in out
    big = name("big")
    free = os.statvfs("/dev/shm")
    too_much = free.f_bavail * free.f_frsize * 2 // (1 << 30) + 1
    p = run("create", big, "--size", f"{too_much}G")
    assert p.returncode == 1 and b"ENOSPC" in p.stderr and b"/dev/shm has" in p.stderr
    assert not Path(f"/dev/shm/nerve.{big}").exists()
    assert b"committed when it is created" in run("create", "--help").stdout


def test_cyclic_found_in_build_tree() -> None:
    beside = Path(NERVE).resolve().parent / "nerve-cyclic"
    if not beside.exists():
        pytest.skip(f"nerve-cyclic is not built beside {NERVE}")
    env = dict(os.environ, PATH="/usr/bin:/bin")  # not through the PATH
    p = subprocess.run([NERVE, "cyclic", "--help"], capture_output=True, timeout=60, env=env)
    assert p.returncode == 0 and b"usage: nerve cyclic" in p.stdout, p.stderr


def test_help_lists_external_verbs() -> None:
    out = ok("-h")
    assert "external verbs" in out and "  echo" in out and "  who" in out


def test_python_reprs_and_create_size(name) -> None:
    ch = name("repr")
    with nerve.create(ch, slots=8, size=1 << 20, mode=0o640) as w:
        w.put(b"\x01" * 1_000_000)
        m = w.get(newest=True, repeat=True)
        r = repr(m)
        assert len(r) < 300 and "size=1000000" in r and "time_ns=" in r and "(monotonic)" in r
        assert r.count("\\x01") == 16 and r.endswith("...)")
        assert m.time_ns == m.time
        info = w.stat()
        ri = repr(info)
        assert "mode=0o640" in ri and "newest_time_ns=" in ri and "created_ns=" in ri
        assert info.newest_time_ns == info.newest_time and info.created_realtime_ns == info.created
    for bad in ({"size": 0}, {"slots": 0}, {"size": -1}):
        with pytest.raises(ValueError):
            nerve.create(name("zero"), **bad)


def test_check_takes_many_names(name) -> None:
    a, b = name("ca"), name("cb")
    for n in (a, b):
        nerve.create(n, slots=4, size=4096).close()
    assert ok("check", a, b) == f"{a}: ok; writer lock: free\n{b}: ok; writer lock: free\n"
    p = run("check", a, f"{PREFIX}missing", b)
    assert p.returncode == 1 and p.stdout.decode() == f"{a}: ok; writer lock: free\n{b}: ok; writer lock: free\n"
    assert b"ENOENT" in p.stderr


def test_docs_python_example_runs(name) -> None:
    """docs/python.md's first example, run as written (on a unique channel
    name, with the follow loop's silence timeout shortened)."""
    text = (HERE.parent.parent / "docs" / "python.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    ch = name("camera")
    code = code.replace('"camera"', repr(ch)).replace("timeout=5.0", "timeout=0.2")
    env: dict = {}
    exec(compile(code, "docs/python.md", "exec"), env)
    env["cam"].close()
    with nerve.open(ch) as r:
        assert r.get(seq=2).size == 6         # the reservation published 6 bytes
        assert r.get(newest=True).size == 1080 * 1920 * 3


def test_cxx_examples_help_and_cleanup() -> None:
    """The C++ examples answer --help, use per-user default names (not the
    global "imu"/"cmd") and remove their channels on exit."""
    ex = Path(NERVE).resolve().parent.parent / "examples"
    progs = ["imu_publisher", "controller", "sync_by_time", "bench_cxx_overhead"]
    if not all((ex / p).exists() for p in progs):
        pytest.skip(f"the C++ examples are not built in {ex}")
    for prog in progs:
        p = subprocess.run([str(ex / prog), "--help"], capture_output=True, timeout=30)
        assert p.returncode == 0 and p.stdout.startswith(f"usage: {prog}".encode()), prog
    uid = os.getuid()
    p = subprocess.run([str(ex / "imu_publisher"), "--count", "3", "--rate", "1000"],
                       capture_output=True, timeout=30)
    assert p.returncode == 0 and f"example-{uid}-imu".encode() in p.stdout, p.stdout
    assert not Path(f"/dev/shm/nerve.example-{uid}-imu").exists()


def test_rate_text_golden() -> None:
    """The text reports of hz, bw and delay, from fixed numbers."""
    from nerve_tools.channel import rate

    reports = {
        "hz": {"window": 100, "messages": 250, "missed": 2, "rate_hz": 99.96,
               "min_ns": 9_800_000, "max_ns": 10_250_000, "std_dev_ns": 120_500},
        "bw": {"window": 100, "messages": 250, "missed": 0, "bytes_per_s": 31_600.0,
               "mean_size": 316.0, "min_size": 316, "max_size": 316},
        "delay": {"window": 50, "messages": 50, "missed": 0, "delay_ns": 48_400,
                  "min_ns": 20_100, "max_ns": 2_388_000, "std_dev_ns": 95_000,
                  "stamp_delay_ns": 3_455_000, "stamp_min_ns": 389_000,
                  "stamp_max_ns": 26_640_000, "stamp_std_dev_ns": 7_765_000, "stamp_window": 50},
    }
    text = "".join(f"== {k}\n{rate.text(k, r)}\n" for k, r in reports.items())
    text += "== waiting\n" + rate.text("hz", {"window": 1, "messages": 1, "missed": 0}) + "\n"
    golden("rates", text)


def test_man_pages_for_external_verbs(tmp_path) -> None:
    gen = HERE.parent.parent / "tools" / "man" / "gen-man.py"
    p = subprocess.run([sys.executable, str(gen), NERVE, str(tmp_path), "--external"],
                       capture_output=True, text=True, timeout=120, env=_env())
    assert p.returncode == 0, p.stderr
    echo = (tmp_path / "nerve-echo.1").read_text()
    assert echo.startswith(".TH NERVE-ECHO 1") and "-field" in echo
    assert "--no-arrays" in echo.replace("\\-", "-")
    assert (tmp_path / "nerve-create.1").exists() and (tmp_path / "nerve.1").exists()


@pytest.mark.parametrize("encoding,typename", [("cdr", "demo_msgs/msg/Thing"), ("ros1msg", "demo_msgs/Thing")])
def test_echo_pub_custom_type_from_schema(name, tmp_path, encoding, typename) -> None:
    """A type rosbags does not ship, known only from the channel's schema
    (a .msg definition given to `nerve create --schema`)."""
    ch = name("thing")
    msg = tmp_path / "Thing.msg"
    msg.write_text("float64 x\nstring label\nint32[] ids\n")
    ok("create", ch, "--type", typename, "--encoding", encoding, "--schema", str(msg),
       "--slots", "8", "--size", "4K")
    ok("pub", ch, "{x: 2.5, label: hello, ids: [1, 2, 3]}")
    assert ok("echo", ch, "--all", "--count", "1") == "x: 2.5\nlabel: hello\nids: [1, 2, 3]\n---\n"
    p = run("pub", ch, "{x: oops}")
    assert p.returncode == 2 and b"x: a number is needed" in p.stderr
    with nerve.open(ch) as r:
        data = r.get(seq=1).data
    m = schemas.decode(data, typename, encoding, msg.read_bytes())
    assert (m.x, m.label, list(m.ids)) == (2.5, "hello", [1, 2, 3])


def test_python_verbs_speak_as_the_c_verbs(name) -> None:
    """A Python verb and a C verb report the same mistake in one format,
    'nerve VERB: NAME: CODE: detail', with the library's detail."""
    gone = name("gone")
    for bad, code in ((gone, 1), ("bad name", 2)):
        c = run("get", bad)
        for verb in ("hz", "echo"):
            p = run(verb, bad)
            assert p.returncode == c.returncode == code, (verb, p.stderr, c.stderr)
            said = p.stderr.decode().splitlines()[-1]
            assert said.startswith(f"nerve {verb}: "), said
            assert said[len(f"nerve {verb}: "):] == c.stderr.decode().splitlines()[0][len("nerve get: "):], \
                (said, c.stderr)
