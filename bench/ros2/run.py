"""The ROS 2 latency table (issue 24): one-way latency of Imu (324 B),
LaserScan (8 KiB), PointCloud2 (1 MiB) and 1080p RGB Image (6.2 MB) sized
messages, side by side in one run:

- nerve: a nerve writer and a nerve reader (zero-copy view), blocking and
  busy polling;
- Cyclone DDS over UDP, Fast DDS 2.9 over UDP: a DDS writer and reader
  of one library (ROS 2 names and QoS, the raw CDR type of `nerve ros2`);
- Cyclone DDS over iceoryx shared memory: <SharedMemory> enabled, Debian's
  iox-roudi started here (bounded lifetime, its memory pools sized for the
  cases) and a fixed-size type of the same size, samples loaned on both
  sides: Cyclone 0.10 puts only fixed-size types on iceoryx. The raw CDR
  type under the same configuration (it stays on UDP) is measured too;
- Fast DDS 2.9 over its SHM transport (32 MiB segments, the large-data
  advice), and with data-sharing delivery (bounded type, preallocated
  history, resource limits of the history depth);
- bridged: a nerve writer -> `nerve ros2` -> the Cyclone and Fast DDS
  readers of the UDP rows;
- legs: ros2_lat relay does per message what the bridge does (wait on the
  channel, view, copy into a DDS sample, dds_write_ts at the commit time)
  and times the nerve wake-up and the copy + dds_write; the Cyclone reader
  gives the total; delivery = total - the two (joined on source time);
- rclpy: two rclpy nodes of ROS 2 Jazzy on rmw_fastrtps_cpp (Fast DDS
  2.14 over UDP; shared memory off, as for the tests), Imu and cloud only.

Both libraries get their advice for large data over UDP: Fast DDS 4 MiB
socket buffers, Cyclone DDS 4 MiB socket buffers and an 8 MiB writer
history cache high watermark.

All DDS traffic on 127.0.0.1 (the configurations of tests/ros2/dds_lo.py).
Writers (and the bridge) are pinned to CPU 0, readers to CPU 1, when the
host has two CPUs or more and taskset exists (--no-pin: not pinned).

    .venv/bin/python bench/ros2/run.py [--build build] [--out FILE] [--no-pin]

Prints a Markdown table and writes it to --out with the host described
and this command. Needs `make build tools-install ros2-venvs`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "ros2"))

from dds_lo import CYCLONE_XML, FASTDDS_XML, FILTERS  # noqa: E402

# (label, message bytes, messages, rate Hz, ROS 2 type)
CASES = [("Imu", 324, 500, 100, "sensor_msgs/msg/Imu"),
         ("LaserScan 8 KiB", 8192, 500, 100, "sensor_msgs/msg/LaserScan"),
         ("PointCloud2 1 MiB", 1 << 20, 100, 20, "sensor_msgs/msg/PointCloud2"),
         ("Image 1080p RGB", 1920 * 1080 * 3 + 64, 40, 5, "sensor_msgs/msg/Image")]


PIN = {"pub": [], "sub": []}


def run(cmd, env, timeout=120, role="pub"):
    return subprocess.Popen(PIN[role] + cmd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def sub(cmd, env):
    """A reader, pinned to the readers' CPU, once it says READY."""
    s = run(cmd, env, role="sub")
    wait_ready(s)
    return s


# iceoryx memory pools (chunk = payload + header): every case fits, with
# room for Cyclone's publisher history (16) and what a reader holds.
ROUDI_TOML = """[general]
version = 1

[[segment]]

[[segment.mempool]]
size = 1024
count = 2000

[[segment.mempool]]
size = 16448
count = 512

[[segment.mempool]]
size = 1114112
count = 64

[[segment.mempool]]
size = 8388608
count = 40
"""

SHM_XML = ("<SharedMemory><Enable>true</Enable><LogLevel>warn</LogLevel>"
           "</SharedMemory></Domain>")

# Fast DDS's SHM transport beside the loopback UDP one (discovery stays on
# UDP 127.0.0.1); no default unicast locators, so that each participant
# announces its SHM locator and a same-host peer uses it. 32 MiB segments:
# the vendor's advice for large data is a segment larger than the samples.
FASTDDS_SHM_XML = """<?xml version="1.0" encoding="UTF-8" ?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <transport_descriptors>
    <transport_descriptor>
      <transport_id>udp_lo</transport_id>
      <type>UDPv4</type>
      <interfaceWhiteList><address>127.0.0.1</address></interfaceWhiteList>
      <maxInitialPeersRange>30</maxInitialPeersRange>
    </transport_descriptor>
    <transport_descriptor>
      <transport_id>shm</transport_id>
      <type>SHM</type>
      <segment_size>33554432</segment_size>
    </transport_descriptor>
  </transport_descriptors>
  <participant profile_name="nerve_shm" is_default_profile="true">
    <rtps>
      <userTransports><transport_id>shm</transport_id><transport_id>udp_lo</transport_id></userTransports>
      <useBuiltinTransports>false</useBuiltinTransports>
      <builtin>
        <metatrafficUnicastLocatorList>
          <locator><udpv4><address>127.0.0.1</address></udpv4></locator>
        </metatrafficUnicastLocatorList>
        <initialPeersList>
          <locator><udpv4><address>127.0.0.1</address></udpv4></locator>
        </initialPeersList>
      </builtin>
    </rtps>
  </participant>
</profiles>
"""


def start_roudi(tmp: Path):
    """iox-roudi with the pools above, for at most 30 minutes; None (and
    why, printed) if it is missing or does not come up."""
    exe = shutil.which("iox-roudi")
    if exe is None:
        print("iox-roudi not found (apt-get install iceoryx): no Cyclone iceoryx rows", flush=True)
        return None
    (tmp / "roudi.toml").write_text(ROUDI_TOML)
    log = open(tmp / "roudi.log", "w")
    d = subprocess.Popen(["timeout", "1800", exe, "-c", str(tmp / "roudi.toml"), "-l", "warning"],
                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    end = time.monotonic() + 30
    while time.monotonic() < end and d.poll() is None:
        if "ready for clients" in (tmp / "roudi.log").read_text():
            return d
        time.sleep(0.1)
    print("iox-roudi did not come up (another RouDi running?): no Cyclone iceoryx rows:\n"
          + (tmp / "roudi.log").read_text(), flush=True)
    stop(d)
    return None


def stop(p) -> None:
    if p is None or p.poll() is not None:
        return
    p.terminate()
    try:
        p.wait(15)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(5)


def pct(v: list, q: float) -> float:
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * q))] / 1e3 if v else 0.0


def legs(relay_out: Path, sub_out: Path) -> dict:
    """Join the relay's per-message legs with the reader's latencies on
    the source time: wake-up, copy + dds_write, delivery (the rest)."""
    rel = {}
    for line in relay_out.read_text().split("\n"):
        if line:
            src, wake, wr = (int(x) for x in line.split())
            rel[src] = (wake, wr)
    w, c, d, t = [], [], [], []
    for line in sub_out.read_text().split("\n"):
        if not line:
            continue
        src, lat = (int(x) for x in line.split())
        if src in rel:
            wake, wr = rel[src]
            w.append(wake)
            c.append(wr)
            d.append(lat - wake - wr)
            t.append(lat)
    return {"n": len(t), "wake_p50_us": pct(w, .5), "write_p50_us": pct(c, .5),
            "delivery_p50_us": pct(d, .5), "total_p50_us": pct(t, .5),
            "wake_p99_us": pct(w, .99), "write_p99_us": pct(c, .99),
            "delivery_p99_us": pct(d, .99), "total_p99_us": pct(t, .99)}


def result(p, timeout=120) -> dict:
    out, _ = p.communicate(timeout=timeout)
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"{p.args}: no result:\n{out}")


def wait_ready(p) -> None:
    line = p.stdout.readline()
    if "READY" not in line:
        raise RuntimeError(f"{p.args}: {line}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" /
                                         f"ros2-latency-{platform.node()}.md"))
    ap.add_argument("--no-pin", action="store_true")
    a = ap.parse_args()
    if not a.no_pin and (os.cpu_count() or 1) >= 2 and shutil.which("taskset"):
        PIN["pub"] = ["taskset", "-c", "0"]
        PIN["sub"] = ["taskset", "-c", "1"]
    lat = Path(a.build) / "bench" / "ros2" / "ros2_lat"
    flat = Path(a.build) / "bench" / "ros2" / "fastdds_lat"
    tmp = Path(tempfile.mkdtemp(prefix="nerve-ros2-bench-"))
    # Cyclone DDS's advice for large samples: socket buffers and a writer
    # history cache (high watermark) larger than a sample.
    (tmp / "cyclone.xml").write_text(CYCLONE_XML.replace(
        "</Discovery>", "</Discovery><Internal><SocketReceiveBufferSize min=\"4MB\"/>"
        "<SocketSendBufferSize min=\"4MB\"/><Watermarks><WhcHigh>8MB</WhcHigh></Watermarks>"
        "</Internal>"))
    # Fast DDS's advice for large data: socket buffers larger than a burst
    # (its default is the OS's, 208 KiB here: a Cyclone writer's 1 MiB
    # samples then reached a Fast DDS reader 21 times out of 100 in 60 s).
    big = ("<receiveBufferSize>4194304</receiveBufferSize>"
           "<sendBufferSize>4194304</sendBufferSize>")
    (tmp / "fastdds.xml").write_text(FASTDDS_XML.format(filter=FILTERS["jazzy"] + big))
    (tmp / "cyclone-shm.xml").write_text(
        (tmp / "cyclone.xml").read_text().replace("</Domain>", SHM_XML))
    (tmp / "fastdds-shm.xml").write_text(FASTDDS_SHM_XML)
    env = dict(os.environ, ROS_DOMAIN_ID=str(150 + os.getpid() % 50),
               CYCLONEDDS_URI=f"file://{tmp / 'cyclone.xml'}",
               FASTRTPS_DEFAULT_PROFILES_FILE=str(tmp / "fastdds.xml"),
               RMW_IMPLEMENTATION="rmw_fastrtps_cpp", ROS_LOG_DIR=str(tmp / "log"),
               PATH=f"{Path(a.build) / 'tools'}:{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}")
    shm_env = dict(env, CYCLONEDDS_URI=f"file://{tmp / 'cyclone-shm.xml'}")
    fshm_env = dict(env, FASTRTPS_DEFAULT_PROFILES_FILE=str(tmp / "fastdds-shm.xml"))
    import nerve

    roudi = start_roudi(tmp)
    rows = []
    try:
        measure(rows, env, shm_env, fshm_env, roudi, lat, flat, tmp, nerve)
    finally:
        stop(roudi)
    write_table(rows, a, tmp)
    return 0


def measure(rows, env, shm_env, fshm_env, roudi, lat, flat, tmp, nerve) -> None:
    for label, size, n, hz, rtype in CASES:
        chan = f"nerve-bench-ros2-{os.getpid()}"
        kind = rtype.rsplit("/", 1)[1]
        dtype = f"sensor_msgs::msg::dds_::{kind}_"
        nerve.create(chan, slots=64, size=max(2 << 20, 8 * size),
                     type=rtype, encoding="cdr").close()
        try:
            row = {"case": label, "n": n, "hz": hz}
            pub = [str(lat), "nervepub", chan, str(size), str(n), str(hz)]
            # nerve alone
            s = sub([str(lat), "nervesub", chan, str(n)], env)
            p = run(pub, env)
            row["nerve"] = result(s)
            p.wait(30)
            s = sub([str(lat), "nervesub", chan, str(n), "poll"], env)
            p = run(pub, env)
            row["poll"] = result(s)
            p.wait(30)
            # Cyclone DDS over UDP (the direct writer reports its dds_write)
            s = sub([str(lat), "sub", "/nerve_bench_direct", dtype, str(n)], env)
            p = run([str(lat), "ddspub", "/nerve_bench_direct", dtype, str(size), str(n), str(hz)], env)
            row["cyclone"] = result(s)
            row["cyclone_pub"] = result(p, 30)
            if roudi is not None:
                # Cyclone DDS over iceoryx: a fixed-size type, loaned samples
                s = sub([str(lat), "fixsub", "/nerve_bench_shm", str(size), str(n)], shm_env)
                p = run([str(lat), "fixpub", "/nerve_bench_shm", str(size), str(n), str(hz)], shm_env)
                row["cyshm"] = result(s)
                row["cyshm_pub"] = result(p, 30)
                # the raw CDR type under the same configuration: not fixed-size
                s = sub([str(lat), "sub", "/nerve_bench_shmraw", dtype, str(n)], shm_env)
                p = run([str(lat), "ddspub", "/nerve_bench_shmraw", dtype, str(size), str(n), str(hz)],
                        shm_env)
                row["cyshmraw"] = result(s)
                p.wait(30)
            # Fast DDS over UDP, over its SHM transport, with data sharing
            for key, fenv, extra_sub, extra_pub in (
                    ("fastdds", env, [], []), ("fshm", fshm_env, [], []),
                    ("fds", fshm_env, ["ds", str(size)], ["ds"])):
                top = f"/nerve_bench_{key}"
                s = sub([str(flat), "sub", top, dtype, str(n)] + extra_sub, fenv)
                p = run([str(flat), "pub", top, dtype, str(size), str(n), str(hz)] + extra_pub, fenv)
                row[key] = result(s)
                p.wait(30)
            # nerve writer -> nerve ros2 -> the Cyclone reader, then the Fast
            # DDS reader
            br = run([shutil.which("nerve-ros2", path=env["PATH"]), f"--to-ros={chan}:/nerve_bench_bridged"],
                     env)
            time.sleep(1.5)
            for key, prog in (("bridged", lat), ("fbridged", flat)):
                s = sub([str(prog), "sub", "/nerve_bench_bridged", dtype, str(n)], env)
                p = run(pub, env)
                row[key] = result(s)
                p.wait(30)
            stop(br)
            # the bridge's steps, timed per leg, to the Cyclone reader
            s = sub([str(lat), "sub", "/nerve_bench_relay", dtype, str(n), str(tmp / "sub.legs")], env)
            r = run([str(lat), "relay", chan, "/nerve_bench_relay", dtype, str(n), str(tmp / "relay.legs")],
                    env)
            wait_ready(r)
            time.sleep(1.5)
            p = run(pub, env)
            row["relay"] = result(s)
            result(r, 30)
            p.wait(30)
            row["legs"] = legs(tmp / "relay.legs", tmp / "sub.legs")
            # rclpy on rmw_fastrtps_cpp (Imu and the cloud: rclpy_lat.py
            # builds those two)
            if kind not in ("Imu", "PointCloud2"):
                rows.append(row)
                print(json.dumps(row), flush=True)
                continue
            py = str(ROOT / ".venv-jazzy" / "bin" / "python")
            script = str(ROOT / "bench" / "ros2" / "rclpy_lat.py")
            s = sub([py, script, "sub", kind, str(n)], env)
            p = run([py, script, "pub", kind, str(n), str(hz)], env)
            row["rclpy"] = result(s)
            p.wait(60)
        finally:
            nerve.unlink(chan)
        rows.append(row)
        print(json.dumps(row), flush=True)



COLS = [("nerve", "nerve (blocking, zero-copy)"), ("poll", "nerve (busy poll, zero-copy)"),
        ("cyclone", "Cyclone DDS UDP"),
        ("cyshm", "Cyclone DDS iceoryx (fixed-size type, loaned)"),
        ("cyshmraw", "Cyclone DDS, SharedMemory on, raw CDR type (stays on UDP)"),
        ("fastdds", "Fast DDS 2.9 UDP"), ("fshm", "Fast DDS 2.9 SHM transport"),
        ("fds", "Fast DDS 2.9 data sharing"),
        ("bridged", "nerve -> nerve ros2 -> Cyclone reader"),
        ("fbridged", "nerve -> nerve ros2 -> Fast DDS reader"),
        ("relay", "nerve -> relay (the bridge's steps, timed) -> Cyclone reader"),
        ("rclpy", "rclpy / rmw_fastrtps (Fast DDS 2.14 UDP)")]


def write_table(rows, a, tmp) -> None:
    lines = ["| message | path | n | p50 µs | p99 µs | max µs | CPU s (reader) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        for key, name in COLS:
            if key not in r:
                continue
            v = r[key]
            if key in ("cyshm", "cyshmraw"):
                name += f" [shm={'yes' if v.get('shm') else 'no'}]"
            lines.append(f"| {r['case']} | {name} | {v['n']}/{v['want']} | {v.get('p50_us', 0):.1f} | "
                         f"{v.get('p99_us', 0):.1f} | {v.get('max_us', 0):.1f} | {v.get('cpu_s', 0):.2f} |")
        for direct, bridged, name in (("cyclone", "bridged", "Cyclone"), ("fastdds", "fbridged", "Fast DDS")):
            d, b = r[direct].get("p50_us"), r[bridged].get("p50_us")
            if d and b:
                lines.append(f"| {r['case']} | bridged / direct p50, {name} reader | | {b / d:.2f} | | | |")
    legs_lines = ["| message | n | nerve wake-up | copy + dds_write | DDS delivery | total | "
                  "direct dds_write (hot buffer) | direct total |",
                  "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        g = r["legs"]
        legs_lines.append(
            f"| {r['case']} | {g['n']} | {g['wake_p50_us']:.1f} ({g['wake_p99_us']:.0f}) | "
            f"{g['write_p50_us']:.1f} ({g['write_p99_us']:.0f}) | "
            f"{g['delivery_p50_us']:.1f} ({g['delivery_p99_us']:.0f}) | "
            f"{g['total_p50_us']:.1f} ({g['total_p99_us']:.0f}) | "
            f"{r['cyclone_pub'].get('write_p50_us', 0):.1f} | {r['cyclone'].get('p50_us', 0):.1f} |")
    table = "\n".join(lines)
    legs_table = "\n".join(legs_lines)
    print(table)
    print(legs_table)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    host = (f"{platform.node()}: {os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
            f"Linux {platform.release()}")
    pinned = ("writers and the bridge pinned to CPU 0, readers to CPU 1 (taskset)"
              if PIN["pub"] else "not pinned")
    Path(a.out).write_text(
        "# ROS 2 latency: nerve, Cyclone DDS (UDP, iceoryx), Fast DDS (UDP, SHM, data sharing), "
        "nerve ros2, rclpy\n\n"
        f"Host: {host}; {pinned}; load average at the end {load} "
        "(a shared VM: other work ran on it).\n"
        "DDS on 127.0.0.1; UDP: 4 MiB socket buffers for both libraries, Cyclone's WhcHigh 8 MiB; "
        "Cyclone iceoryx: <SharedMemory> on, iox-roudi (Debian's iceoryx 2.0) started by the "
        "run, a fixed-size type of the message's size, loaned samples; Fast DDS SHM: its SHM "
        "transport, 32 MiB segments; Fast DDS data sharing: ON, bounded type, preallocated "
        "history, resource limits of the depth (10).\n"
        "Command: `make bench-ros2` (`.venv/bin/python bench/ros2/run.py`; messages and rates: "
        + ", ".join(f"{c[0]} {c[2]} at {c[3]} Hz" for c in CASES)
        + "; one-way = reception - origin time, same host).\n\n"
        f"{table}\n\n"
        "The bridged path in legs (p50, p99 in parentheses, µs): `ros2_lat relay` does per "
        "message what `nerve ros2` does and times the nerve wake-up (commit -> view returned) "
        "and the copy + dds_write; the Cyclone reader gives the total; delivery = total - both. "
        "The direct writer's dds_write (its own, just written buffer) and total for "
        "comparison:\n\n"
        f"{legs_table}\n")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
