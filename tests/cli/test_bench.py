#!/usr/bin/env python3
"""Smoke test of `nerve bench`: every transport runs briefly, its JSON line
has the documented fields, and every message sent is accounted for at every
receiver (received + missed == sent). The ping-pong mode (--pingpong) runs
every row briefly: the shape of its output, positive values, and sample
counts that add up. Benchmarks are not timed tests: no latency is
asserted, only that the numbers are present and ordered.

usage: test_bench.py PATH/TO/nerve

Exit 0 pass, 1 fail. Channel and queue names start with "nt-<pid>-".
Standard library only."""

import json
import os
import subprocess
import sys
import tempfile

NERVE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
PREFIX = "nt-%d-bench" % os.getpid()
TRANSPORTS = ["nerve", "pipe", "unix", "mq", "futex", "spin", "condvar"]
FIELDS = {"transport", "mode", "senders", "receivers", "size", "rate",
          "duration_s", "rounds", "zero_copy", "read", "payload", "workload",
          "cpus", "fifo", "rt", "started", "sent", "n", "missed",
          "per_receiver", "accounted", "p50_ns", "p90_ns", "p99_ns",
          "p999_ns", "max_ns", "min_ns", "mean_ns", "exact", "send_s",
          "send_rate_per_s", "recv_rate_per_s", "memcpy_p50_ns", "host"}
HOST_FIELDS = {"cpu", "cores", "kernel", "governor", "isolated",
               "preempt_rt", "rt_granted"}
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, file=sys.stderr)


def bench(*args, rc=0):
    cmd = [NERVE, "bench", "--name", PREFIX, "--json", "-", "--quiet"]
    cmd += [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, timeout=240)
    check(p.returncode == rc, "%s: exit %d, want %d: %s"
          % (" ".join(cmd), p.returncode, rc, p.stderr.decode()))
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    return rows


def check_row(r, transport, senders=1, receivers=1):
    what = "%s %s/%s" % (transport, senders, receivers)
    check(r["transport"] == transport, what + ": transport")
    if "skipped" in r:
        # Only a system limit may skip a transport, and it says which.
        check(transport == "mq" and r["skipped"].startswith("mq_open"),
              what + ": skipped: " + r["skipped"])
        return
    check("error" not in r, what + ": error: %s" % r.get("error"))
    missing = FIELDS - set(r)
    check(not missing, what + ": missing fields %s" % sorted(missing))
    if missing:
        return
    check(set(r["host"]) >= HOST_FIELDS, what + ": host fields")
    check(r["host"]["cores"] >= 1 and r["host"]["kernel"], what + ": host")
    check(r["senders"] == senders and r["receivers"] == receivers,
          what + ": counts")
    check(r["mode"] in ("wait", "poll"), what + ": mode")
    check(r["sent"] > 0, what + ": nothing sent")
    check(r["accounted"] is True, what + ": not accounted")
    per = r["per_receiver"]
    check(len(per) == receivers, what + ": per_receiver length")
    for i, pr in enumerate(per):
        check(pr["received"] + pr["missed"] == r["sent"],
              "%s: receiver %d: received %d + missed %d != sent %d"
              % (what, i, pr["received"], pr["missed"], r["sent"]))
    check(r["n"] == sum(p["received"] for p in per), what + ": n")
    check(r["missed"] == sum(p["missed"] for p in per), what + ": missed")
    if r["n"] > 0:
        p = [r["min_ns"], r["p50_ns"], r["p90_ns"], r["p99_ns"],
             r["p999_ns"], r["max_ns"]]
        check(p == sorted(p) and p[-1] > 0, what + ": percentiles %r" % p)
    if transport in ("pipe", "unix", "mq"):
        check(r["missed"] == 0, what + ": a flow-controlled transport "
              "missed messages")
    if transport == "nerve":
        check(r["missed_reported"] + r["stale"] == r["missed"],
              what + ": nerve's missed counts disagree with the counters")


PP_FIELDS = {"bench", "impl", "row", "mode", "copy", "size", "lines", "unit",
             "per_sample", "rounds", "cpus", "fifo", "started", "iterations",
             "warmup", "total_ns", "hop_ns", "p50_ns", "p99_ns", "p999_ns",
             "max_ns", "min_ns", "samples", "round_iterations",
             "round_hop_ns", "floor", "floor_ns", "x_floor", "xfer_floor_ns",
             "x_xfer_floor", "host"}
NERVE_ROWS = ["poll-zc", "poll-copy", "wait-zc", "wait-copy"]


def two_cpus():
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[:2] if len(cpus) >= 2 else None


def check_pp_row(r, rounds, iterations=None):
    what = "pingpong %s %s" % (r.get("row"), r.get("size"))
    check(r.get("bench") == "pingpong", what + ": bench")
    check("error" not in r, what + ": error: %s" % r.get("error"))
    missing = PP_FIELDS - set(r)
    check(not missing, what + ": missing fields %s" % sorted(missing))
    if missing or "error" in r:
        return
    check(set(r["host"]) >= HOST_FIELDS | {"vm"}, what + ": host fields")
    check(r["rounds"] == rounds, what + ": rounds")
    n = r["iterations"]
    check(n > 0, what + ": no iterations")
    # Every sample kept: one per round trip (or memcpy batch), and the
    # rounds' counts add up to the pooled count.
    check(r["samples"] == n, what + ": samples %d != iterations %d"
          % (r["samples"], n))
    check(len(r["round_iterations"]) == rounds and
          sum(r["round_iterations"]) == n,
          what + ": round_iterations %r do not add up to %d"
          % (r["round_iterations"], n))
    check(len(r["round_hop_ns"]) == rounds and
          all(h > 0 for h in r["round_hop_ns"]), what + ": round_hop_ns")
    if iterations is not None:
        check(r["round_iterations"] == [iterations] * rounds,
              what + ": --iterations %d not honoured: %r"
              % (iterations, r["round_iterations"]))
    check(r["per_sample"] >= 1 and r["total_ns"] > 0, what + ": totals")
    hop = r["total_ns"] / (r["per_sample"] * n)
    check(abs(hop - r["hop_ns"]) <= 0.06 + 1e-9 * hop,
          what + ": hop_ns %r != total / (per_sample x iterations) %r"
          % (r["hop_ns"], hop))
    p = [r["min_ns"], r["p50_ns"], r["p99_ns"], r["p999_ns"], r["max_ns"]]
    check(p == sorted(p) and p[0] >= 0 and p[-1] > 0,
          what + ": percentiles %r" % p)
    # The mean lies between the smallest and the largest sample.
    check(r["min_ns"] - 0.5 <= r["hop_ns"] <= r["max_ns"] + 0.5,
          what + ": mean outside [min, max]")
    if r["floor"] is not None:
        check(r["floor_ns"] > 0 and
              ratio_ok(r["x_floor"], r["hop_ns"], r["floor_ns"]),
              what + ": x_floor %r, hop %r / floor %r"
              % (r["x_floor"], r["hop_ns"], r["floor_ns"]))
    if r["xfer_floor_ns"] is not None:
        check(r["xfer_floor_ns"] > 0 and
              ratio_ok(r["x_xfer_floor"], r["hop_ns"], r["xfer_floor_ns"]),
              what + ": x_xfer_floor %r, hop %r / floor %r"
              % (r["x_xfer_floor"], r["hop_ns"], r["xfer_floor_ns"]))


def ratio_ok(x, hop, floor):
    """x = hop / floor as the bench computes it from unrounded times; the
    JSON prints hop and floor to 0.1 ns and x to 0.001, so allow what
    those roundings move the quotient by (a row slowed by load next to a
    fast floor has a large x, where 0.05 ns of the floor moves it by
    more than 0.01)."""
    tol = 0.0006 + 0.05 * (1 + abs(x)) / max(floor - 0.05, 1e-9)
    return abs(x - hop / floor) <= tol


def pingpong_size_tests(rows, by, size):
    """The rows of one message size of the full ping-pong run (by: row and
    size -> row): units, floors and the transfer floor's arithmetic."""
    check(by[("memcpy", size)]["unit"] == "copy", "memcpy unit")
    # memcpy-xfer: the copies of poll-copy between the two CPUs, one
    # hop per copy pair, compared with spin + two warm copies.
    x = by[("memcpy-xfer", size)]
    check(x.get("impl") == "floor" and x.get("unit") == "hop" and
          x.get("per_sample") == 2 and x.get("mode") == "poll" and
          x.get("floor") == "spin+2memcpy", "memcpy-xfer: %r" % x)
    # The zc + memcpy-xfer - spin floor is arithmetic on measured
    # times: checked as arithmetic (present exactly when positive,
    # else a note in the report), never as what the clock said.
    spin = next(r for r in rows if r.get("row") == "spin")
    for name in ("poll-copy", "wait-copy"):
        r = by[(name, size)]
        zc = by[(name.replace("copy", "zc"), size)]
        raw = zc["hop_ns"] + x["hop_ns"] - spin["hop_ns"]
        if raw > 0.5:
            check(r.get("xfer_floor_ns") is not None and
                  abs(r["xfer_floor_ns"] - raw) < 0.5,
                  name + ": xfer floor %r, want zc + xfer - spin = %.1f"
                  % (r.get("xfer_floor_ns"), raw))
        elif raw < -0.5:
            check(r.get("xfer_floor_ns") is None and
                  "no floor" in r.get("xfer_floor_note", ""),
                  name + ": zc + xfer - spin = %.1f <= 0 but %r"
                  % (raw, r))
    check(by[("poll-zc", size)].get("xfer_floor_ns") is None,
          "poll-zc has no xfer floor")
    for name in NERVE_ROWS:
        r = by.get((name, size), {})
        check(r.get("impl") == "nerve" and r.get("unit") == "hop" and
              r.get("per_sample") == 2, name + ": impl and unit")
        check(r.get("mode") == name.split("-")[0] and
              r.get("copy") == name.endswith("copy"),
              name + ": mode and copy")
        floor = {"poll-zc": "spin", "wait-zc": "futex"}.get(
            name, "zc+2memcpy")
        check(r.get("floor") == floor, name + ": floor %r, want %r"
              % (r.get("floor"), floor))


def pingpong_tests():
    cpus = two_cpus()
    pin = ["--cpus", "%d,%d" % tuple(cpus)] if cpus else []
    if not cpus:
        print("note: one CPU only: ping-pong runs unpinned", file=sys.stderr)
    # Every row, two sizes, one lines-K floor, two rounds.
    rows = bench("--pingpong", "--size", "64,4K", "--duration", "0.3",
                 "--rounds", "2", "--lines", "2", *pin)
    want = ["spin", "lines-2", "futex", "memcpy", "memcpy", "memcpy-xfer",
            "memcpy-xfer"] + \
        [n for n in NERVE_ROWS for _ in (0, 1)]
    check([r.get("row") for r in rows] == want,
          "pingpong rows: %r" % [r.get("row") for r in rows])
    for r in rows:
        check_pp_row(r, 2)
        check(r.get("cpus") == (pin[1] if pin else None), "cpus reported")
    by = {(r.get("row"), r.get("size")): r for r in rows}
    for size in (64, 4096):
        pingpong_size_tests(rows, by, size)
    check(by[("lines-2", None)]["lines"] == 2, "lines reported")
    # Exactly --iterations round trips per round; --wait and --zero-copy
    # narrow the rows.
    rows = bench("--pingpong", "--rows", "spin,poll-zc,wait-copy", "--size",
                 "100", "--iterations", "300", "--rounds", "2",
                 "--warmup", "10", "--ring", "4", *pin)
    check([r.get("row") for r in rows] == ["spin", "poll-zc", "wait-copy"],
          "--rows selection")
    for r in rows:
        check_pp_row(r, 2, iterations=300)
        check(r.get("warmup") == 10, "--warmup reported")
    # --ring: 4 x (100 + 256) bytes is under the 1 MiB minimum.
    check([r.get("ring_bytes") for r in rows] == [None, 1 << 20, 1 << 20],
          "--ring reported: %r" % [r.get("ring_bytes") for r in rows])
    check(rows[-1].get("floor") is None,
          "a copy row without its zero-copy row has no floor")
    rows = bench("--pingpong", "--wait", "--zero-copy", "--size", "1M",
                 "--iterations", "50", "--rounds", "1", *pin)
    check([r.get("row") for r in rows] == ["futex", "wait-zc"],
          "--wait --zero-copy rows: %r" % [r.get("row") for r in rows])
    for r in rows:
        check_pp_row(r, 1, iterations=50)
    # The table: a header and one line per row.
    p = subprocess.run([NERVE, "bench", "--pingpong", "--name", PREFIX,
                        "--rows", "spin,memcpy", "--size", "64",
                        "--iterations", "200", "--rounds", "1"] + pin,
                       capture_output=True, timeout=120)
    lines = p.stdout.decode().splitlines()
    check(p.returncode == 0 and len(lines) == 3 and
          lines[0].split()[:4] == ["IMPL", "ROW", "SIZE", "ITERS"] and
          lines[1].split()[:2] == ["floor", "spin"] and
          lines[2].split()[:3] == ["floor", "memcpy", "64"],
          "pingpong table: %r" % lines)


def throughput_tests():
    """The throughput workload: 1, 2, 4 senders back-to-back, nerve and
    pipe, then nerve's writers with no reader (pipe skips those rows)."""
    rows = bench("--workload", "throughput", "--duration", "0.2",
                 "--rounds", "1")
    check([(r["transport"], r["senders"], r["receivers"]) for r in rows] ==
          [(t, s, rc) for rc in (1, 0) for s in (1, 2, 4)
           for t in ("nerve", "pipe")], "throughput rows")
    for r in rows[:6]:
        check_row(r, r["transport"], r["senders"])
        check(r["mode"] == "poll" and r["rate"] == 0 and r["size"] == 64,
              "throughput configuration")
        check(r["recv_rate_per_s"] > 0, "throughput rate")
    for alone, skipped in zip(rows[6::2], rows[7::2]):
        check("error" not in alone and alone["sent"] > 0 and
              alone["n"] == 0 and alone["send_rate_per_s"] > 0 and
              alone["recv_rate_per_s"] == 0, "writers alone: %r" % alone)
        check("no reader" in skipped.get("skipped", ""),
              "pipe skips: %r" % skipped)


def usage_tests():
    """Usage errors exit 2; --help exits 0 and names the modes."""
    for bad in (["--transport", "carrier-pigeon"], ["--size", "8"],
                ["--rate", "-1"], ["--cpus", "x"], ["--wait", "--poll"],
                ["--workload", "ach", "--rate", "5"], ["--fifo", "0"],
                ["--bogus"], ["--size", "64,,128"], ["--senders", "0"],
                ["--workload", "throughput", "--size", "64,128"],
                ["--rows", "spin"], ["--iterations", "5"],
                ["--pingpong", "--transport", "pipe"],
                ["--pingpong", "--receivers", "2"],
                ["--pingpong", "--cpus", "0"], ["--pingpong", "--size", "4"],
                ["--pingpong", "--rows", "bogus"],
                ["--pingpong", "--lines", "9"],
                ["--pingpong", "--iterations", "0"],
                ["--pingpong", "--rounds", "101"],
                ["--pingpong", "--wait", "--rows", "spin"]):
        p = subprocess.run([NERVE, "bench"] + bad, capture_output=True,
                           timeout=30)
        check(p.returncode == 2, "bench %s: exit %d, want 2"
              % (bad, p.returncode))
    p = subprocess.run([NERVE, "bench", "--help"], capture_output=True)
    check(p.returncode == 0 and b"--transport" in p.stdout and
          b"--pingpong" in p.stdout, "bench --help")


def main():
    if NERVE is None or not os.access(NERVE, os.X_OK):
        print("usage: test_bench.py PATH/TO/nerve", file=sys.stderr)
        return 1
    # Every transport, blocking where it can, in alternation.
    rows = bench("--transport", ",".join(TRANSPORTS), "--rate", "2000",
                 "--duration", "0.2", "--rounds", "2")
    check([r["transport"] for r in rows] == TRANSPORTS, "one row each")
    for r in rows:
        check_row(r, r["transport"])
        if r["transport"] not in ("spin",):
            check(r["mode"] == "wait", r["transport"] + ": wait mode")
    # Polling, back-to-back, several senders and receivers.
    rows = bench("--transport", ",".join(TRANSPORTS), "--rate", "0",
                 "--poll", "--senders", "2", "--receivers", "2",
                 "--duration", "0.1", "--rounds", "1")
    check(len(rows) == len(TRANSPORTS), "poll rows")
    for r in rows:
        check_row(r, r["transport"], 2, 2)
    # Zero-copy views, the newest-only reader, a receiver list, and the
    # histogram file.
    with tempfile.TemporaryDirectory() as tmp:
        hist = os.path.join(tmp, "h.tsv")
        rows = bench("--transport", "nerve", "--zero-copy", "--receivers",
                     "1,3", "--rate", "5000", "--duration", "0.1",
                     "--histogram", hist)
        check([r["receivers"] for r in rows] == [1, 3], "receiver list")
        for r in rows:
            check_row(r, "nerve", 1, r["receivers"])
            check(r["zero_copy"] is True, "zero_copy reported")
        with open(hist) as f:
            text = f.read()
        blocks = [b for b in text.split("\n\n") if b.strip()]
        check(len(blocks) == 2, "one histogram per measurement")
        for b, r in zip(blocks, rows):
            counts = [int(line.split("\t")[2]) for line in b.splitlines()
                      if not line.startswith("#")]
            check(sum(counts) == r["n"], "histogram holds every sample")
    rows = bench("--transport", "nerve,condvar", "--newest", "--poll",
                 "--rate", "0", "--duration", "0.1", "--rounds", "1")
    for r in rows:
        check_row(r, r["transport"])
        check(r["read"] == "newest", "--newest reported")
    # A workload runs every row over its transports.
    rows = bench("--workload", "furom", "--duration", "0.3", "--rounds", "1",
                 "--transport", "nerve,pipe")
    check([(r["size"], r["rate"]) for r in rows] ==
          [(40, 2000), (40, 2000), (8192, 100), (8192, 100),
           (1048576, 10), (1048576, 10)], "furom rows")
    for r in rows:
        check(r["workload"] == "furom", "workload label")
        check_row(r, r["transport"])
    # Lists of senders and sizes: one measurement each, senders outermost.
    rows = bench("--transport", "nerve", "--senders", "1,2", "--size",
                 "64,100", "--rate", "2000", "--duration", "0.1")
    check([(r["senders"], r["size"]) for r in rows] ==
          [(1, 64), (1, 100), (2, 64), (2, 100)], "senders x sizes")
    for r in rows:
        check_row(r, "nerve", r["senders"])
    throughput_tests()
    pingpong_tests()
    usage_tests()
    leftovers = [f for f in os.listdir("/dev/shm") if PREFIX in f]
    check(not leftovers, "bench left %r in /dev/shm" % leftovers)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES), file=sys.stderr)
        return 1
    print("bench smoke: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
