"""nerve ros2: no loops and no duplicates (one bridge both ways on a topic,
two bridges on one domain and one /dev/shm), channels that appear after
the bridge started, QoS adaptation, and the bounds on what a ROS 2 peer
may make the bridge allocate."""

from __future__ import annotations

from test_ros2_rclpy import N, make_channels, put_serialized, read_all

import nerve

from conftest import Ros2Env, need_distro, to_ros_matched, topic, wait_matched


def test_both_ways_no_echo(r2: Ros2Env, name) -> None:
    """A channel exported and imported on the same topic by one bridge: an
    rclpy publisher's messages enter the channel once and are not sent
    back; a message written into the channel by nerve goes out once."""
    need_distro("jazzy")
    (c,) = make_channels(name, ["String"]).values()
    t = topic(c)
    br = r2.bridge(f"--to-ros={c}", f"--from-ros={t}:{c}")
    br.wait_line(f"to-ros {c} -> ")
    sub = r2.rclpy("jazzy", "sub", f"{t}:String", "--want", str(2 * N), "--timeout", "240")
    sub.wait_line("^READY$", 120)
    pub = r2.rclpy("jazzy", "pub", f"{t}:String", "--count", str(N), "--subs", "2", gate=True)
    # (The bridge's reader ignores the bridge's own writer: no local match.)
    r2.open_gate(br, [t])
    assert pub.json(150)["matched"]
    to_ros_matched(br, [c])
    put_serialized(r2, "jazzy", {"String": c}, N, N)
    got = sub.json(240)["got"][t]
    # The publisher's 0..N-1 (straight from it) and nerve's N..2N-1 (from
    # the bridge), each exactly once: nothing echoed.
    assert sorted(got["idx"]) == list(range(2 * N)), got
    assert got["bad"] == 0
    assert len(read_all(c)) == 2 * N  # N imported + N put by nerve
    assert br.stop() == 0
    assert f"to-ros {c} -> {t}: {N} sent" in br.output and f"{N} own skipped" in br.output


def test_two_bridges_one_shm(r2: Ros2Env, name) -> None:
    """Bridge A exports a channel, bridge B (same /dev/shm) imports its topic
    into the same channel: B drops A's samples (the channel has them
    already), so the channel holds each message once."""
    need_distro("jazzy")
    (c,) = make_channels(name, ["String"]).values()
    t = topic(c)
    a = r2.bridge(f"--to-ros={c}", "--node=bridge_a")
    a.wait_line(f"to-ros {c} -> ")
    b = r2.bridge(f"--from-ros={t}:{c}", "--node=bridge_b")
    b.wait_line(f"from-ros {t} \\[std_msgs/msg/String\\] -> {c}", 90)
    sub = r2.rclpy("jazzy", "sub", f"{t}:String", "--want", str(N), "--timeout", "120")
    sub.wait_line("^READY$", 120)
    # A's writer matched the subscriber and B's reader, B's reader A's writer.
    to_ros_matched(a, [c], 2)
    wait_matched(b, f"from-ros {t}", 1)
    put_serialized(r2, "jazzy", {"String": c}, 0, N)
    assert sub.json(150)["got"][t]["idx"] == list(range(N))
    assert len(read_all(c)) == N
    assert b.stop() == 0
    assert f"0 received, 0 put, {N} from same-host bridges ignored" in b.output, b.output
    assert a.stop() == 0


def test_later_channel_and_bounds(r2: Ros2Env, name) -> None:
    """A channel created after the bridge started is published; a topic
    whose channel would exceed --max-channel-size is refused with one line
    and counted, while another topic keeps flowing; a best-effort
    publisher is matched (the reader follows its reliability)."""
    need_distro("jazzy")
    later = name("later")
    big, small = name("big"), name("small")
    br = r2.bridge(f"--to-ros={name('')[:-3]}*later", f"--from-ros={topic(big)}:{big}",
                   f"--from-ros={topic(small)}:{small}", "--max-channel-size=2M")
    ch = nerve.create(later, slots=16, size=1 << 16, type="std_msgs/msg/String", encoding="cdr")
    ch.close()
    br.wait_line(f"to-ros {later} -> {topic(later)}", 60)
    pub = r2.rclpy("jazzy", "pub", f"{topic(big)}:PointCloud2",
                   f"{topic(small)}:String:best_effort", "--count", "3", "--period", "0.2",
                   gate=True)
    r2.open_gate(br, [topic(big), topic(small)])
    assert pub.json(150)["matched"]
    br.wait_line(rf"error: from-ros {topic(big)}: channel {big} of \d+ bytes refused "
                 r"\(--max-channel-size 2097152", 60)
    assert len(read_all(small)) >= 1
    assert br.stop() == 0
    assert "refused_size 3" in br.output  # each of the three messages
    try:
        nerve.open(big)
        raise AssertionError(f"{big} was created")
    except nerve.ChannelNotFound:
        pass


def test_bad_arguments(tmp_path) -> None:
    """Bad arguments: exit status 2 and a line naming the problem, before
    any DDS traffic."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = shutil.which("nerve-ros2") or str(Path(sys.executable).parent / "nerve-ros2")
    cases = [
        ([], "at least one --to-ros, --from-ros, --services or --services-from-ros"),
        (["--from-ros", "/bad topic"], "not a valid ROS 2 topic name"),
        (["--from-ros", "/ok:bad/name"], "bad channel name"),
        (["--to-ros", "x", "--domain", "300"], "from 0 to 232"),
        (["--to-ros", "x", "--node", "no-dash"], "a node name is"),
        (["--to-ros", "x", "--dds-config", str(tmp_path / "missing.xml")], "no such file"),
        (["--to-ros", "x", "--max-channel-size", "lots"], "bad size"),
        (["--to-ros", "cam[0-9"], "opens no set"),  # the bridge kernel's glob check
        (["--to-ros", "a/b*"], "neither a channel name character"),
        (["--to-ros", "x", "--rmw", "zenoh", "--latch"], "apply to --rmw dds"),
        (["--to-ros", "x", "--rmw", "zenoh", "--services-from-ros", "/a/*"], "apply to --rmw dds"),
    ]
    for args, msg in cases:
        p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and msg in p.stderr, (args, p.returncode, p.stderr)


def test_sensor_data_profile(r2: Ros2Env, name) -> None:
    """--qos sensor_data: the bridge subscribes best effort (rclpy's graph
    says so) and still gets a reliable publisher's messages; its own
    publications stay reliable."""
    need_distro("jazzy")
    c = name("sd")
    (out,) = make_channels(name, ["String"]).values()
    br = r2.bridge("--qos=sensor_data", f"--from-ros={topic(c)}:{c}", f"--to-ros={out}")
    br.wait_line(f"to-ros {out} -> ")
    pub = r2.rclpy("jazzy", "pub", f"{topic(c)}:String", "--count", "3",
                   "--graph-topics", topic(c), topic(out), gate=True)
    r2.open_gate(br, [topic(c)])
    res = pub.json(150)
    assert res["matched"]
    ep = res["graph"]["endpoints"]
    assert [s["reliability"] for s in ep[topic(c)]["subscriptions"]] == ["BEST_EFFORT"]
    assert [p["reliability"] for p in ep[topic(out)]["publishers"]] == ["RELIABLE"]
    assert 1 <= len(read_all(c)) <= 3  # best effort: none twice, losses possible
    assert br.stop() == 0


def test_custom_type_hash(r2: Ros2Env, name) -> None:
    """A channel of a message type rosbags does not know, with its
    definition as schema: published with the RIHS01 hash computed from that
    schema (rclpy's graph shows it), though rclpy cannot decode the type."""
    need_distro("jazzy")
    from nerve_tools.ros2 import cli as ros2

    c = name("custom")
    schema = ("std_msgs/Header header\nfloat64 value\nstring unit\n" + "=" * 80
              + "\nMSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n"
              + "=" * 80 + "\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n")
    nerve.create(c, slots=8, size=1 << 16, type="nerve_test/msg/Reading", encoding="cdr",
                 schema=schema).close()
    data = ros2.catalog(ros2.schema_types("nerve_test/msg/Reading", schema))
    pos = data.index(b"T nerve_test/msg/Reading ")
    want = data[pos:data.index(b"\n", pos)].split()[2].decode()
    assert want.startswith("RIHS01_")
    br = r2.bridge(f"--to-ros={c}")
    line = br.wait_line(f"to-ros {c} -> ")
    assert "no type hash" not in line, line
    res = r2.rclpy_run("jazzy", "pub", "/nerve_probe_unused:String", "--count", "0",
                       "--graph-topics", topic(c))
    (pub,) = res["graph"]["endpoints"][topic(c)]["publishers"]
    assert pub["type"] == "nerve_test/msg/Reading"
    assert pub["hash"] is not None and want in pub["hash"], pub
    assert br.stop() == 0
