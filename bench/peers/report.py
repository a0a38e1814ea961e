#!/usr/bin/env python3
"""Write the side-by-side ping-pong report (Markdown) from the JSON lines of
`nerve bench --pingpong` and `nerve-peer-iceoryx2` (bench/peers/run.sh).

usage: report.py --out FILE --command TEXT [--host-note TEXT]
                 [--load-before TEXT] [--load-after TEXT] [--started TEXT]
                 --nerve NERVE.jsonl [--nerve ...] [--peer PEER.jsonl ...]

Files are given in alternation order: NERVE[i] and PEER[i] ran back to
back, so ratios between nerve and iceoryx2 are taken within one
alternation, and ratios to the floors within one nerve run. A row's value
in the tables is the median over the alternations, with the range of the
alternations beside ratios. Standard library only."""

import argparse
import json
import statistics
import sys


def load(path):
    rows = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            rows[(r["impl"], r["row"], r.get("size"), r.get("lines"))] = r
    return rows


def fmt_ns(v):
    if v is None:
        return "–"
    if v >= 100000:
        return "%.0f µs" % (v / 1000)
    if v >= 10000:
        return "%.1f µs" % (v / 1000)
    return "%.0f ns" % v


def size_name(s):
    if s is None:
        return "–"
    if s >= 1 << 20 and s % (1 << 20) == 0:
        return "%d MiB" % (s >> 20)
    if s >= 1024 and s % 1024 == 0:
        return "%d KiB" % (s >> 10)
    return "%d B" % s


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def ratio_text(vals, limit=None, le=True):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "–"
    m = statistics.median(vals)
    text = "%.2f" % m
    if len(vals) > 1:
        text += " (%.2f–%.2f)" % (min(vals), max(vals))
    if limit is not None:
        ok = m <= limit if le else m >= limit
        text += " %s" % ("✓" if ok else "✗")
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--host-note", default="")
    ap.add_argument("--load-before", default="")
    ap.add_argument("--load-after", default="")
    ap.add_argument("--started", default="")
    ap.add_argument("--nerve", action="append", default=[], required=True)
    ap.add_argument("--peer", action="append", default=[])
    a = ap.parse_args()
    nerve = [load(p) for p in a.nerve]
    peer = [load(p) for p in a.peer]
    if not nerve:
        print("report.py: no nerve results", file=sys.stderr)
        return 1
    alts = len(nerve)
    host = next(iter(nerve[0].values()))["host"]
    any_row = next(iter(nerve[0].values()))
    errors = []
    for runs in (nerve, peer):
        for k, run in enumerate(runs):
            for key, r in run.items():
                if "error" in r:
                    errors.append("%s %s %s (alternation %d): %s"
                                  % (key[0], key[1], size_name(key[2]), k + 1,
                                     r["error"]))

    def val(runs, key, field):
        return [run[key].get(field) if key in run and "error" not in run[key]
                else None for run in runs]

    out = []
    w = out.append
    w("# Ping-pong, nerve and iceoryx2 side by side (%s)" % a.started)
    w("")
    w("Host: %s, %d cores, kernel %s, %s. %s" % (
        host["cpu"], host["cores"], host["kernel"],
        "virtual machine (hypervisor flag set)" if host.get("vm")
        else "no hypervisor flag (bare metal or hidden)", a.host_note))
    w("")
    w("Load average before the run: %s; after: %s." % (a.load_before,
                                                       a.load_after))
    w("")
    w("Command: `%s`" % a.command)
    w("")
    w("CPU placement: `--cpus %s` for both (ping on the first CPU, pong on "
      "the second). %d alternations of nerve then iceoryx2, each with %d "
      "rounds of its own rows. Values are medians over the alternations; "
      "ratios are taken within one alternation and given as median "
      "(min–max). One-way hop = total / (2 × round trips); percentiles are "
      "of half round trips. Every round trip is kept (no sample dropped)."
      % (any_row.get("cpus"), alts, any_row["rounds"]))
    w("")
    if errors:
        w("**Rows that failed:**")
        w("")
        for e in errors:
            w("- " + e)
        w("")

    spin = ("floor", "spin", None, None)
    futex = ("floor", "futex", None, None)
    sizes = sorted({k[2] for run in nerve for k in run
                    if k[0] == "nerve" and k[2] is not None})

    def ratios(runs_a, key_a, runs_b, key_b, field="hop_ns"):
        out = []
        for k in range(min(len(runs_a), len(runs_b))):
            va = val([runs_a[k]], key_a, field)[0]
            vb = val([runs_b[k]], key_b, field)[0]
            out.append(va / vb if va and vb else None)
        return out

    w("## Goals of issue 16 (ratios of the average hop; p50 beside)")
    w("")
    w("| goal | row | nerve | floor / peer | ratio (mean) | ratio (p50) |")
    w("|---|---|---|---|---|---|")
    for s in sizes:
        key = ("nerve", "poll-zc", s, None)
        w("| 1 ≤ 2× floor | polling zero-copy %s | %s | spin %s | %s | %s |"
          % (size_name(s), fmt_ns(med(val(nerve, key, "hop_ns"))),
             fmt_ns(med(val(nerve, spin, "hop_ns"))),
             ratio_text(ratios(nerve, key, nerve, spin), 2.0),
             ratio_text(ratios(nerve, key, nerve, spin, "p50_ns"), 2.0)))
        pkey = ("iceoryx2", "poll-zc", s, None)
        if peer:
            w("| 1 ≤ 0.8× iceoryx2 | polling zero-copy %s | %s | iceoryx2 %s "
              "| %s | %s |"
              % (size_name(s), fmt_ns(med(val(nerve, key, "hop_ns"))),
                 fmt_ns(med(val(peer, pkey, "hop_ns"))),
                 ratio_text(ratios(nerve, key, peer, pkey), 0.8),
                 ratio_text(ratios(nerve, key, peer, pkey, "p50_ns"), 0.8)))
    for s in sizes:
        key = ("nerve", "poll-copy", s, None)
        fl = val(nerve, key, "floor_ns")
        x = val(nerve, key, "x_floor")
        w("| 2 ≤ zero-copy + 2 memcpy | polling copy %s | %s | %s | %s | – |"
          % (size_name(s), fmt_ns(med(val(nerve, key, "hop_ns"))),
             fmt_ns(med(fl)), ratio_text(x, 1.0)))
        xf = [v for v in val(nerve, key, "xfer_floor_ns") if v]
        if xf:
            w("| 2, physical: ≤ zero-copy + (memcpy-xfer − spin) | polling "
              "copy %s | %s | %s | %s | – |"
              % (size_name(s), fmt_ns(med(val(nerve, key, "hop_ns"))),
                 fmt_ns(med(xf)),
                 ratio_text(val(nerve, key, "x_xfer_floor"), 1.0)))
    for s in sizes:
        key = ("nerve", "wait-zc", s, None)
        w("| 3 ≤ 1.1× bare futex | blocking zero-copy %s | %s | futex %s | "
          "%s | %s |"
          % (size_name(s), fmt_ns(med(val(nerve, key, "hop_ns"))),
             fmt_ns(med(val(nerve, futex, "hop_ns"))),
             ratio_text(ratios(nerve, key, nerve, futex), 1.1),
             ratio_text(ratios(nerve, key, nerve, futex, "p50_ns"), 1.1)))
        if peer and s == sizes[0]:
            pkey = ("iceoryx2", "wait-event", None, None)
            w("| 3 ≤ 0.9× iceoryx2 event | blocking zero-copy %s | %s | "
              "iceoryx2 event %s | %s | %s |"
              % (size_name(s), fmt_ns(med(val(nerve, key, "hop_ns"))),
                 fmt_ns(med(val(peer, pkey, "hop_ns"))),
                 ratio_text(ratios(nerve, key, peer, pkey), 0.9),
                 ratio_text(ratios(nerve, key, peer, pkey, "p50_ns"), 0.9)))
    w("")
    w("## Every row (medians over the alternations)")
    w("")
    w("| impl | row | size | round trips | hop (mean) | p50 | p99 | p99.9 "
      "| max | × floor |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    keys = []
    for run in nerve + peer:
        for k in run:
            if k not in keys:
                keys.append(k)
    for key in keys:
        runs = nerve if key[0] != "iceoryx2" else peer
        n = [v for v in val(runs, key, "iterations") if v]
        row = key[1]
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            key[0], row, size_name(key[2]),
            sum(n) if n else "–",
            fmt_ns(med(val(runs, key, "hop_ns"))),
            fmt_ns(med(val(runs, key, "p50_ns"))),
            fmt_ns(med(val(runs, key, "p99_ns"))),
            fmt_ns(med(val(runs, key, "p999_ns"))),
            fmt_ns(max([v for v in val(runs, key, "max_ns") if v],
                       default=None)),
            ratio_text(val(runs, key, "x_floor"))))
    w("")
    w("`round trips` is summed over the alternations; `max` is the largest "
      "of any alternation. memcpy rows: the time of one copy of the "
      "payload alone (warm, one CPU). lines-K rows: K cache lines moved "
      "per hop one after the other, each line's address read from the "
      "previous one (see docs/design/0003-hot-path-layout.md).")
    w("")
    with open(a.out, "w") as f:
        f.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
