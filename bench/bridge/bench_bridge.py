#!/usr/bin/env python3
"""nerve bridge against bare Zenoh, side by side in one run, across the same
veth pair (two network namespaces on this machine, tests/python_tools/
netns.py): nerve writer -> channel -> nerve-bridge -> Zenoh -> nerve-bridge
-> channel -> nerve reader, and eclipse-zenoh publisher -> subscriber with
the same payloads, the same Zenoh configuration and the same QoS
(congestion control DROP, priority DATA, express only with --express on
both paths).

    sudo .venv/bin/python bench/bridge/bench_bridge.py [--out bench/results/bridge-HOST.md]
         [--quick] [--rounds 3] [--phases lat64,lat1m,thr64,img] [--express] [--pin] [--poll USEC]

Each round runs every phase over both paths, alternating which goes first,
so both see the same load; ratios are taken within a round and reported as
the median over the rounds, with the load average. Reports latency
p50/p99/max at 64 B and 1 MB (paced, idle link) beside the floor of the
bridge path (bare Zenoh + two blocking nerve hops, measured in the same
round), throughput of 64 B messages (a burst as fast as the sender can)
with the CPU time per message of every program, 1080p RGB frames
(6,220,800 B) at 30 Hz for 60 s with the loss count, and the CPU use of
each bridge process in each phase. Needs root (namespaces)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

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


# phase: (channel, size, messages quick/full, rate Hz (0: as fast as the
# sender can), how the nerve reader reads (peers.py nerve_reader))
PHASES = {
    "lat64": ("bench.small", 64, (300, 2000), 500, "wait"),
    "lat1m": ("bench.big", 1 << 20, (60, 300), 50, "view"),
    "thr64": ("bench.small", 64, (20000, 100000), 0, "poll"),
    "img": ("bench.img", 6220800, (300, 1800), 30, "view"),
}
# The floor of a latency phase: one blocking nerve hop between two Python
# programs on one host (writer -> channel -> reader), on a channel no
# bridge touches. The bridge path has two such hops more than bare Zenoh.
HOP = {"lat64": "hop.small", "lat1m": "hop.big"}


def pinned(cpu: Optional[int], argv: List[str]) -> List[str]:
    return ["taskset", "-c", str(cpu), *argv] if cpu is not None else argv


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="write the Markdown report here (and the numbers beside it, .json)")
    ap.add_argument("--quick", action="store_true", help="short run (10 s of 1080p, fewer samples)")
    ap.add_argument("--phases", default="lat64,lat1m,thr64,img", help="which phases (all)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds; each runs every phase over bare Zenoh and over the bridges, "
                         "alternating which goes first (3)")
    ap.add_argument("--express", action="store_true",
                    help="Zenoh express (no batching) on both paths: the bridges' --express and the "
                         "bare publisher's express=True")
    ap.add_argument("--pin", action="store_true",
                    help="pin the sending host's programs to CPU 0 and the receiving host's to CPU 1, "
                         "on both paths")
    ap.add_argument("--poll", type=float, default=0, metavar="USEC",
                    help="the exporting bridge runs with --poll USEC and every nerve reader of the latency "
                         "phases (bridge path and hop) waits with the same lead and spin")
    ap.add_argument("--note", default="", help="a line about the conditions, put in the report")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_bridge: needs root (network namespaces)", file=sys.stderr)
        return 1
    phases = [p for p in args.phases.split(",") if p]
    bad = [p for p in phases if p not in PHASES]
    if bad or args.rounds < 1:
        print(f"bench_bridge: unknown phase {bad} (known: {', '.join(PHASES)}) or rounds < 1", file=sys.stderr)
        return 2
    q = 0 if args.quick else 1
    c_send, c_recv = (0, 1) if args.pin and (os.cpu_count() or 1) >= 2 else (None, None)
    ex = ["express"] if args.express else []
    load0 = os.getloadavg()
    t_start = time.time()
    net = Net(2)
    tmp = Path(f"/tmp/bench-bridge-{os.getpid()}")
    tmp.mkdir(exist_ok=True)
    rounds: List[Dict[str, Dict]] = []
    stats: Dict[str, Dict] = {}
    try:
        h1, h2 = net.hosts
        ep_z = f"tcp/{h2.addr}:7450"
        mk = ("import nerve\n"
              "nerve.create('bench.small', slots=1 << 17, size=64 << 20).close()\n"
              "nerve.create('bench.big', slots=64, size=64 << 20).close()\n"
              "nerve.create('bench.img', slots=8, size=64 << 20).close()\n"
              "print(1)")
        h1.py(mk)
        h2.py("import nerve\n"  # small: this host's /dev/shm is a bounded tmpfs
              "nerve.create('hop.small', slots=4096, size=1 << 20).close()\n"
              "nerve.create('hop.big', slots=8, size=16 << 20).close()\n"
              "print(1)")
        bargs = ["--stats", "5", *(["--express"] if args.express else [])]
        pol = [str(args.poll)] if args.poll else []
        b1 = h1.spawn(*pinned(c_send, [BRIDGE, "--listen", f"tcp/{h1.addr}:7447", "--export", "bench.*", *bargs,
                                       *(["--poll", *pol] if pol else [])]),
                      log=tmp / "b1.log")
        b2 = h2.spawn(*pinned(c_recv, [BRIDGE, "--connect", f"tcp/{h1.addr}:7447", "--import", "bench.*",
                                       *bargs]), log=tmp / "b2.log")
        wait_for(lambda: (tmp / "b2.log").read_text().count("importing") >= 3, 30, "bridges")
        for r in range(args.rounds):
            res: Dict[str, Dict] = {}
            for tag in phases:
                ch, size, ns, rate, mode = PHASES[tag]
                rp = pol if mode != "poll" else []  # the reader's lead and spin
                n = ns[q] if tag != "img" or not args.quick else 300
                order = ["bare", "bridge"] if r % 2 == 0 else ["bridge", "bare"]
                if tag in HOP:
                    order.append("hop")
                for path in order:
                    print(f"round {r + 1}: {path} {tag} ...", file=sys.stderr, flush=True)
                    if path == "bare":
                        out = run_pair(h2, pinned(c_recv, [PY, PEERS, "zsub", ep_z, str(n), "2"]), h1,
                                       pinned(c_send, [PY, PEERS, "zpub", ep_z, str(n), str(size), str(rate), *ex]),
                                       tmp / f"z-{tag}.log")
                    elif path == "hop":
                        out = run_pair(h2, pinned(c_recv, [PY, PEERS, "nread", HOP[tag], str(n), "3", mode, *rp]), h2,
                                       pinned(c_send, [PY, PEERS, "nwrite", HOP[tag], str(n), str(size), str(rate),
                                                       "0.5"]), tmp / f"h-{tag}.log")
                    else:
                        c0 = (cpu_s(b1.pid), cpu_s(b2.pid), time.monotonic())
                        out = run_pair(h2, pinned(c_recv, [PY, PEERS, "nread", ch, str(n), "3", mode, *rp]), h1,
                                       pinned(c_send, [PY, PEERS, "nwrite", ch, str(n), str(size), str(rate), "0.5"]),
                                       tmp / f"n-{tag}.log")
                        c1 = (cpu_s(b1.pid), cpu_s(b2.pid), time.monotonic())
                        wall = c1[2] - c0[2]
                        out["bridge_cpu"] = {"export": 100 * (c1[0] - c0[0]) / wall,
                                             "import": 100 * (c1[1] - c0[1]) / wall, "wall_s": wall}
                    out.pop("arr_ns", None)
                    res[f"{path}.{tag}"] = out
            rounds.append(res)
        b1.terminate()
        b2.terminate()
        for name, p in (("export", b1), ("import", b2)):
            out, _ = p.communicate(timeout=20)
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            stats[name] = json.loads(lines[-1]) if lines else {}
    finally:
        net.close()
    load1 = os.getloadavg()
    cmd = "sudo .venv/bin/python bench/bridge/bench_bridge.py " + shlex.join(sys.argv[1:])
    report = render(rounds, phases, stats, args, load0, load1, time.time() - t_start, cmd)
    print(report)
    if args.out:
        args.out.write_text(report)
        args.out.with_suffix(".json").write_text(json.dumps(
            {"rounds": [{k: {**{kk: vv for kk, vv in v.items() if kk != "lat_ns"},
                                 "lat_us": {"p50": pct(v["lat_ns"], 50), "p99": pct(v["lat_ns"], 99),
                                            "max": max(v["lat_ns"], default=0) / 1e3}}
                             for k, v in res.items()} for res in rounds],
             "bridge_stats": stats, "load": [load0, load1]}, indent=1))
    return 0


def host_desc() -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    from importlib.metadata import version

    import zenoh  # noqa: F401

    virt = "virtual machine" if any("hypervisor" in ln for ln in open("/proc/cpuinfo") if ln.startswith("flags")) \
        else "bare metal"
    return (f"{platform.node()}: {os.cpu_count()} CPUs ({cpu}, {virt}), Linux {platform.release()}, "
            f"Python {platform.python_version()}, eclipse-zenoh {version('eclipse-zenoh')}")


def med(v: List[float]) -> float:
    v = [x for x in v if x == x]
    return statistics.median(v) if v else float("nan")


def spread(v: List[float]) -> str:
    v = [x for x in v if x == x]
    return f"{med(v):.2f} ({min(v):.2f}–{max(v):.2f})" if v else "–"


def rate_of(x: Dict) -> float:
    return x["received"] / (x["span_ns"] / 1e9) if x.get("span_ns") else float("nan")


def render(rounds: List[Dict[str, Dict]], phases: List[str], stats: Dict, args, load0, load1,
           took: float, cmd: str) -> str:
    R = len(rounds)
    placement = ("sending host on CPU 0, receiving host on CPU 1 (taskset)" if args.pin
                 else "none (the scheduler places every program)")
    L = ["# nerve bridge vs bare Zenoh", "",
         f"Host: {host_desc()}.", ""
         f"Date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; the run took {took / 60:.1f} min. "
         f"Load average before: {' '.join(f'{x:.2f}' for x in load0)}; after: "
         f"{' '.join(f'{x:.2f}' for x in load1)}.{' ' + args.note if args.note else ''}", "",
         "Two network namespaces joined by veth pairs through a Linux bridge, one machine. Both paths "
         "use the same Zenoh configuration (bridge_zenoh.make_config: peer, multicast scouting off, "
         "Zenoh shared memory off) and the same publisher QoS (congestion control DROP, priority DATA, "
         f"express {'on' if args.express else 'off'}). "
         + (f"Polling: the exporting bridge runs with --poll {args.poll:g} and every nerve reader of the latency "
            f"phases waits with a lead of {args.poll:g} µs and a spin of {2 * args.poll:g} µs (nerve.Channel.get's "
            "spin and lead); the bare Zenoh subscriber has no such knob. " if args.poll else "") +
         f"CPU placement: {placement}, both paths. "
         f"{R} rounds; each runs every phase over both paths, alternating which goes first; ratios are "
         "taken within a round, and given as median (min–max) over the rounds.", "",
         f"Command: `{cmd}`", ""]
    lat = [t for t in ("lat64", "lat1m") if t in phases]
    if lat:
        L += ["## Latency (paced, idle link), microseconds", "",
              "bare: the Zenoh subscriber's callback (it does not copy the payload out of Zenoh) minus the "
              "publisher's time before put(). bridge: the nerve reader's return from its blocking read (64 B: "
              "get(), one copy; 1 MiB: a zero-copy view) minus the writer's commit time. hop: one blocking nerve hop "
              "between two Python programs on one host at the same rate and size; the bridge path has two hops "
              "more than bare Zenoh, so bare + 2 × hop is a floor for it. Values: medians over the rounds.", "",
              "| size | path | n | p50 | p99 | max | p50 / bare p50 | p50 of each round |",
              "|---|---|---|---|---|---|---|---|"]
        for tag in lat:
            size = "64 B" if tag == "lat64" else "1 MiB"
            per = {p: [res[f"{p}.{tag}"] for res in rounds] for p in ("bare", "bridge", "hop")}
            zp = [pct(x["lat_ns"], 50) for x in per["bare"]]
            for p, label in (("bare", "bare Zenoh pub -> sub"),
                             ("bridge", "nerve -> bridge -> Zenoh -> bridge -> nerve"),
                             ("hop", "one nerve hop (writer -> reader, one host)")):
                xs = per[p]
                p50 = [pct(x["lat_ns"], 50) for x in xs]
                ratio = spread([a / b for a, b in zip(p50, zp)]) if p != "hop" else "–"
                L.append(f"| {size} | {label} | {xs[0]['received']} | {med(p50):.0f} | "
                         f"{med([pct(x['lat_ns'], 99) for x in xs]):.0f} | "
                         f"{med([max(x['lat_ns']) / 1e3 for x in xs]):.0f} | {ratio} | "
                         f"{', '.join(f'{v:.0f}' for v in p50)} |")
            puts = [x["sender"].get("put_us_p50", float("nan")) for x in per["bare"]]
            L.append(f"| {size} | bare Zenoh: the publisher's put() alone | – | {med(puts):.0f} | – | – | – | "
                     f"{', '.join(f'{v:.0f}' for v in puts)} |")
            floor = [(z + 2 * pct(h["lat_ns"], 50)) for z, h in zip(zp, per["hop"])]
            L.append(f"| {size} | floor: bare + 2 × hop | – | {med(floor):.0f} | – | – | "
                     f"{spread([f / z for f, z in zip(floor, zp)])} | {', '.join(f'{v:.0f}' for v in floor)} |")
        L.append("")
    if "thr64" in phases:
        L += ["## Throughput of 64 B messages (sender as fast as it can, DROP)", "",
              "Receive rate = messages received / time from the first to the last. The Zenoh subscriber counts "
              "in its callback; the nerve reader (another process on the receiving host) polls the imported "
              "channel every 0.2 ms. CPU: microseconds of CPU time per message of each program (all its "
              "threads), the bridges' including their idle work over the phase.", "",
              "| round | bare: received | bare msg/s | bridge: received (gaps) | bridge msg/s | ratio | "
              "CPU µs/msg: pub, sub | writer, export bridge, import bridge, reader |",
              "|---|---|---|---|---|---|---|---|"]
        ratios = []
        for i, res in enumerate(rounds):
            z, nb = res["bare.thr64"], res["bridge.thr64"]
            zr, nr = rate_of(z), rate_of(nb)
            ratios.append(nr / zr)
            n = nb["sender"]["sent"]
            bc = nb["bridge_cpu"]
            cpu_b = [bc["export"] / 100 * bc["wall_s"] * 1e6 / n, bc["import"] / 100 * bc["wall_s"] * 1e6 / n]
            f = lambda v: "–" if v is None else f"{v:.2f}"  # noqa: E731
            L.append(f"| {i + 1} | {z['received']} of {z['sender']['sent']} | {zr:.0f} | {nb['received']} of {n} "
                     f"| {nr:.0f} | {nr / zr:.2f} | {f(z['sender'].get('cpu_us_per_msg'))}, "
                     f"{f(z.get('cpu_us_per_msg'))} | {f(nb['sender'].get('cpu_us_per_msg'))}, {cpu_b[0]:.2f}, "
                     f"{cpu_b[1]:.2f}, {f(nb.get('cpu_us_per_msg'))} |")
        L += ["", f"Median ratio: {spread(ratios)}.", ""]
    if "img" in phases:
        L += ["## 1080p RGB frames (6,220,800 B) at 30 Hz", "",
              "| round | path | sent | received | lost | p50 ms | p99 ms | max ms |",
              "|---|---|---|---|---|---|---|---|"]
        for i, res in enumerate(rounds):
            for p, label in (("bare", "bare Zenoh"), ("bridge", "nerve bridge")):
                x = res[f"{p}.img"]
                got = x["received"] if p == "bare" else x["distinct"]
                v = x["lat_ns"]
                L.append(f"| {i + 1} | {label} | {x['sender']['sent']} | {got} | {x['sender']['sent'] - got} | "
                         f"{pct(v, 50) / 1e3:.2f} | {pct(v, 99) / 1e3:.2f} | "
                         f"{max(v) / 1e6 if v else float('nan'):.2f} |")
        L.append("")
    ex = stats.get("export", {}).get("export", {})
    im = stats.get("import", {}).get("import", {})
    legs = [(n, v.get("send_age_us", {}), im.get(f"{stats['export'].get('id')}/{n}", {}).get("put_age_us", {}))
            for n, v in sorted(ex.items())]
    legs = [x for x in legs if x[1].get("n")]
    if legs:
        L += ["## Legs of the bridge path (the bridges' own counters, latest 1024 samples of the last run)", "",
              "send_age: the writer's commit to the return of the exporter's Zenoh put(); put_age: the writer's "
              "commit to the importer's commit into the local channel (everything but the local reader's "
              "wake-up). Microseconds.", "",
              "| channel | send_age p50 | p99 | put_age p50 | p99 |", "|---|---|---|---|---|"]
        for n, sa, pa in legs:
            L.append(f"| {n} | {sa['p50']:.0f} | {sa['p99']:.0f} | {pa.get('p50', float('nan')):.0f} | "
                     f"{pa.get('p99', float('nan')):.0f} |")
        L.append("")
    L += ["## CPU use of the bridge processes (% of one CPU over each bridge run; median over the rounds)", "",
          "| phase | exporting bridge | importing bridge | wall s |", "|---|---|---|---|"]
    for tag in phases:
        cs = [res[f"bridge.{tag}"]["bridge_cpu"] for res in rounds]
        L.append(f"| {tag} | {med([c['export'] for c in cs]):.1f} % | {med([c['import'] for c in cs]):.1f} % | "
                 f"{med([c['wall_s'] for c in cs]):.1f} |")
    L += ["", "## Bridge counters at the end", "", "```", json.dumps(stats, indent=1, sort_keys=True), "```", ""]
    return "\n".join(L)


if __name__ == "__main__":
    sys.exit(main())
