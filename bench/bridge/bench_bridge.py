#!/usr/bin/env python3
"""nerve bridge against bare Zenoh, side by side in one run, across the same
veth pair (two network namespaces on this machine, tests/python_tools/
netns.py): nerve writer -> channel -> nerve-bridge -> Zenoh -> nerve-bridge
-> channel -> nerve reader, and eclipse-zenoh publisher -> subscriber with
the same payloads and the same QoS (congestion control DROP, priority
DATA, no express).

    sudo .venv/bin/python bench/bridge/bench_bridge.py [--out bench/results/bridge-HOST.md]
         [--quick]

Reports latency p50/p99/max at 64 B and 1 MB (paced, idle link),
throughput of 64 B messages (a burst as fast as the sender can), 1080p RGB
frames (6,220,800 B) at 30 Hz for 60 s with the loss count, and the CPU
use of each bridge process in each phase. Needs root (namespaces)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python_tools"))
from netns import Net, wait_for  # noqa: E402

PEERS = str(Path(__file__).with_name("peers.py"))
PY = sys.executable
BRIDGE = shutil.which("nerve-bridge") or str(Path(PY).parent / "nerve-bridge")


def pct(v: List[int], p: float) -> float:
    if not v:
        return float("nan")
    s = sorted(v)
    return s[min(len(s) - 1, int(p / 100 * len(s)))] / 1e3


def cpu_s(pid: int) -> float:
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def run_pair(h_recv, recv_argv, h_send, send_argv, log: Path, timeout: float = 240) -> Dict:
    rx = h_recv.spawn(*recv_argv, log=log)
    wait_for(lambda: "ready" in log.read_text() or rx.poll() is not None, 30, "receiver ready")
    tx = h_send.run(*send_argv, timeout=timeout)
    if tx.returncode != 0:
        raise RuntimeError(f"sender failed: {tx.stderr}")
    out, _ = rx.communicate(timeout=timeout)
    res = json.loads(out.strip().splitlines()[-1])
    res["sender"] = json.loads(tx.stdout.strip().splitlines()[-1])
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="write the Markdown report here")
    ap.add_argument("--quick", action="store_true", help="short run (10 s of 1080p, fewer samples)")
    ap.add_argument("--phases", default="lat64,lat1m,thr64,img", help="which phases (all)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_bridge: needs root (network namespaces)", file=sys.stderr)
        return 1
    q = args.quick
    n_lat64, n_lat1m = (300, 60) if q else (2000, 300)
    n_thr = 20000 if q else 100000
    img_s = 10 if q else 60
    net = Net(2)
    tmp = Path(f"/tmp/bench-bridge-{os.getpid()}")
    tmp.mkdir(exist_ok=True)
    results: Dict[str, Dict] = {}
    cpu: Dict[str, Dict[str, float]] = {}
    try:
        h1, h2 = net.hosts
        ep_z = f"tcp/{h2.addr}:7450"
        # ---- bare Zenoh ------------------------------------------------
        phases = args.phases.split(",")
        for tag, n, size, rate in (("lat64", n_lat64, 64, 500), ("lat1m", n_lat1m, 1 << 20, 50),
                                   ("thr64", n_thr, 64, 0), ("img", 30 * img_s, 6220800, 30)):
            if tag not in phases:
                continue
            print(f"bare zenoh {tag} ...", file=sys.stderr, flush=True)
            results[f"zenoh.{tag}"] = run_pair(
                h2, [PY, PEERS, "zsub", ep_z, str(n), "2"], h1,
                [PY, PEERS, "zpub", ep_z, str(n), str(size), str(rate)], tmp / f"z-{tag}.log")
        # ---- nerve through the bridges ----------------------------------
        mk = ("import nerve\n"
              "nerve.create('bench.small', slots=1 << 17, size=64 << 20).close()\n"
              "nerve.create('bench.big', slots=64, size=64 << 20).close()\n"
              "nerve.create('bench.img', slots=8, size=64 << 20).close()\n"
              "print(1)")
        h1.py(mk)
        b1 = h1.spawn(BRIDGE, "--listen", f"tcp/{h1.addr}:7447", "--export", "bench.*", "--stats", "5",
                      log=tmp / "b1.log")
        b2 = h2.spawn(BRIDGE, "--connect", f"tcp/{h1.addr}:7447", "--import", "bench.*", "--stats", "5",
                      log=tmp / "b2.log")
        wait_for(lambda: (tmp / "b2.log").read_text().count("importing") >= 3, 30, "bridges")
        cases = [("lat64", "bench.small", n_lat64, 64, 500), ("lat1m", "bench.big", n_lat1m, 1 << 20, 50),
                 ("thr64", "bench.small", n_thr, 64, 0), ("img", "bench.img", 30 * img_s, 6220800, 30)]
        for tag, ch, n, size, rate in cases:
            if tag not in phases:
                continue
            print(f"nerve bridge {tag} ...", file=sys.stderr, flush=True)
            c0 = (cpu_s(b1.pid), cpu_s(b2.pid), time.monotonic())
            results[f"nerve.{tag}"] = run_pair(
                h2, [PY, PEERS, "nread", ch, str(n), "3", "poll" if tag == "thr64" else "wait"], h1,
                [PY, PEERS, "nwrite", ch, str(n), str(size), str(rate), "0.5"], tmp / f"n-{tag}.log")
            c1 = (cpu_s(b1.pid), cpu_s(b2.pid), time.monotonic())
            wall = c1[2] - c0[2]
            cpu[tag] = {"export": 100 * (c1[0] - c0[0]) / wall, "import": 100 * (c1[1] - c0[1]) / wall,
                        "wall_s": wall}
        b1.terminate()
        b2.terminate()
        stats = {}
        for name, p in (("export", b1), ("import", b2)):
            out, _ = p.communicate(timeout=20)
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            stats[name] = json.loads(lines[-1]) if lines else {}
    finally:
        net.close()
    if set(phases) != {"lat64", "lat1m", "thr64", "img"}:  # partial: raw numbers only
        print(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "lat_ns"} for k, v in results.items()}
                         | {"cpu": cpu, "bridge_stats": stats}, indent=1))
        return 0
    report = render(results, cpu, stats, q)
    print(report)
    if args.out:
        args.out.write_text(report)
        (args.out.with_suffix(".json")).write_text(json.dumps(
            {k: {kk: vv for kk, vv in v.items() if kk != "lat_ns"} for k, v in results.items()}
            | {"cpu": cpu, "bridge_stats": stats}, indent=1))
    return 0


def host_desc() -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    from importlib.metadata import version

    import zenoh  # noqa: F401

    return (f"{platform.node()}: {os.cpu_count()} CPUs ({cpu}), Linux {platform.release()}, "
            f"Python {platform.python_version()}, eclipse-zenoh {version('eclipse-zenoh')}")


def render(r: Dict[str, Dict], cpu: Dict, stats: Dict, quick: bool) -> str:
    L = ["# nerve bridge vs bare Zenoh", "",
         f"Host: {host_desc()}. Shared with other builds while this ran (numbers are noisy).",
         "Two network namespaces joined by a veth pair through a Linux bridge, one machine.",
         f"Command: `sudo .venv/bin/python bench/bridge/bench_bridge.py{' --quick' if quick else ''} --out ...`",
         "", "## Latency (paced, idle link), microseconds", "",
         "| path | size | n | p50 | p99 | max | p50 ratio |", "|---|---|---|---|---|---|---|"]
    for tag, size in (("lat64", "64 B"), ("lat1m", "1 MiB")):
        z, nb = r[f"zenoh.{tag}"], r[f"nerve.{tag}"]
        zp50 = pct(z["lat_ns"], 50)
        for name, x in (("bare Zenoh pub -> sub", z), ("nerve -> bridge -> Zenoh -> bridge -> nerve", nb)):
            p50 = pct(x["lat_ns"], 50)
            L.append(f"| {name} | {size} | {x['received']} | {p50:.0f} | {pct(x['lat_ns'], 99):.0f} | "
                     f"{max(x['lat_ns']) / 1e3:.0f} | {p50 / zp50:.2f} |")
    L += ["", "## Throughput of 64 B messages (sender as fast as it can, DROP)", "",
          "Receive rate = messages received / time from the first to the last. The Zenoh subscriber "
          "counts in its callback; the nerve reader (another process on the receiving host) polls the "
          "imported channel every 0.2 ms.", "",
          "| path | sent | received | receive rate msg/s | ratio |", "|---|---|---|---|---|"]
    z, nb = r["zenoh.thr64"], r["nerve.thr64"]
    zr = z["received"] / (z["span_ns"] / 1e9) if z["span_ns"] else 0
    nr = nb["received"] / (nb["span_ns"] / 1e9) if nb["span_ns"] else 0
    L.append(f"| bare Zenoh | {z['sender']['sent']} | {z['received']} | {zr:.0f} | 1.00 |")
    L.append(f"| nerve bridge | {nb['sender']['sent']} | {nb['received']} (+{nb['missed']} overwritten before "
             f"the reader) | {nr:.0f} | {nr / zr if zr else float('nan'):.2f} |")
    im, zi = r["nerve.img"], r["zenoh.img"]
    L += ["", "## 1080p RGB frames (6,220,800 B) at 30 Hz", "",
          "| path | sent | received | lost | p50 ms | p99 ms | max ms |", "|---|---|---|---|---|---|---|"]
    for name, x, got in (("bare Zenoh", zi, zi["received"]), ("nerve bridge", im, im["distinct"])):
        L.append(f"| {name} | {x['sender']['sent']} | {got} | {x['sender']['sent'] - got} | "
                 f"{pct(x['lat_ns'], 50) / 1e3:.2f} | {pct(x['lat_ns'], 99) / 1e3:.2f} | "
                 f"{max(x['lat_ns']) / 1e6 if x['lat_ns'] else float('nan'):.2f} |")
    L += ["",
          "## CPU use of the bridge processes (% of one CPU, per phase)", "",
          "| phase | exporting bridge | importing bridge | wall s |", "|---|---|---|---|"]
    for tag, c in cpu.items():
        L.append(f"| {tag} | {c['export']:.0f} % | {c['import']:.0f} % | {c['wall_s']:.1f} |")
    L += ["", "## Bridge counters at the end", "", "```", json.dumps(stats, indent=1, sort_keys=True), "```", ""]
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
