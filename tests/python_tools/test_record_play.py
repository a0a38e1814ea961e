"""nerve record / nerve play: MCAP files, round trips, missed counts,
rotation, Ctrl-C, the options of play."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from mcap.writer import Writer

import nerve
from nerve_tools._common import realtime_offset_ns
from nerve_tools.codec import schemas
from nerve_tools.recording.play import Player
from nerve_tools.recording.record import Recorder

from conftest import read_mcap, start, tool

IMU = "sensor_msgs/msg/Imu"


def imu(i: int) -> bytes:
    return schemas.encode(schemas.example(IMU, seq=i), IMU)


def payloads(n: int) -> list:
    """Messages of varying sizes: IMU readings with a tail of i bytes."""
    return [imu(i) + bytes(range(256))[: (i * 37) % 200] for i in range(n)]


def test_round_trip_record_play_record(name, tmp_path: Path) -> None:
    """record -> play -> record gives the same messages byte for byte, in
    the same order, with the same relative timing (on recorded commit
    times), and play recreates the channel with the same metadata."""
    a, b = name("a"), name("b")
    opts = schemas.channel_options(IMU)
    nerve.create(a, slots=64, size=1 << 16, **opts).close()
    f1, f2 = tmp_path / "one.mcap", tmp_path / "two.mcap"
    data = payloads(20)
    gaps = [0.0, 0.005, 0.03, 0.0, 0.012, 0.02] * 4

    rec, _ = start("record", a, "-o", str(f1), "--count", "20", ready="recording")
    with nerve.open(a, write=True) as w:
        for i, d in enumerate(data):
            time.sleep(gaps[i])  # the timing pattern to reproduce
            w.put(d)
    assert rec.wait(timeout=60) == 0, rec.stderr.read() if rec.stderr else ""
    rec.communicate()

    # b does not exist: play creates it, and the recorder reads it from
    # its first message on.
    rec2, line = start("record", b, "-o", str(f2), "--count", "20", ready="recording")
    assert "waiting for" in line
    play = subprocess.run([tool("play"), str(f1), "--rename", f"{a}={b}"],
                          capture_output=True, text=True, timeout=60)
    assert play.returncode == 0, play.stderr
    assert f"created {b}" in play.stderr
    assert rec2.wait(timeout=60) == 0
    rec2.communicate()

    one, two = read_mcap(f1), read_mcap(f2)
    m1, m2 = one["messages"], two["messages"]
    assert [m.data for _s, _c, m in m1] == data
    assert [m.data for _s, _c, m in m2] == data  # byte for byte
    assert [m.sequence for _s, _c, m in m1] == list(range(1, 21))
    assert [m.sequence for _s, _c, m in m2] == list(range(1, 21))
    # Relative timing: play never puts a message early, and late by
    # scheduling delay only. Its deadlines are absolute, from a start after
    # it created b: message k is committed at or after b's creation + its
    # recorded offset (commit times back on the monotonic clock through
    # the second recording's offset; b's creation time, a CLOCK_REALTIME
    # one, through this process's; 2 ms for the two offsets). Measured from
    # the first put it would not hold: a loaded host may delay any put,
    # the first too, by seconds; for that the lateness bound is generous.
    t1 = [m.log_time - m1[0][2].log_time for _s, _c, m in m1]
    t2 = [m.log_time - m2[0][2].log_time for _s, _c, m in m2]
    off2 = int(two["metadata"]["nerve.recording"]["clock_offset_ns"])
    with nerve.open(b) as ch:
        created = ch.stat().created_ns - realtime_offset_ns()
    for x, (_s, _c, m) in zip(t1, m2):
        assert m.log_time - off2 >= created + x - 2_000_000, (t1, t2, created)
    for x, y in zip(t1, t2):
        assert y <= x + 10_000_000_000, (t1, t2)
    # The schema and encodings survive both trips.
    s1, c1, _ = m1[0]
    s2, c2, _ = m2[0]
    assert (s1.name, s1.encoding, s1.data) == (s2.name, s2.encoding, s2.data)
    assert (s1.name, s1.encoding) == ("sensor_msgs/msg/Imu", "ros2msg")
    assert c1.message_encoding == c2.message_encoding == "cdr"
    assert c1.topic == a and c2.topic == b
    with nerve.open(b) as ch:
        assert ch.metadata == nerve.open(a).metadata
        assert ch.stat().slots == 64
    assert one["metadata"]["nerve.missed"] == {a: "0"}
    assert "clock_offset_ns" in one["metadata"]["nerve.recording"]


def test_missed_counted_exactly_when_a_writer_laps_the_recorder(name, tmp_path: Path) -> None:
    a = name("lap")
    nerve.create(a, slots=4, size=1 << 16).close()
    path = tmp_path / "lap.mcap"
    with Recorder(str(path), [a]) as rec, nerve.open(a, write=True) as w:
        for i in range(3):
            w.put(b"early %d" % i)
        assert rec.poll() == 3
        for i in range(20):  # 4 slots: 16 of them are overwritten unread
            w.put(b"burst %d" % i)
        assert rec.poll() == 4
        assert rec.stats[a].missed == 16
        assert rec.stats[a].messages == 7
    out = read_mcap(path)
    assert [m.sequence for _s, _c, m in out["messages"]] == [1, 2, 3, 20, 21, 22, 23]
    assert out["metadata"]["nerve.missed"] == {a: "16"}


def test_cli_reports_missed_when_lapped(name, tmp_path: Path) -> None:
    """The recorder process is stopped while a writer overruns the ring, so
    the overrun is certain; it reports exactly what it lost."""
    a = name("lapcli")
    nerve.create(a, slots=4, size=1 << 16).close()
    path = tmp_path / "lap.mcap"
    rec, _ = start("record", a, "-o", str(path), "--count", "4", ready="recording")
    try:
        rec.send_signal(signal.SIGSTOP)
        with nerve.open(a, write=True) as w:
            for i in range(20):
                w.put(b"m%d" % i)
    finally:
        rec.send_signal(signal.SIGCONT)
    _out, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    assert "4 messages" in err and "16 missed" in err and f"{a}: 16" in err
    msgs = read_mcap(path)["messages"]
    assert [m.data for _s, _c, m in msgs] == [b"m16", b"m17", b"m18", b"m19"]
    assert read_mcap(path)["metadata"]["nerve.missed"] == {a: "16"}


def test_ctrl_c_finishes_a_valid_file(name, tmp_path: Path) -> None:
    a, j = name("int"), name("json")
    nerve.create(a, slots=16, size=1 << 16).close()
    nerve.create(j, slots=16, size=1 << 16, **schemas.channel_options(
        "demo.Point", "json", {"type": "object", "properties": {"x": {"type": "number"}}})).close()
    path = tmp_path / "int.mcap"
    rec, line = start("record", "--all", "-o", str(path), ready="recording")
    assert a in line and j in line
    with nerve.open(a, write=True) as w, nerve.open(j, write=True) as wj:
        for i in range(5):
            w.put(b"x%d" % i)
            wj.put(schemas.encode_json({"x": i}))
    rec.send_signal(signal.SIGINT)
    _out, err = rec.communicate(timeout=60)
    assert rec.returncode == 0, err
    out = read_mcap(path)
    mine = [(c.topic, m.data) for _s, c, m in out["messages"] if c.topic in (a, j)]
    assert [d for t, d in mine if t == a] == [b"x%d" % i for i in range(5)]
    assert [schemas.decode_json(d) for t, d in mine if t == j] == [{"x": i} for i in range(5)]
    chans = {c.topic: c for c in out["summary"].channels.values()}
    assert chans[a].message_encoding == "raw" and chans[a].schema_id == 0
    assert chans[j].message_encoding == "json"
    sj = out["summary"].schemas[chans[j].schema_id]
    assert (sj.name, sj.encoding) == ("demo.Point", "jsonschema")


def test_rotation_by_size_and_by_duration(name, tmp_path: Path) -> None:
    a = name("rot")
    nerve.create(a, slots=64, size=1 << 16).close()
    with Recorder(str(tmp_path / "big.mcap"), [a], split_bytes=10_000) as rec, \
            nerve.open(a, write=True) as w:
        for i in range(30):
            w.put(bytes([i]) * 1000)
        rec.poll()
    files = rec.files
    assert [Path(f).name for f in files] == [f"big_{i:03d}.mcap" for i in range(len(files))]
    assert len(files) == 3
    seqs, sizes = [], []
    for f in files:
        msgs = read_mcap(Path(f))["messages"]
        seqs += [m.sequence for _s, _c, m in msgs]
        sizes.append(os.path.getsize(f))
    assert seqs == list(range(1, 31))

    # A split recording plays back as one.
    b = name("rotplay")
    player = Player(files, rename={a: b})
    assert player.total == 30
    player.open()
    try:
        assert player.play(fast=True) == 30
    finally:
        player.close()
    with nerve.open(b) as r:
        got = [r.get(seq=s).data for s in range(1, 31)]
    assert got == [bytes([i]) * 1000 for i in range(30)]

    # By duration: a limit shorter than any gap puts each message into a
    # file of its own.
    with Recorder(str(tmp_path / "dur.mcap"), [a], split_seconds=1e-9) as rec, \
            nerve.open(a, write=True) as w:
        for i in range(3):
            w.put(b"d%d" % i)
            rec.poll()
    assert [len(read_mcap(Path(f))["messages"]) for f in rec.files] == [1, 1, 1]


def _foreign_mcap(path: Path) -> None:
    """An MCAP file as rosbag2 would write it (topics with slashes, no nerve
    metadata): 10 IMU messages 10 ms apart and 10 JSON ones."""
    with open(path, "wb") as f:
        w = Writer(f)
        w.start()
        s = schemas.ros_schema(IMU)
        imu_id = w.register_channel("/robot/imu", "cdr", w.register_schema(s.name, s.encoding, s.text))
        js = schemas.json_schema("demo.Pose", {"type": "object"})
        pose_id = w.register_channel("/robot/pose", "json", w.register_schema(js.name, js.encoding, js.text))
        t0 = 1_700_000_000_000_000_000
        for i in range(10):
            t = t0 + i * 10_000_000
            w.add_message(imu_id, log_time=t, publish_time=t, data=imu(i), sequence=i)
            w.add_message(pose_id, log_time=t + 1, publish_time=t + 1,
                          data=schemas.encode_json({"i": i}), sequence=i)
        w.finish()


def test_play_selection_window_rename_and_created_metadata(name, tmp_path: Path) -> None:
    path = tmp_path / "foreign.mcap"
    _foreign_mcap(path)
    target = name("imu")
    # Topic selection, a time window (20 ms .. 50 ms: messages 2..5), renaming.
    r = subprocess.run([tool("play"), str(path), "-c", "/robot/imu", "--rename",
                        f"/robot/imu={target}", "--start", "0.02", "--end", "0.05", "--fast"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    with nerve.open(target) as ch:
        meta = ch.metadata
        assert meta.type == IMU and meta.encoding == "cdr"
        assert meta.schema == schemas.ros_schema(IMU).text
        st = ch.stat()
        assert st.head_seq == 4
        got = [schemas.decode(ch.get(seq=s).data, IMU) for s in range(1, 5)]
    assert [m.header.stamp.sec for m in got] == [2, 3, 4, 5]
    # --list names the target channels; unrenamed topics map to dotted names.
    r = subprocess.run([tool("play"), str(path), "--list"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert "/robot/imu\trobot.imu\t10 messages" in r.stdout
    assert "/robot/pose\trobot.pose\t10 messages\tdemo.Pose\tjson" in r.stdout


def test_play_grows_a_channel_too_small_for_the_recording(name, tmp_path: Path) -> None:
    """A channel left by an earlier run, smaller than the recording's largest
    message: play grows it (GROWTH) rather than refusing, and a reader of
    the small channel follows to every message."""
    path = tmp_path / "big.mcap"
    with open(path, "wb") as f:
        w = Writer(f)
        w.start()
        js = schemas.json_schema("demo.Blob", {"type": "object"})
        cid = w.register_channel("/blob", "json", w.register_schema(js.name, js.encoding, js.text))
        for i, n in enumerate([10, 50_000, 200_000]):
            w.add_message(cid, log_time=1000 + i, publish_time=1000 + i, sequence=i,
                          data=schemas.encode_json({"i": i, "pad": "x" * n}))
        w.finish()
    target = name("blob")
    nerve.create(target, slots=8, size=4096, type="demo.Blob", encoding="json").close()
    reader = nerve.open(target)
    r = subprocess.run([tool("play"), str(path), "--rename", f"/blob={target}", "--fast"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"grew channel {target}" in r.stderr
    got = [m for m in reader.follow(timeout=0.5)]
    reader.close()
    assert [m.seq for m in got] == [1, 2, 3]
    assert [len(schemas.decode_json(m.data)["pad"]) for m in got] == [10, 50_000, 200_000]
    assert nerve.stat(target).data_size >= 2 * 200_000


def test_play_rate_and_loop(name, tmp_path: Path) -> None:
    path = tmp_path / "foreign.mcap"
    _foreign_mcap(path)
    imu_ch, pose_ch = name("imu"), name("pose")
    # Created beforehand: play uses existing channels.
    # Rings for 75 s of the endless play (a pass of 10 messages each 45
    # ms): this reader, opened before play starts, may be descheduled for
    # seconds on a loaded host and must still find every message.
    nerve.create(imu_ch, slots=1 << 14, size=8 << 20).close()
    nerve.create(pose_ch, slots=1 << 14, size=8 << 20).close()
    r = nerve.open(imu_ch)
    t_start = time.monotonic_ns()  # play's clock starts after this
    p = subprocess.Popen([tool("play"), str(path), "--rate", "2", "--loop",
                          "--rename", f"/robot/imu={imu_ch}", "--rename", f"/robot/pose={pose_ch}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with r:
            got = [r.get(wait=True, timeout=30) for _ in range(25)]  # 2.5 passes
    finally:
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    stamps = [schemas.decode(m.data, IMU).header.stamp.sec for m in got]
    assert stamps == list(range(10)) * 2 + list(range(5))
    # Rate 2: the file's IMU messages are 10 ms apart, 5 ms here; the
    # deadlines are absolute from play's start, so no message is put before
    # its time. (Measured from the first put it would not hold: a loaded
    # host may put that one late by seconds.)
    t = [m.time_ns for m in got[:10]]
    assert all(tk >= t_start + k * 5_000_000 for k, tk in enumerate(t)), (t_start, t)


def test_play_interrupted_counts_what_it_played(name, tmp_path: Path) -> None:
    """Ctrl-C part-way through a pass: the summary counts the messages put
    (it said 0 when no pass had finished), with singular and plural right."""
    path = tmp_path / "foreign.mcap"
    _foreign_mcap(path)
    imu_ch = name("imu")
    nerve.create(imu_ch, slots=256, size=1 << 16).close()
    # Rate 0.05: the 10 IMU messages of a pass take 1.8 s; stop after 3.
    p = subprocess.Popen([tool("play"), str(path), "--rate", "0.05", "-c", "/robot/imu",
                          "--rename", f"/robot/imu={imu_ch}"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with nerve.open(imu_ch) as r:
            for _ in range(3):
                assert r.get(wait=True, timeout=30) is not None
    finally:
        p.send_signal(signal.SIGINT)
        _out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    with nerve.open(imu_ch) as r:
        played = r.stat().head_seq
    assert 3 <= played < 10
    assert f"nerve play: {played} messages into 1 channel in" in err, err
    assert "(0 passes, interrupted)" in err, err


def test_nerve_verbs_run_the_tools(tmp_path: Path) -> None:
    """`nerve record` runs nerve-record (found on the PATH)."""
    cli = os.environ.get("NERVE_CLI")
    if not cli or not os.access(cli, os.X_OK):
        pytest.skip(f"the nerve command is not built (NERVE_CLI={cli!r})")
    for verb in ("record", "play", "top", "foxglove", "plot"):
        r = subprocess.run([cli, verb, "--help"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert f"usage: nerve {verb}" in r.stdout


def test_record_errors(tmp_path: Path) -> None:
    r = subprocess.run([tool("record"), "-o", str(tmp_path / "x.mcap")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--all" in r.stderr
    r = subprocess.run([tool("play"), str(tmp_path / "missing.mcap")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "missing.mcap" in r.stderr
