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
each bridge process in each phase. Where `nerve-zenoh-peer` is installed
(make bench-bridge-peer: a bare Rust Zenoh publisher / subscriber and a Rust
nerve writer on the Rust bridge's zenoh crate), the throughput phase also
runs a bare Rust subscriber fed by the Python and by the Rust publisher, and
the bridge path fed by the Rust writer, and splits each bridge's CPU by
thread. Needs root (namespaces)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
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
# The bare Rust Zenoh peer (rust/nerve-bridge/src/bin/zenoh_peer.rs, built by
# `make bench-bridge-peer`): the same zenoh crate and features as the Rust
# bridge, the same output as peers.py's zpub / zsub.
RPEER = shutil.which("nerve-zenoh-peer") or str(Path(PY).parent / "nerve-zenoh-peer")


def pct(v: List[int], p: float) -> float:
    if not v:
        return float("nan")
    s = sorted(v)
    return s[min(len(s) - 1, int(p / 100 * len(s)))] / 1e3


def cpu_s(pid: int) -> float:
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def threads(pid: int) -> Dict[str, List[int]]:
    """[CPU time in nanoseconds (schedstat), voluntary context switches
    (the times it slept), involuntary ones (preempted), minor page faults]
    of each thread of a process, summed over threads of the same name with
    trailing digits and the channel name dropped (tx-0, tx-1 -> tx;
    export-bench.sm -> export)."""
    out: Dict[str, List[int]] = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = open(f"/proc/{pid}/task/{t}/comm").read().strip()
            ns = int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
            st = {ln.split(":")[0]: ln.split()[1] for ln in open(f"/proc/{pid}/task/{t}/status")
                  if ln.endswith("ctxt_switches\n") or "ctxt_switches:" in ln}
            flt = int(open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()[7])
            row = [ns, int(st["voluntary_ctxt_switches"]), int(st["nonvoluntary_ctxt_switches"]), flt]
        except (OSError, KeyError, IndexError, ValueError):
            continue  # the thread ended
        name = comm.split("-")[0] if comm.startswith("export-") else comm.rstrip("0123456789").rstrip("-")
        v = out.setdefault(name, [0, 0, 0, 0])
        for k in range(4):
            v[k] += row[k]
    return out


def proc_ns(pid: int) -> int:
    return sum(v[0] for v in threads(pid).values())


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
IDLE_S = 1.0  # how long the bridges' idle CPU is sampled before each bridge run


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
                    help="every nerve reader of the latency phases (bridge path and hop) waits with a "
                         "lead of USEC and a spin of twice that (the bridge's exporter sleeps in nerve's "
                         "blocking read: its --poll went with the Python data path)")
    ap.add_argument("--perf", type=Path, metavar="DIR",
                    help="record each bridge with `perf record -e cpu-clock -g` over the bridge runs of thr64, "
                         "into DIR/PATH-{export,import}-rN.data")
    ap.add_argument("--callgrind", type=Path, metavar="DIR",
                    help="run the Rust bridges (nerve-bridge-rs, not through the launcher) under valgrind's "
                         "callgrind, writing DIR/{export,import}.callgrind at the end: instruction counts by "
                         "function over the whole run (use with --quick --rounds 1 --phases thr64 --no-rust-peer)")
    ap.add_argument("--no-rust-peer", action="store_true",
                    help="leave out the bare Rust Zenoh subscriber in thr64 (nerve-zenoh-peer; left out anyway "
                         "when it is not installed)")
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
    rpeer = None if args.no_rust_peer or not os.access(RPEER, os.X_OK) else RPEER
    if "thr64" in phases and not rpeer and not args.no_rust_peer:
        print(f"bench_bridge: {RPEER} not installed (make bench-bridge-peer): no bare Rust subscriber",
              file=sys.stderr)
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
        def bridge(side: str) -> List[str]:
            if not args.callgrind:
                return [BRIDGE]
            rs = shutil.which("nerve-bridge-rs") or str(Path(PY).parent / "nerve-bridge-rs")
            return ["valgrind", "--tool=callgrind", "--dump-instr=no",
                    f"--callgrind-out-file={args.callgrind.resolve()}/{side}.callgrind", rs]

        if args.callgrind:
            args.callgrind.mkdir(parents=True, exist_ok=True)
        b1 = h1.spawn(*pinned(c_send, [*bridge("export"), "--listen", f"tcp/{h1.addr}:7447", "--export", "bench.*",
                                       *bargs]),
                      log=tmp / "b1.log")
        b2 = h2.spawn(*pinned(c_recv, [*bridge("import"), "--connect", f"tcp/{h1.addr}:7447", "--import", "bench.*",
                                       *bargs]), log=tmp / "b2.log")
        wait_for(lambda: (tmp / "b2.log").read_text().count("importing") >= 3, 180 if args.callgrind else 30,
                 "bridges")
        for r in range(args.rounds):
            res: Dict[str, Dict] = {}
            for tag in phases:
                ch, size, ns, rate, mode = PHASES[tag]
                rp = pol if mode != "poll" else []  # the reader's lead and spin
                n = ns[q] if tag != "img" or not args.quick else 300
                order = ["bare", "bridge"]
                if tag == "thr64" and rpeer:
                    order = ["bare", "rsub", "bridge", "rust", "bridgerw"]
                if r % 2:
                    order.reverse()
                if tag in HOP:
                    order.append("hop")
                for path in order:
                    print(f"round {r + 1}: {path} {tag} ...", file=sys.stderr, flush=True)
                    if path == "bare":
                        out = run_pair(h2, pinned(c_recv, [PY, PEERS, "zsub", ep_z, str(n), "2"]), h1,
                                       pinned(c_send, [PY, PEERS, "zpub", ep_z, str(n), str(size), str(rate), *ex]),
                                       tmp / f"z-{tag}.log")
                    elif path in ("rsub", "rust"):
                        # A bare Rust subscriber, fed by the Python publisher (rsub) or
                        # the Rust one (rust).
                        pub = [rpeer] if path == "rust" else [PY, PEERS]
                        out = run_pair(h2, pinned(c_recv, [rpeer, "zsub", ep_z, str(n), "2"]), h1,
                                       pinned(c_send, [*pub, "zpub", ep_z, str(n), str(size), str(rate), *ex]),
                                       tmp / f"r-{tag}.log")
                    elif path == "hop":
                        out = run_pair(h2, pinned(c_recv, [PY, PEERS, "nread", HOP[tag], str(n), "3", mode, *rp]), h2,
                                       pinned(c_send, [PY, PEERS, "nwrite", HOP[tag], str(n), str(size), str(rate),
                                                       "0.5"]), tmp / f"h-{tag}.log")
                    else:
                        # The bridges' idle CPU rate just before (their scans and
                        # wake-ups), to subtract from the phase's CPU.
                        i0 = (proc_ns(b1.pid), proc_ns(b2.pid), time.monotonic_ns())
                        time.sleep(IDLE_S)
                        i1 = (proc_ns(b1.pid), proc_ns(b2.pid), time.monotonic_ns())
                        th0 = (threads(b1.pid), threads(b2.pid), time.monotonic_ns())
                        perf = []
                        if args.perf and tag == "thr64":
                            args.perf.mkdir(parents=True, exist_ok=True)
                            perf = [subprocess.Popen(
                                ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4999", "-g", "-p", str(b.pid),
                                 "-o", str(args.perf / f"{path}-{side}-r{r + 1}.data")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                                for side, b in (("export", b1), ("import", b2))]
                            time.sleep(1)  # perf attached
                        c0 = (cpu_s(b1.pid), cpu_s(b2.pid), time.monotonic())
                        # bridgerw: the same path with the Rust nerve writer of
                        # nerve-zenoh-peer, to tell the bridges' rate from the sender's.
                        wr = [rpeer] if path == "bridgerw" else [PY, PEERS]
                        out = run_pair(h2, pinned(c_recv, [PY, PEERS, "nread", ch, str(n), "3", mode, *rp]), h1,
                                       pinned(c_send, [*wr, "nwrite", ch, str(n), str(size), str(rate), "0.5"]),
                                       tmp / f"n-{tag}.log")
                        c1 = (cpu_s(b1.pid), cpu_s(b2.pid), time.monotonic())
                        th1 = (threads(b1.pid), threads(b2.pid), time.monotonic_ns())
                        for p in perf:
                            p.send_signal(signal.SIGINT)
                            p.wait(timeout=60)
                        idle = [(i1[k] - i0[k]) / (i1[2] - i0[2]) for k in (0, 1)]  # CPU s per s
                        out["bridge_threads"] = {
                            side: {"threads_ns": {k: v[0] - th0[j].get(k, [0, 0])[0] for k, v in th1[j].items()},
                                   "threads_sw": {k: v[1] - th0[j].get(k, [0, 0])[1] for k, v in th1[j].items()},
                                   "threads_preempted": {k: v[2] - th0[j].get(k, [0] * 4)[2]
                                                         for k, v in th1[j].items()},
                                   "threads_minflt": {k: v[3] - th0[j].get(k, [0] * 4)[3] for k, v in th1[j].items()},
                                   "idle_ns": idle[j] * (th1[2] - th0[2])}
                            for j, side in enumerate(("export", "import"))}
                        wall = c1[2] - c0[2]
                        out["bridge_cpu"] = {"export": 100 * (c1[0] - c0[0]) / wall,
                                             "import": 100 * (c1[1] - c0[1]) / wall, "wall_s": wall}
                    out.pop("arr_ns", None)
                    res[f"{path}.{tag}"] = out
            rounds.append(res)
        b1.terminate()
        b2.terminate()
        for name, p in (("export", b1), ("import", b2)):
            out, _ = p.communicate(timeout=180 if args.callgrind else 20)
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


def per_msg(t: Dict, key: str, n: int) -> str:
    """Counts of each thread per message, the larger first."""
    return ", ".join(f"{k} {v / n:.4f}" for k, v in sorted(t.get(key, {}).items(), key=lambda kv: -kv[1])
                     if v / n >= 0.0005) or "–"


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
         + (f"Polling: every nerve reader of the latency "
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
        rust = all("rsub.thr64" in res for res in rounds)
        rw = all("bridgerw.thr64" in res for res in rounds)
        L += ["## Throughput of 64 B messages (sender as fast as it can, DROP)", "",
              "Receive rate = messages received / time from the first to the last. The Zenoh subscribers count "
              "in their callback; the nerve reader (another process on the receiving host) polls the imported "
              "channel every 0.2 ms. Send rate = messages / the sender's time from its first to its last call. "
              "CPU: microseconds of CPU time per message of each program (all its threads), the bridges' "
              "including their idle work over the phase.", ""]
        if rust:
            L += ["Bare Rust: `nerve-zenoh-peer` (rust/nerve-bridge/src/bin/zenoh_peer.rs, the Rust bridge's zenoh "
                  "crate and features) as the subscriber, fed by the Python publisher (Py -> Rust) or by its own "
                  "Rust publisher (Rust -> Rust). Ratio columns: the bridge's receive rate over each baseline's.", ""]
        hdr = "| round | bare Py -> Py: received, msg/s (send msg/s) |"
        if rust:
            hdr += " bare Py -> Rust: received, msg/s (send msg/s) | bare Rust -> Rust: received, msg/s (send msg/s) |"
        hdr += " bridge: received, msg/s (send msg/s) | bridge / Py sub |"
        if rust:
            hdr += " bridge / Rust sub (Py pub) | bridge / Rust -> Rust |"
        if rw:
            hdr += " bridge, Rust writer: received, msg/s (send msg/s) | that / Rust -> Rust |"
        hdr += " CPU µs/msg: pub, sub | writer, export bridge, import bridge, reader |"
        L += [hdr, "|" + "---|" * (hdr.count("|") - 1)]
        ratios: Dict[str, List[float]] = {"bare": [], "rsub": [], "rust": [], "rw": []}
        f = lambda v: "–" if v is None else f"{v:.2f}"  # noqa: E731

        def cell(x: Dict) -> str:
            return (f"{x['received']} of {x['sender']['sent']}, {rate_of(x):.0f} "
                    f"({x['sender']['sent'] / x['sender']['send_s']:.0f})")

        for i, res in enumerate(rounds):
            z, nb = res["bare.thr64"], res["bridge.thr64"]
            nr = rate_of(nb)
            n = nb["sender"]["sent"]
            bc = nb["bridge_cpu"]
            cpu_b = [bc["export"] / 100 * bc["wall_s"] * 1e6 / n, bc["import"] / 100 * bc["wall_s"] * 1e6 / n]
            row = f"| {i + 1} | {cell(z)} |"
            if rust:
                row += f" {cell(res['rsub.thr64'])} | {cell(res['rust.thr64'])} |"
            row += f" {cell(nb)} |"
            for k in ("bare", "rsub", "rust") if rust else ("bare",):
                ratios[k].append(nr / rate_of(res[f"{k}.thr64"]))
                row += f" {ratios[k][-1]:.2f} |"
            if rw:
                x = res["bridgerw.thr64"]
                ratios["rw"].append(rate_of(x) / rate_of(res["rust.thr64"]))
                row += f" {cell(x)} | {ratios['rw'][-1]:.2f} |"
            L.append(row + f" {f(z['sender'].get('cpu_us_per_msg'))}, {f(z.get('cpu_us_per_msg'))} | "
                     f"{f(nb['sender'].get('cpu_us_per_msg'))}, {cpu_b[0]:.2f}, {cpu_b[1]:.2f}, "
                     f"{f(nb.get('cpu_us_per_msg'))} |")
        L += ["", f"Median ratio, bridge / bare Python subscriber: {spread(ratios['bare'])}."]
        if rust:
            L += [f"Median ratio, bridge / bare Rust subscriber fed by the Python publisher: {spread(ratios['rsub'])}; "
                  f"/ bare Rust publisher -> Rust subscriber: {spread(ratios['rust'])}."]
        if rw:
            L += ["With the Rust nerve writer as the bridge path's sender (nerve-zenoh-peer nwrite), bridge / bare "
                  f"Rust publisher -> Rust subscriber: {spread(ratios['rw'])}."]
        if rust:
            rs = [r["rsub.thr64"].get("cpu_us_per_msg") for r in rounds]
            rr = [r["rust.thr64"].get("cpu_us_per_msg") for r in rounds]
            rp = [r["rust.thr64"]["sender"].get("cpu_us_per_msg") for r in rounds]
            L += [f"CPU µs/msg of the bare Rust subscriber (Py pub / Rust pub): {', '.join(f(v) for v in rs)} / "
                  f"{', '.join(f(v) for v in rr)}; of the Rust publisher: {', '.join(f(v) for v in rp)}."]
        L.append("")
        sides = [p for p in ("bridge", "bridgerw") if all(f"{p}.thr64" in res for res in rounds)]
        if all("bridge_threads" in res["bridge.thr64"] for res in rounds):
            L += ["### Where each bridge's CPU goes in thr64, per message", "",
                  "CPU time of each thread of the bridge process over the bridge run (schedstat, ns resolution), "
                  "summed by thread name (digits dropped; `export`: the exporter's thread per channel; the others "
                  "are Zenoh's runtime threads), divided by the messages sent. `net` subtracts the bridge's idle "
                  f"CPU rate sampled over {IDLE_S:g} s just before the run (scans, timed wake-ups), scaled to the "
                  "run's wall time. µs per message. Sleeps: voluntary context switches of the thread per message "
                  "(each one a sleep and a wake-up; for `export`, a wait on the channel that found it empty); "
                  "preempted: involuntary ones; faults: minor page faults. Per message, the threads at or above "
                  "0.0005.", "",
                  "| round | sender | bridge | all threads | idle share | net | by thread | sleeps | preempted "
                  "| faults |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
            for i, res in enumerate(rounds):
                for pth, side in [(p, sd) for p in sides for sd in ("export", "import")]:
                    nb = res[f"{pth}.thr64"]
                    n = nb["sender"]["sent"]
                    t = nb["bridge_threads"][side]
                    tot = sum(t["threads_ns"].values())
                    parts = ", ".join(f"{k} {v / 1e3 / n:.3f}" for k, v in
                                      sorted(t["threads_ns"].items(), key=lambda kv: -kv[1]) if v / 1e3 / n >= 0.005)
                    who = "Rust" if pth == "bridgerw" else "Python"
                    L.append(f"| {i + 1} | {who} | {side} | {tot / 1e3 / n:.3f} | {t['idle_ns'] / 1e3 / n:.3f} | "
                             f"{(tot - t['idle_ns']) / 1e3 / n:.3f} | {parts} | {per_msg(t, 'threads_sw', n)} | "
                             f"{per_msg(t, 'threads_preempted', n)} | {per_msg(t, 'threads_minflt', n)} |")
            L.append("")
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
