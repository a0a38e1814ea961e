"""nerve blackbox: exact windows around each kind of trigger, merging, the
recorder killed mid-dump and `dump --at`, bad input and a full disk.

Publishers (a child process) put sequence-numbered messages (the payload
begins with the sequence number the put returned) on channels of mixed
rates and sizes; one channel's ring is too small for the window. Every
file is checked against the rings: the last-state message is the newest at
or before T - pre, the window holds every message with commit time in
(T - pre, T + post] that was still in the ring, in order, no gap beyond the
counted missed, no extra."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

import nerve
import nerve.rt
from nerve_tools.codec import schemas
from nerve_tools.recording import blackbox, condition, mcap_fast

from conftest import read_mcap, tool

PUBLISHER = r"""
import struct, sys, time, nerve
specs = [(n, float(hz), int(size)) for n, hz, size in (a.split(':') for a in sys.argv[1:])]
chans = [(nerve.open(n, write=True), 1.0 / hz, size) for n, hz, size in specs]
due = [time.monotonic()] * len(chans)
print('publishing', flush=True)
end = time.monotonic() + 120  # bounded: the test kills it long before
while time.monotonic() < end:
    now = time.monotonic()
    for i, (ch, period, size) in enumerate(chans):
        if now >= due[i]:
            with ch.reserve(size) as buf:
                seq = ch.stat().head_seq + 1
                buf[:8] = struct.pack('<Q', seq)
            due[i] = max(due[i] + period, now - 0.1)
    time.sleep(max(0.0, min(due) - time.monotonic()))
"""


def publish(*specs: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", PUBLISHER, *specs], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "publishing"
    return p


def stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.kill()
    p.wait(timeout=30)


def arm(*args: str, **kw) -> subprocess.Popen:
    """Start nerve-blackbox and wait for its armed line."""
    p = subprocess.Popen([tool("blackbox"), *args], stderr=subprocess.PIPE, text=True, **kw)
    assert p.stderr is not None
    lines = []
    while True:
        line = p.stderr.readline()
        lines.append(line)
        if not line or "armed on" in line:
            break
    assert "armed on" in lines[-1], "".join(lines) + p.stderr.read()
    p.plan = "".join(lines)  # type: ignore[attr-defined]
    return p


def written(p: subprocess.Popen) -> Tuple[Path, str]:
    """The next incident file the recorder reports (and what it said)."""
    assert p.stderr is not None
    said = []
    while True:
        line = p.stderr.readline()
        assert line, "recorder ended: " + "".join(said)
        said.append(line)
        if ": wrote " in line:
            return Path(line.split(": wrote ", 1)[1].split(" (", 1)[0]), "".join(said)


def end(p: subprocess.Popen) -> str:
    """Stop the recorder; returns what it said since."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    return p.communicate(timeout=60)[1] or ""


def trigger_cmd(trig: str, note: str) -> None:
    subprocess.run([tool("blackbox"), "trigger", "--trigger-channel", trig, "--note", note],
                   check=True, timeout=60)


def check(path: Path, expect_missed_zero: bool = True, unnumbered: Tuple[str, ...] = ()) -> Dict[str, object]:
    """Check an incident file against the rings; returns its trigger record.
    The payloads of the channels in ``unnumbered`` do not begin with their
    sequence number."""
    f = read_mcap(path)
    rec = f["metadata"]["nerve.blackbox.trigger"]
    offset = int(f["metadata"]["nerve.recording"]["clock_offset_ns"])
    chans = json.loads(rec["channels"])
    triggers = json.loads(rec["triggers"])
    by: Dict[str, List[Tuple[int, int, bytes]]] = {}
    for _s, c, m in f["messages"]:
        by.setdefault(c.topic, []).append((m.sequence, m.log_time - offset, m.data))
    for name, info in chans.items():
        msgs = sorted(by.get(name, []))
        t0 = triggers[0]["time_ns"]
        start = t0 - int(info["requested_pre_s"] * 1e9)
        stop_ns = max(t["time_ns"] for t in triggers) + int(info["requested_post_s"] * 1e9)
        for seq, _t, data in msgs if name not in unnumbered else ():
            assert struct.unpack("<Q", data[:8])[0] == seq, f"{name}: payload is not message {seq}"
        if info["last_state_seq"]:
            seq, t, _d = msgs.pop(0)
            assert seq == info["last_state_seq"] and t <= start, f"{name}: last state {seq} at {t}"
        assert len(msgs) == info["messages"]
        assert all(start < t <= stop_ns for _s, t, _d in msgs), f"{name}: a message outside the window"
        seqs = [s for s, _t, _d in msgs]
        gaps = sum(b - a - 1 for a, b in zip(seqs, seqs[1:]))
        before = seqs[0] - 1 - info["last_state_seq"] if seqs and info["last_state_seq"] else 0
        assert gaps + before == info["missed"], f"{name}: gaps {gaps} vs missed {info}"
        if expect_missed_zero:
            assert info["missed"] == 0, f"{name}: {info}"
        if info["last_state_seq"] and msgs and expect_missed_zero:
            assert seqs[0] == info["last_state_seq"] + 1, f"{name}: the window does not start after the last state"
        with nerve.open(name) as ch:
            # No extra at the end: the message after the last copied one is
            # after T + post (or not written).
            nxt = seqs[-1] + 1 if seqs else info["last_state_seq"] + 1
            try:
                after = ch.get(seq=nxt)
            except nerve.Overwritten:
                after = None
            assert after is None or after.time_ns > stop_ns, f"{name}: message {nxt} is in the window, not the file"
            if not info["last_state_seq"] and seqs:
                # The ring did not hold T - pre: the file says what it achieved.
                assert info["achieved_pre_s"] < info["requested_pre_s"]
    return rec


@pytest.fixture
def rig(name, tmp_path):
    """Three channels at 1 kHz (a 256-slot ring: too small for 1 s, large
    enough that a loaded host keeps up over the 300 ms after), 100 Hz
    and 4 Hz, of mixed sizes (the 4 Hz one's 128 KiB messages are copied
    file to file, blackbox.FILE_COPY_MIN); a trigger channel; a publisher
    process."""
    fast, mid, slow, trig = name("bb-fast"), name("bb-mid"), name("bb-slow"), name("bb-trig")
    nerve.create(fast, slots=256, size=1 << 16).close()
    nerve.create(mid, slots=1024, size=1 << 20).close()
    nerve.create(slow, slots=16, size=4 << 20).close()
    pub = publish(f"{fast}:1000:64", f"{mid}:100:2048", f"{slow}:4:{128 << 10}")
    time.sleep(1.5)  # the rings fill
    yield {"fast": fast, "mid": mid, "slow": slow, "trig": trig, "pub": pub, "out": tmp_path / "inc",
           "prefix": name.prefix}
    stop(pub)


def armed_on(rig, *extra: str) -> subprocess.Popen:
    return arm(rig["prefix"] + "*bb-[fms]*", "--pre", "1s", "--post", "300ms", "-o", str(rig["out"]),
               "--trigger-channel", rig["trig"], "--cooldown", "0", *extra)


def test_command_trigger_exact_windows_and_plan(rig):
    p = armed_on(rig)
    try:
        assert f"{rig['fast']}:" in p.plan and "WARNING: shorter than --pre 1 s" in p.plan, p.plan
        trigger_cmd(rig["trig"], "fell")
        path, said = written(p)
    finally:
        end(p)
    rec = check(path)
    assert rec["kind"] == "channel" and rec["note"] == "fell"
    chans = json.loads(rec["channels"])
    assert set(chans) == {rig["fast"], rig["mid"], rig["slow"]}
    assert chans[rig["fast"]]["achieved_pre_s"] < 1.0 and chans[rig["fast"]]["last_state_seq"] == 0
    assert chans[rig["mid"]]["last_state_seq"] > 0 and chans[rig["slow"]]["last_state_seq"] > 0
    assert chans[rig["mid"]]["messages"] >= 50  # ~130 at 100 Hz over 1.3 s; a loaded host is slower
    assert not any(f.name.startswith("nerve.") and rig["trig"] in f.name for f in Path("/dev/shm").iterdir())


def test_signal_trigger_and_keep(rig):
    p = armed_on(rig, "--keep", "1")
    try:
        p.send_signal(signal.SIGUSR1)
        first, _ = written(p)
        p.send_signal(signal.SIGUSR1)
        second, before = written(p)
    finally:
        said = end(p)
    assert check(second)["kind"] == "signal"
    # --keep 1: only the newest incident file is left.
    assert not first.exists() and second.exists()
    assert [f.name for f in second.parent.glob("*.mcap")] == [second.name], before + said


def test_triggering_process_sigkilled(rig):
    p = armed_on(rig)
    try:
        assert "watching 1 processes" in p.plan, p.plan  # the publisher holds the channels
        rig["pub"].kill()  # SIGKILL: the trigger is its death
        path, _ = written(p)
    finally:
        end(p)
    rec = check(path)
    assert rec["kind"] == "process-death" and str(rig["pub"].pid) in rec["source"]


def _pidfds(pid: int) -> int:
    fds = Path(f"/proc/{pid}/fd")
    return sum(1 for f in fds.iterdir() if os.readlink(f) == "anon_inode:[pidfd]")


def test_holder_that_comes_after_arming(name, tmp_path):
    """A process that opens a watched channel after arming and keeps it
    open is found (its open wakes the recorder, which then scans) and
    watched: its death is a trigger. Found well before the periodic
    rescan (RESCAN_S)."""
    chan = name("bb-late")
    with nerve.create(chan, slots=64, size=1 << 16) as ch:
        ch.put(struct.pack("<Q", 1))
    p = arm(chan, "--pre", "1s", "--post", "0s", "-o", str(tmp_path), "--trigger-channel", name("bb-trig"))
    guard = threading.Timer(120, p.kill)  # bounded: a holder never found fails, not hangs
    guard.start()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import time, nerve\n"
        f"ch = nerve.open({chan!r})\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        deadline = time.monotonic() + blackbox.RESCAN_S / 2
        while _pidfds(p.pid) == 0:  # the recorder watches it by pidfd
            assert time.monotonic() < deadline, "the new holder was not found"
            time.sleep(0.05)
        holder.kill()
        path, _ = written(p)
    finally:
        guard.cancel()
        stop(holder)
        end(p)
    rec = read_mcap(path)["metadata"]["nerve.blackbox.trigger"]
    assert rec["kind"] == "process-death" and str(holder.pid) in rec["source"], rec


def test_named_pid_death(rig):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        p = armed_on(rig, "--no-holders", "--pid", str(sleeper.pid))
        try:
            assert "watching 1 processes" in p.plan, p.plan
            sleeper.kill()
            path, _ = written(p)
        finally:
            end(p)
    finally:
        stop(sleeper)
    rec = check(path)
    assert rec["kind"] == "process-death" and rec["source"] == f"pid {sleeper.pid}"


def test_silence(rig, name):
    quiet = name("bb-quiet")
    with nerve.create(quiet, slots=8, size=1 << 12) as ch:
        ch.put(struct.pack("<Q", 1))
    p = arm(quiet, rig["mid"], "--pre", "1s", "--post", "200ms", "-o", str(rig["out"]), "--trigger-channel",
            rig["trig"], "--no-holders", "--silence", f"{quiet}=300ms")
    try:
        path, _ = written(p)
    finally:
        end(p)
    rec = check(path)
    assert rec["kind"] == "silence" and quiet in rec["source"]
    chans = json.loads(rec["channels"])
    # Message 1 is in the file: as the last known state if it is older than
    # T - pre (the recorder's start-up on a loaded host decides), else in the window.
    assert chans[quiet]["last_state_seq"] == 1 or chans[quiet]["messages"] == 1, chans[quiet]


def test_two_triggers_100ms_apart_merge(rig):
    p = armed_on(rig)
    try:
        trigger_cmd(rig["trig"], "one")
        time.sleep(0.1)
        trigger_cmd(rig["trig"], "two")
        path, said = written(p)
    finally:
        end(p)
    rec = check(path)
    triggers = json.loads(rec["triggers"])
    # Merged unless the first incident closed before the second came (a
    # loaded host): then there is a second file, also complete.
    if "merged" in said:
        assert [t["note"] for t in triggers] == ["one", "two"]
        assert triggers[1]["time_ns"] > triggers[0]["time_ns"]
    else:
        assert [t["note"] for t in triggers] == ["one"]


def test_recorder_killed_mid_dump_then_dump_at(rig):
    p = armed_on(rig, "--post", "3s")
    t_wall = time.time()
    trigger_cmd(rig["trig"], "fell")
    time.sleep(1.0)  # inside the post window: the dump is in progress
    p.kill()
    p.communicate(timeout=60)
    out = rig["out"] / "after"
    r = subprocess.run([tool("blackbox"), "dump", "--at", repr(t_wall), "--pre", "1s", "--post", "1s",
                        "-o", str(out), rig["mid"], rig["slow"]], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rec = check(Path(r.stdout.strip()))
    assert rec["kind"] == "dump"
    chans = json.loads(rec["channels"])
    assert chans[rig["mid"]]["last_state_seq"] > 0 and chans[rig["mid"]]["messages"] >= 50


def test_bad_input(rig, tmp_path):
    trigger_was_there = os.path.exists(nerve.path("blackbox.trigger"))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([tool("blackbox"), *args], capture_output=True, text=True, timeout=60)

    r = run(rig["prefix"] + "no-such-*", "-o", str(tmp_path))
    assert r.returncode == 1 and "no channel matches" in r.stderr
    r = run(rig["mid"], "--pre", "ten")
    assert r.returncode == 2 and "not a duration" in r.stderr
    r = run(rig["mid"], "--silence", "nothing")
    assert r.returncode == 2 and "GLOB=VALUE" in r.stderr
    r = run("dump", "--at", "yesterday", rig["mid"])
    assert r.returncode == 2 and "not a time" in r.stderr
    r = run(rig["mid"], "--pid", "999999999", "-o", str(tmp_path))
    assert r.returncode == 1 and "--pid 999999999" in r.stderr
    # ... and leaves no trigger channel behind (the default name's).
    assert not os.path.exists(nerve.path("blackbox.trigger")) or trigger_was_there
    r = run("trigger", "--trigger-channel", rig["prefix"] + "no-recorder")
    assert r.returncode == 1 and "no armed recorder" in r.stderr
    # --when: an unknown field is an error at arming (the rest of --when's
    # errors are checked in process by test_when_errors).
    imu = rig["prefix"] + "bb-bad-imu"
    with nerve.create(imu, slots=8, size=1 << 12, **schemas.channel_options("sensor_msgs/msg/Imu")):
        r = run(imu, "--when", f"{imu}: linear_acceleration.w > 3", "--trigger-channel", rig["trig"])
    nerve.unlink(imu)
    assert r.returncode == 1 and "linear_acceleration has no field 'w'" in r.stderr, r.stderr


def test_when_errors(name):
    """--when's expressions and their check against the channel at arming
    (in process: no recorder is started)."""
    with pytest.raises(condition.ConditionError, match="expected 'CHANNEL: FIELD OP VALUE"):
        condition.parse("nonsense")
    with pytest.raises(condition.ConditionError, match="> needs a number"):
        condition.parse("a: b > high")
    with pytest.raises(condition.ConditionError, match="bad field path"):
        condition.parse("a: b..c > 1")
    c = condition.parse("a.b: x[1].y <= -2.5 clear == \"ok\"")
    assert (c.channel, c.field, c.fire.op, c.fire.value, c.clear.value) == ("a.b", "x.1.y", "<=", -2.5, "ok")
    imu, raw, js = name("bb-w-imu"), name("bb-w-raw"), name("bb-w-json")
    cs, bad = name("bb-w-struct"), name("bb-w-badstruct")
    with nerve.create(imu, slots=8, size=1 << 12, **schemas.channel_options("sensor_msgs/msg/Imu")) as ci, \
            nerve.create(raw, slots=8, size=1 << 12) as cr, \
            nerve.create(cs, slots=8, size=1 << 12, type="robot/Imu", encoding="raw", schema=IMU_STRUCT) as cc, \
            nerve.create(bad, slots=8, size=1 << 12, schema=b"struct A { double *p; };") as cb, \
            nerve.create(js, slots=8, size=1 << 12, encoding="json") as cj:
        cj.put(b'{"a": {"b": [1, 2]}, "s": "x"}')
        newest = cj.get(newest=True, repeat=True)
        for text, ch, msg, error in [
            (f"{raw}: a > 1", cr, None, "raw without a schema"),
            (f"{bad}: p > 1", cb, None, "pointers, bit fields, unions and enums are not supported"),
            (f"{cs}: linear_acceleration.w > 1", cc, None, "linear_acceleration has no field 'w'"),
            (f"{cs}: linear_acceleration > 1", cc, None, "linear_acceleration is not a number"),
            (f"{imu}: header > 3", ci, None, "header is dict, not a number"),
            (f"{imu}: orientation.v == 1", ci, None, "orientation has no field 'v'"),
            (f"{js}: a.c > 1", cj, newest, "a has no field 'c'"),
        ]:
            with pytest.raises(condition.ConditionError, match=re.escape(error)):
                condition.Watch(condition.parse(text), ch.name, ch, msg)
        # Fields that exist: an array item, a list item, a string compared with ==.
        condition.Watch(condition.parse(f"{imu}: orientation_covariance.8 > 1"), imu, ci, None)
        condition.Watch(condition.parse(f"{js}: a.b.1 > 1"), js, cj, newest)
        condition.Watch(condition.parse(f"{js}: s == x"), js, cj, newest)
        # A struct's field: its offset in the host's C layout, read alone.
        w = condition.Watch(condition.parse(f"{cs}: linear_acceleration.z > 30"), cs, cc, None)
        assert (w.offset, w.struct.size) == (24, 40)
        cc.put(struct.pack("=Q3dfi", 1, 0.0, 0.0, 31.5, 0.0, 0))
        cc.put(b"short")  # shorter than the struct: counted, never a crash
        assert [v for _m, v in w.poll()] == [31.5] and w.undecodable == 1


def test_full_disk_keeps_what_was_written(rig, name):
    big = name("bb-big")
    nerve.create(big, slots=64, size=1 << 24).close()

    def limit() -> None:  # a 4 MiB file size limit: the second incident cannot fit
        resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, 4 << 20))

    p = arm(big, "--pre", "10s", "--post", "0s", "-o", str(rig["out"]), "--trigger-channel", rig["trig"],
            "--no-holders", "--cooldown", "0", "--compression", "none", preexec_fn=limit)
    try:
        with nerve.open(big, write=True) as ch:
            ch.put(struct.pack("<Q", 1) + bytes(100))
            trigger_cmd(rig["trig"], "small")
            first, _ = written(p)
            for i in range(2, 12):
                ch.put(struct.pack("<Q", i) + os.urandom(600_000))
            trigger_cmd(rig["trig"], "big")
        err = p.communicate(timeout=60)[1]
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 1 and "File too large" in err and "written before are kept" in err, err
    assert check(first)["note"] == "small"


def _put_value(ch: nerve.Channel, encoding: str, z: float) -> Tuple[int, int]:
    """Put one message whose field linear_acceleration.z is z; returns
    (seq, commit time)."""
    if encoding == "json":
        data = json.dumps({"linear_acceleration": {"z": z}}).encode()
    elif encoding == "struct":  # IMU_STRUCT, in the host's layout
        data = struct.pack("=Q3dfi", 7, 0.0, 0.0, z, 20.5, 0)
    else:
        msg = schemas.example("sensor_msgs/msg/Imu")
        msg.linear_acceleration.z = z
        data = schemas.encode(msg, "sensor_msgs/msg/Imu")
    ch.put(data)
    m = ch.get(newest=True, repeat=True)
    return m.seq, m.time_ns


#: A raw C struct channel's schema: its C declaration (codec/cstruct.py).
IMU_STRUCT = b"""
#include <stdint.h>
struct Vec3 { double x, y, z; };  /* at offset 8: aligned to 8 */
typedef struct { uint64_t stamp_ns; struct Vec3 linear_acceleration; float temp; int32_t pad; } Imu;
"""


@pytest.mark.parametrize("encoding", ["json", "cdr", "struct"])
def test_value_condition_one_message_spike_and_hysteresis(name, tmp_path, encoding):
    imu = name("bb-imu")
    opts = {"encoding": "json"} if encoding == "json" else \
        {"type": "robot/Imu", "encoding": "raw", "schema": IMU_STRUCT} if encoding == "struct" else \
        schemas.channel_options("sensor_msgs/msg/Imu")
    with nerve.create(imu, slots=256, size=1 << 16, **opts) as ch:
        p = arm(imu, "--pre", "500ms", "--post", "100ms", "-o", str(tmp_path), "--trigger-channel",
                name("bb-trig"), "--no-holders", "--cooldown", "0",
                "--when", f"{imu}: linear_acceleration.z > 30 clear < 25")
        try:
            for _ in range(20):
                _put_value(ch, encoding, 9.8)
            spike, spike_ns = _put_value(ch, encoding, 31.5)  # one message only
            _put_value(ch, encoding, 28.0)
            first, _ = written(p)
            # Not cleared (not below 25): 31 does not fire again; 20 clears; 35 fires.
            _put_value(ch, encoding, 29.0)
            _put_value(ch, encoding, 31.0)
            _put_value(ch, encoding, 20.0)
            again, again_ns = _put_value(ch, encoding, 35.0)
            second, said = written(p)
        finally:
            said = end(p)
    rec = check(first, unnumbered=(imu,))
    assert rec["kind"] == "value" and int(rec["time_ns"]) == spike_ns, rec
    assert f"message {spike}: 31.5" in rec["source"], rec["source"]
    assert json.loads(rec["channels"])[imu]["messages"] >= 21
    rec2 = check(second, unnumbered=(imu,))
    assert [t["time_ns"] for t in json.loads(rec2["triggers"])] == [again_ns], rec2["triggers"] + said
    assert f"message {again}: 35" in rec2["source"]


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_mcap_chunks_compressed(tmp_path, compression):
    """--compression: chunks of the dump's writer compressed, read back
    with mcap's readers (CRCs checked); several chunks and two channels."""
    path = tmp_path / "c.mcap"
    with open(path, "wb") as f:
        w = mcap_fast.Writer(f, "test", compression, chunk_size=4096)
        a = w.register_channel("a", "raw", 0, {"k": "v"})
        b = w.register_channel("b", "json", 0, {})
        for i in range(100):
            w.add(a if i % 2 else b, i + 1, 1000 + i, bytes([i]) * 100)
        w.add_metadata("m", {"x": "1"})
        w.finish()
    got = read_mcap(path)
    assert [m.log_time for _s, _c, m in got["messages"]] == list(range(1000, 1100))
    assert got["summary"].statistics.channel_message_counts == {a: 50, b: 50}
    assert all(c.compression == compression for c in got["summary"].chunk_indexes)
    assert len(got["summary"].chunk_indexes) > 1 and got["metadata"]["m"] == {"x": "1"}


def test_armed_recorder_imports_only_what_it_uses():
    """The armed recorder's memory (under 16 MB, bench/blackbox_cost.py):
    nothing it does not use while armed is imported with it; asyncio
    (for nerve's get_async), dataclasses with inspect, the value
    conditions with their decoders, subprocess (--ros2-service), mcap;
    the dump's file writer (mcap_fast, zlib), datetime, nerve.rt and
    nerve.bridge; shutil (with bz2 and lzma), which argparse's help
    formatter imports unless given a width; `nerve who`'s options."""
    heavy = ["asyncio", "concurrent.futures", "dataclasses", "inspect", "subprocess",
             "nerve_tools.recording.condition", "numpy", "mcap", "nerve_tools.recording.mcap_fast",
             "zlib", "datetime", "nerve.rt", "nerve.bridge", "shutil", "nerve_tools.options"]
    code = ("import sys, nerve_tools.recording.blackbox as b, nerve_tools.monitor.who\n"
            "b.parser().parse_args(['x'])\n"
            f"print(' '.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [], f"imported with the recorder: {out.stdout}"


def test_open_watch_counts_holders_not_stats(name):
    """A holder keeps its channel file open; a tool that stats it closes it
    at once: only opens not matched by a close make the recorder scan
    /proc for holders (in process: inotify on one file)."""
    chan = name("bb-opens")
    nerve.create(chan, slots=8, size=1 << 12).close()
    w = blackbox.OpenWatch([nerve.path(chan)])
    try:
        nerve.stat(chan)
        assert w.drain() == 0
        held = nerve.open(chan)
        assert w.drain() == 1
        held.close()
        assert w.drain() == -1 and not w.overflow
    finally:
        w.close()


def test_open_watch_wakes_on_writers_only(name):
    """The writer-lock watch sees a writer's release of the file (where a
    lock holder's death shows), not readers' or tools' opens; a removed
    name says so, and is watched again once it names a file."""
    chan = name("bb-writers")
    path = nerve.path(chan)
    nerve.create(chan, slots=8, size=1 << 12).close()
    w = blackbox.OpenWatch([path], blackbox.OpenWatch.WRITERS)
    try:
        w.events()  # the create's own release
        nerve.stat(chan)
        nerve.open(chan).close()
        assert w.events() == []
        nerve.open(chan, write=True).close()
        assert [(p, m & w.IN_CLOSE_WRITE) for p, m in w.events()] == [(path, w.IN_CLOSE_WRITE)]
        nerve.unlink(chan)
        assert any(p == path and m & w.IN_ATTRIB for p, m in w.events())
        assert not w.add(path)
        nerve.create(chan, slots=8, size=1 << 12).close()
        assert w.add(path)
        w.events()
        nerve.open(chan, write=True).close()
        assert [p for p, _ in w.events()] == [path] and not w.overflow
    finally:
        w.close()


def test_writer_died_holding_the_lock(name, tmp_path):
    locked = name("bb-locked")
    with nerve.create(locked, slots=64, size=1 << 16) as ch:
        ch.put(struct.pack("<Q", 1))
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time, nerve\n"
        f"ch = nerve.open({locked!r}, write=True)\n"
        "with ch.reserve(64):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        # Only the lock's state can trigger: its holder is not watched by
        # pidfd. The check of every lock is an hour away, so the trigger
        # comes from the event (the dead writer's file released).
        p = arm(locked, "--pre", "1s", "--post", "200ms", "-o", str(tmp_path), "--trigger-channel",
                name("bb-trig"), "--no-holders", "--lock-backstop", "3600s")
        guard = threading.Timer(120, p.kill)  # bounded: a missed event fails, not hangs
        guard.start()
        try:
            killed_ns = nerve.now_ns()
            holder.kill()  # SIGKILL inside the reservation: the kernel marks the lock
            path, _ = written(p)
        finally:
            guard.cancel()
            end(p)
    finally:
        stop(holder)
    rec = check(path)
    assert rec["kind"] == "lock-owner-death" and locked in rec["source"], rec
    # Far below the backstop: a generous bound for a loaded host.
    assert int(rec["time_ns"]) - killed_ns < 60e9, rec
    assert json.loads(rec["channels"])[locked]["last_state_seq"] == 1 or \
        json.loads(rec["channels"])[locked]["messages"] == 1


TASK = r"""
import sys, time, nerve, nerve.rt
with nerve.open(sys.argv[1], write=True) as ch, nerve.rt.periodic(0.01, stats_channel=ch) as loop:
    for tick in loop:
        if tick.cycle == 20:
            time.sleep(0.05)  # an overrun (and skipped releases) in cycle 21
        if tick.cycle >= 30:
            break
"""


def test_task_overrun_from_its_statistics_channel(name, tmp_path):
    stats = name("bb-task")
    nerve.create(stats, slots=256, size=1 << 16, type=nerve.rt.TASK_STATS_TYPE).close()
    p = arm(stats, "--pre", "1s", "--post", "100ms", "-o", str(tmp_path), "--trigger-channel", name("bb-trig"),
            "--no-holders")
    try:
        subprocess.run([sys.executable, "-c", TASK, stats], check=True, timeout=60)
        path, _ = written(p)
    finally:
        end(p)
    rec = check(path, unnumbered=(stats,))
    assert rec["kind"] == "task" and "overruns 0 -> 1" in rec["source"], rec
    # The trigger is the first cycle with an overrun (a loaded host may
    # have made an earlier one late than the one forced), at its commit time.
    cycle = int(rec["source"].split("cycle ", 1)[1].split(":", 1)[0])
    with nerve.open(stats) as ch:
        msg = ch.get(at=int(rec["time_ns"]))
        fields = struct.unpack_from("=5Q", msg.data)
        before = struct.unpack_from("=5Q", ch.get(seq=msg.seq - 1).data)
    assert msg.time_ns == int(rec["time_ns"]) and fields[0] == cycle <= 21
    assert fields[1] == 1 and before[1] == 0


def test_shadow_buffer_holds_the_window_a_ring_cannot(rig):
    # The 1 kHz channel's 256-slot ring holds 256 ms; its shadow buffer the
    # whole 1 s pre window (the others, whose rings hold it, get none).
    p = armed_on(rig, "--shadow")
    try:
        assert f"shadow buffer (every message copied) for {rig['fast']}\n" in p.plan, p.plan
        time.sleep(1.5)  # the shadow fills
        trigger_cmd(rig["trig"], "shadowed")
        path, _ = written(p)
    finally:
        end(p)
    rec = check(path, expect_missed_zero=False)
    fast = json.loads(rec["channels"])[rig["fast"]]
    # The last state and the full window: from the shadow, then the ring
    # (a loaded host may overrun the shadow's reader: counted as missed).
    assert fast["last_state_seq"] > 0 and fast["achieved_pre_s"] == 1.0, fast
    assert fast["messages"] + fast["missed"] > 2 * 256, fast  # far more than the ring holds
