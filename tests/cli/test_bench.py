#!/usr/bin/env python3
"""Smoke test of `nerve bench`: every transport runs briefly, its JSON line
has the documented fields, and every message sent is accounted for at every
receiver (received + missed == sent). Benchmarks are not timed tests: no
latency is asserted, only that the numbers are present and ordered.

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
    # Usage errors exit 2.
    for bad in (["--transport", "carrier-pigeon"], ["--size", "8"],
                ["--rate", "-1"], ["--cpus", "x"], ["--wait", "--poll"],
                ["--workload", "ach", "--rate", "5"], ["--fifo", "0"],
                ["--bogus"]):
        p = subprocess.run([NERVE, "bench"] + bad, capture_output=True,
                           timeout=30)
        check(p.returncode == 2, "bench %s: exit %d, want 2"
              % (bad, p.returncode))
    p = subprocess.run([NERVE, "bench", "--help"], capture_output=True)
    check(p.returncode == 0 and b"--transport" in p.stdout, "bench --help")
    leftovers = [f for f in os.listdir("/dev/shm") if PREFIX in f]
    check(not leftovers, "bench left %r in /dev/shm" % leftovers)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES), file=sys.stderr)
        return 1
    print("bench smoke: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
