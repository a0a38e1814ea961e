"""`nerve ros1` against real ROS 1 (Debian's ros_comm 1.15): channels to
topics (rostopic echo/hz, rosbag record/info, a roscpp subscriber), topics
to channels (rostopic pub, latched, a roscpp publisher read by a typed
nerve::Reader, nerve record), both ways on one name without loops, type
mismatches, and a roscore restart (last: it restarts the shared master).
The C++ typed API's bytes are decoded by a Python reader as well."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

import nerve
from nerve_tools.codec import schemas
from nerve_tools.ros1.msg import enable, md5sum

from conftest import PREFIX, Roscore, topic


def run(ros: Roscore, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), env=ros.env, capture_output=True, text=True,
                          timeout=timeout)


class Pacer:
    """Calls fn(i) for i = 1, 2, ... every `period` seconds until stopped."""

    def __init__(self, fn: Callable[[int], None], period: float = 0.02) -> None:
        self.fn, self.period = fn, period
        self.stop_ev = threading.Event()
        self.count = 0
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while not self.stop_ev.wait(self.period):
            self.count += 1
            self.fn(self.count)

    def stop(self) -> None:
        self.stop_ev.set()
        self.t.join(5)


@pytest.fixture
def pacers() -> Iterator[Callable[..., Pacer]]:
    made = []

    def make(fn: Callable[[int], None], period: float = 0.02) -> Pacer:
        p = Pacer(fn, period)
        made.append(p)
        return p

    yield make
    for p in made:
        p.stop()


def string_channel(name: str) -> nerve.Channel:
    return nerve.create(name, **schemas.channel_options("std_msgs/String", "ros1msg"))


def put_string(ch: nerve.Channel, text: str) -> int:
    msg = schemas.typestore(1).types["std_msgs/msg/String"](data=text)
    return ch.put(schemas.encode(msg, "std_msgs/String", "ros1msg"))


def read_strings(name: str) -> list:
    ch = nerve.open(name)
    meta = ch.metadata
    out = []
    ch.seek(0)
    while True:
        m = ch.get()
        if m is None:
            break
        out.append(schemas.decode(m.data, meta.type, "ros1msg", meta.schema).data)
    ch.close()
    return out


def test_md5_of_definitions_matches_ros() -> None:
    """The md5sum the bridge announces is ROS's: for rosbags' definitions
    and for genpy's classes of the Debian std_msgs."""
    enable()  # serves std_msgs from Debian's dist-packages
    import std_msgs.msg

    for cls in (std_msgs.msg.String, std_msgs.msg.Header, std_msgs.msg.Float64MultiArray):
        assert md5sum(cls._type, cls._full_text) == cls._md5sum
        s = schemas.ros_schema(cls._type, 1)
        assert md5sum(cls._type, s.text.decode()) == cls._md5sum
    with pytest.raises(ValueError):
        md5sum("pkg/Bad", "no_such_type field\n")


def test_md5_of_a_doubling_definition() -> None:
    """Each type holding two of the one below, 40 levels: genmsg's own
    compute_md5 would take 2^40 steps; each type is hashed once here."""
    parts = ["p/T39 a\np/T39 b\n"]
    for i in range(39, 0, -1):
        parts.append("=" * 80 + f"\nMSG: p/T{i}\np/T{i - 1} a\np/T{i - 1} b\n")
    parts.append("=" * 80 + "\nMSG: p/T0\nint32 x\n")
    assert re.fullmatch(r"[0-9a-f]{32}", md5sum("p/Top", "".join(parts)))
    with pytest.raises(ValueError, match="nested deeper"):
        chain = ["p/C99 a\n"] + ["=" * 80 + f"\nMSG: p/C{i}\np/C{i - 1} a\n"
                                 for i in range(99, 0, -1)]
        md5sum("p/Top", "".join(chain) + "=" * 80 + "\nMSG: p/C0\nint32 x\n")


def test_to_ros(ros: Roscore, name, bridge, peer, spawn, pacers, tmp_path: Path) -> None:
    """A typed C++ channel (Imu) and a Python one (String) as ROS topics:
    a roscpp subscriber (md5 checked by roscpp) gets equal messages,
    rostopic echo and hz take them, rosbag records them."""
    imu, text = name("imu"), name("text")
    assert peer("write", imu, "imu", "0").wait(20) == 0  # creates the channel
    ch = string_channel(text)
    raw = nerve.create(name("raw"), type="blob", encoding="raw")
    b = bridge("--to-ros", f"{PREFIX}*")
    b.wait_line(rf"to-ros {re.escape(imu)} -> {topic(imu)} \[sensor_msgs/Imu 6a62c6daae103f4ff57a132d6f95cec2\]")
    b.wait_line(rf"to-ros {re.escape(text)} -> {topic(text)} \[std_msgs/String")
    b.wait_line(rf"error: {re.escape(raw.name)}: encoding is 'raw'")
    raw.close()
    pacers(lambda i: put_string(ch, f"hello {i}"), 0.02)
    writer = peer("write", imu, "imu", "4000", "200")
    sub = peer("rossub", topic(imu), "imu", "20", "60")
    bag = tmp_path / "out.bag"
    # Bounded by counts, not by time: on a loaded host any of these may be
    # descheduled for seconds (a 4 s recording could hold nothing, a 7 s
    # rostopic hz no rate line). rosbag stops at 20 messages of each topic;
    # rostopic hz (unbuffered) is stopped at its first rate line.
    rec = spawn("rosbag", "record", "-O", str(bag), "--limit=20", topic(imu), topic(text))
    hz = spawn("env", "PYTHONUNBUFFERED=1", "rostopic", "hz", topic(text))
    echo = run(ros, "rostopic", "echo", "-n", "1", topic(text), timeout=60)
    assert echo.returncode == 0, echo.stderr
    assert re.search(r'data: "hello \d+"', echo.stdout), echo.stdout
    assert sub.wait(90) == 0, sub.output
    assert sub.output.count("ok ") >= 20
    assert rec.wait(90) == 0, rec.output
    hz.wait_line(r"average rate: \d+", 60)
    hz.stop()
    writer.stop()
    info = run(ros, "rosbag", "info", "--yaml", str(bag))
    assert info.returncode == 0, info.stderr
    for t, ty in ((topic(imu), "sensor_msgs/Imu"), (topic(text), "std_msgs/String")):
        m = re.search(rf"topic: {re.escape(t)}\s+type: {re.escape(ty)}\s+messages: (\d+)",
                      info.stdout)
        assert m and int(m.group(1)) > 10, info.stdout
    assert b.stop() == 0, b.output
    assert re.search(rf"to-ros {re.escape(imu)}: [1-9]\d* messages published", b.output)


def test_from_ros(ros: Roscore, name, bridge, peer, spawn, tmp_path: Path) -> None:
    """rostopic pub (and a latched one started before the bridge) and a
    roscpp publisher into channels: type, encoding and definition come from
    the connection header; nerve readers (Python and the typed C++ Reader)
    and nerve record read them."""
    text, latched, imu = name("text"), name("latched"), name("imu")
    lat = spawn("rostopic", "pub", "-l", topic(latched), "std_msgs/String", "data: kept")
    time.sleep(0.5)
    pub = spawn("rostopic", "pub", "-r", "20", topic(text), "std_msgs/String", "data: hi")
    b = bridge("--from-ros", f"{topic(text)}:{text}", "--from-ros", f"{topic(latched)}:{latched}",
               "--from-ros", f"{topic(imu)}:{imu}")
    reader = peer("read", imu, "imu", "10", "60")
    rospub = peer("rospub", topic(imu), "imu", "10", "50")
    b.wait_line(rf"created {re.escape(latched)} \[std_msgs/String\]")
    b.wait_line(rf"created {re.escape(text)} \[std_msgs/String\]")
    assert reader.wait(90) == 0, reader.output + "\n" + b.output
    assert reader.output.count("ok ") == 10
    assert rospub.wait(60) == 0, rospub.output
    rec_file = tmp_path / "rec.mcap"
    rec = spawn(shutil.which("nerve-record") or str(Path(sys.executable).parent / "nerve-record"),
                text, "-o", str(rec_file), "--quiet")
    rec.wait_line("recording", 60)
    # Everything committed after the ready line is recorded: wait for a
    # message committed after it (not a fixed second, which a loaded host
    # may spend without one), then stop.
    start_seq = nerve.open(text).stat().head_seq
    deadline = time.monotonic() + 60
    while nerve.open(text).stat().head_seq <= start_seq:
        assert time.monotonic() < deadline, "no message from ROS while recording\n" + b.output
        time.sleep(0.05)
    assert rec.stop() == 0, rec.output
    # The latched message arrived although it was published before the
    # bridge subscribed, and stays the channel's newest.
    assert read_strings(latched) == ["kept"]
    got = read_strings(text)
    assert got and set(got) == {"hi"}
    meta = nerve.open(text).metadata
    assert (meta.type, meta.encoding) == ("std_msgs/String", "ros1msg")
    assert md5sum(meta.type, meta.schema.decode()) == "992ce8a1687cec8c8bd883ec73ca41d1"
    from mcap.reader import make_reader

    with open(rec_file, "rb") as f:
        msgs = list(make_reader(f).iter_messages())
    assert msgs, "nerve record wrote no message"
    schema, channel, message = msgs[0]
    assert channel.message_encoding == "ros1" and schema.name == "std_msgs/String"
    pub.stop()
    lat.stop()


def test_both_ways_no_loop(ros: Roscore, name, bridge, peer) -> None:
    """One name bridged both ways: what the bridge put is not sent back to
    ROS, and what it published is not put back into the channel."""
    ch = name("both")
    assert peer("write", ch, "imu", "0").wait(20) == 0
    b = bridge("--to-ros", ch, "--from-ros", f"{topic(ch)}:{ch}")
    b.wait_line(rf"to-ros {re.escape(ch)} -> ")
    # 10 messages from ROS (the roscpp publisher waits for the bridge).
    assert peer("rospub", topic(ch), "imu", "10", "50").wait(40) == 0
    # 7 messages from nerve.
    assert peer("write", ch, "imu", "7", "50").wait(20) == 0
    time.sleep(1.5)  # let anything that would loop come around
    assert b.stop() == 0, b.output
    assert re.search(rf"to-ros {re.escape(ch)}: 7 messages published", b.output), b.output
    assert re.search(rf"from-ros {re.escape(topic(ch))}: 10 messages put", b.output), b.output
    assert nerve.open(ch).stat().head_seq == 17


def test_type_mismatch(ros: Roscore, name, bridge, spawn) -> None:
    """A topic of another type, a channel of another type: an error line
    for that topic; the rest keeps working and the bridge does not exit."""
    good, clash, existing = name("good"), name("clash"), name("existing")
    other = spawn("rostopic", "pub", "-r", "10", topic(clash), "std_msgs/Float64", "data: 1.5")
    ros_topic = f"{topic(existing)}_src"
    src = spawn("rostopic", "pub", "-r", "10", ros_topic, "std_msgs/Float64", "data: 2.5")
    deadline = time.monotonic() + 60
    while clash.replace("-", "_") not in run(ros, "rostopic", "list").stdout:
        assert time.monotonic() < deadline, "rostopic pub did not register"
        time.sleep(0.2)
    string_channel(good).close()
    string_channel(clash).close()
    string_channel(existing).close()
    b = bridge("--to-ros", f"{good}", "--to-ros", clash, "--from-ros", f"{ros_topic}:{existing}")
    b.wait_line(rf"error: {re.escape(clash)}: topic {topic(clash)} has type std_msgs/Float64 in ROS, "
                r"the channel std_msgs/String")
    b.wait_line(rf"error: {re.escape(ros_topic)}: channel {re.escape(existing)} carries "
                r"std_msgs/String \(ros1msg\), the topic std_msgs/Float64")
    b.wait_line(rf"to-ros {re.escape(good)} -> ")
    assert b.p.poll() is None
    assert nerve.open(existing).stat().head_seq == 0
    assert b.stop() == 0
    other.stop()
    src.stop()


def test_master_gone_for_good(name, bridge, ros: Roscore) -> None:
    """No master at the address: a clear error and exit status 1 after
    --master-timeout."""
    exe = shutil.which("nerve-ros1") or str(Path(sys.executable).parent / "nerve-ros1")
    r = subprocess.run([exe, "--master", "http://127.0.0.1:9", "--master-timeout", "1",
                        "--from-ros", "/x"], capture_output=True, text=True, timeout=30,
                       env=ros.env)
    assert r.returncode == 1
    assert "no ROS master at http://127.0.0.1:9" in r.stderr
    r = subprocess.run([exe, "--master", ros.uri], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--to-ros or --from-ros" in r.stderr


def test_zz_roscore_restart(ros: Roscore, name, bridge, peer, spawn) -> None:
    """The master goes away and comes back: the bridge waits, registers
    again, and nodes started afterwards find its topics both ways."""
    out_ch, in_ch = name("out"), name("in")
    assert peer("write", out_ch, "imu", "0").wait(20) == 0
    b = bridge("--to-ros", out_ch, "--from-ros", f"{topic(in_ch)}:{in_ch}",
               "--master-timeout", "60")
    b.wait_line(rf"to-ros {re.escape(out_ch)} -> ")
    ros.stop()
    b.wait_line("unreachable; retrying", 60)
    ros.start()
    b.wait_line(r"master back \(pid \d+\); registrations renewed", 90)
    writer = peer("write", out_ch, "imu", "4000", "200")
    sub = peer("rossub", topic(out_ch), "imu", "10", "60")
    assert sub.wait(90) == 0, sub.output + "\n" + b.output
    writer.stop()
    assert peer("rospub", topic(in_ch), "imu", "5", "50").wait(90) == 0
    deadline = time.monotonic() + 60
    while True:
        try:
            if nerve.open(in_ch).stat().head_seq >= 5:
                break
        except nerve.ChannelNotFound:
            pass
        assert time.monotonic() < deadline, b.output
        time.sleep(0.1)
    assert b.stop() == 0, b.output


@pytest.mark.parametrize("kind,rtype", [
    ("imu", "sensor_msgs/Imu"), ("scan", "sensor_msgs/LaserScan"),
    ("cloud", "sensor_msgs/PointCloud2"), ("image", "sensor_msgs/Image"),
    ("grid", "nav_msgs/OccupancyGrid")])
def test_cxx_typed_to_python(name, kind: str, rtype: str) -> None:
    """nerve::Publisher<ROS type> (ros1_peer write) read by Python: the
    channel metadata is the ROS type, ros1msg and the definition (whose
    md5sum is the C++ type's), and rosbags decodes ROS's bytes to the
    values ros1_msgs.hpp put in."""
    from conftest import peer_path

    ch = name(kind)
    r = subprocess.run([peer_path(), "write", ch, kind, "3"], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 0, r.stderr
    c = nerve.open(ch)
    meta = c.metadata
    assert (meta.type, meta.encoding) == (rtype, "ros1msg")
    want_md5 = {"imu": "6a62c6daae103f4ff57a132d6f95cec2",
                "scan": "90c7ef2dc6895d81024acba2ac42f369",
                "cloud": "1158d486dd51d683ce2f1be655c3c181",
                "image": "060021388200f6f0f447d0fcd9c64743",
                "grid": "3381f2d731d4076ec5c71b0759edbe4e"}[kind]
    assert md5sum(rtype, meta.schema.decode()) == want_md5
    c.seek(0)
    for i in (1, 2, 3):
        m = c.get()
        assert m is not None and m.seq == i
        msg = schemas.decode(m.data, meta.type, "ros1msg", meta.schema)
        h = msg.header
        assert (h.seq, h.stamp.sec, h.stamp.nanosec, h.frame_id) == (i, 1000 + i, 7 * i, f"frame{i}")
        if kind == "imu":
            assert msg.orientation.w == 1.0 and msg.linear_acceleration.x == i * 0.5
            assert msg.angular_velocity.z == -i and msg.orientation_covariance[0] == 0.01
        elif kind == "scan":
            assert list(msg.ranges) == [i + k * 0.25 for k in range(16 + i)]
        elif kind == "cloud":
            assert (msg.width, msg.point_step, [f.name for f in msg.fields]) == (5, 12, ["x", "y", "z"])
            assert bytes(msg.data) == bytes((i + k) % 251 for k in range(60))
        elif kind == "image":
            assert (msg.width, msg.height, msg.encoding, msg.step) == (4, 3, "rgb8", 12)
            assert bytes(msg.data) == bytes((i + k) % 251 for k in range(36))
        else:
            assert (msg.info.width, msg.info.height) == (8, 4)
            assert abs(msg.info.resolution - 0.05) < 1e-7
            assert list(msg.data) == [(i + k) % 100 for k in range(32)]
    c.close()


def test_latch_to_ros(ros: Roscore, name, bridge) -> None:
    """With --latch, a ROS subscriber that connects later still gets the
    newest message, one committed before the bridge even started."""
    ch = name("latch")
    c = string_channel(ch)
    put_string(c, "old")
    put_string(c, "newest")
    c.close()
    b = bridge("--latch", "--to-ros", ch)
    b.wait_line(rf"to-ros {re.escape(ch)} -> {topic(ch)} \[std_msgs/String .*\] latched")
    echo = run(ros, "rostopic", "echo", "-n", "1", topic(ch), timeout=30)
    assert echo.returncode == 0, echo.stderr
    assert 'data: "newest"' in echo.stdout, echo.stdout
    assert b.stop() == 0
