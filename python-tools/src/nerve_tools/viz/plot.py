"""nerve plot: figures from the output of ``nerve bench`` and ``nerve cyclic``.

Reads any mix of (the kind of each file is recognised from its content):

- ``nerve bench --json``: one JSON object per measurement (docs/cli.md);
- ``nerve bench --histogram``: blocks of ``low_ns high_ns count`` lines,
  each under a ``# transport=... receivers=...`` header;
- ``nerve cyclic -j``: a ``host`` line, then one object per task and phase
  (docs/realtime.md);
- ``nerve cyclic -H``: ``phase task period_us bin_us abs_count rel_count``
  lines (1 us bins of the absolute and relative wake-up error).

and writes PNG figures (``--format svg`` for vector ones):

- ``STEM-latency-hist``: latency histograms, one panel per configuration
  (senders, receivers, size, rate, mode), every transport overlaid, as in
  the figures of the Ach paper (from histogram files);
- ``STEM-latency-cdf``: the latency CDF of each transport per configuration
  (from histogram files; from the JSON percentiles when there is none);
- ``STEM-percentiles``: p50 and p99 against the number of receivers, one
  line per transport (from JSON lines);
- ``STEM-jitter-hist``: histograms of the absolute and relative wake-up
  error of each periodic task and phase (from cyclic histogram files);
- ``STEM-jitter``: p50 / p99 / p99.9 / max absolute error per task and
  phase (from cyclic JSON lines).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

PROG = "nerve plot"


@dataclass
class BenchHist:
    """One histogram block of ``nerve bench --histogram``."""

    params: Dict[str, str]
    low: List[int] = field(default_factory=list)
    high: List[int] = field(default_factory=list)
    count: List[int] = field(default_factory=list)

    @property
    def transport(self) -> str:
        return self.params.get("transport", "?")

    def config(self) -> Tuple[str, ...]:
        p = self.params
        return (p.get("senders", "?"), p.get("receivers", "?"), p.get("size", "?"),
                p.get("rate", "?"), p.get("mode", "?"))


@dataclass
class Inputs:
    bench_rows: List[dict] = field(default_factory=list)
    bench_hists: List[BenchHist] = field(default_factory=list)
    cyclic_rows: List[dict] = field(default_factory=list)
    # (phase, task, period_us) -> (bin_us[], abs_count[], rel_count[])
    cyclic_hists: Dict[Tuple[str, int, float], Tuple[List[int], List[int], List[int]]] = field(
        default_factory=dict)
    # The bin that counts errors beyond the histogram's range (0: unknown).
    cyclic_overflow_bin: int = 0


def _parse_header(line: str) -> Dict[str, str]:
    out = {}
    for tok in line.lstrip("#").split():
        k, sep, v = tok.partition("=")
        if sep:
            out[k] = v
    return out


def read(path: str, into: Inputs) -> str:
    """Add the contents of one file to ``into``; returns its kind."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    if first.startswith("{"):
        kind = None
        for ln in lines:
            if not ln.strip():
                continue
            obj = json.loads(ln)
            if "transport" in obj:
                kind = "bench-json"
                if "error" not in obj and "skipped" not in obj and "p50_ns" in obj:
                    into.bench_rows.append(obj)
            elif obj.get("tool") == "nerve-cyclic":
                kind = "cyclic-json"
                into.cyclic_rows.append(obj)
        if kind is None:
            raise ValueError("JSON lines with neither `transport` (nerve bench) nor "
                             "`tool: nerve-cyclic` (nerve cyclic)")
        return kind
    if first.startswith("# transport="):
        cur: Optional[BenchHist] = None
        for ln in lines:
            if ln.startswith("# transport="):
                cur = BenchHist(_parse_header(ln))
                into.bench_hists.append(cur)
            elif ln.startswith("#") or not ln.strip():
                continue
            elif cur is not None:
                lo, hi, n = ln.split()
                cur.low.append(int(lo))
                cur.high.append(int(hi))
                cur.count.append(int(n))
        return "bench-hist"
    if first.startswith("# nerve-cyclic histogram"):
        m = re.search(r"bin (\d+) = overflow", first)
        if m:
            into.cyclic_overflow_bin = int(m.group(1))
        for ln in lines:
            if ln.startswith("#") or not ln.strip():
                continue
            phase, task, period, b, a, r = ln.split()
            key = (phase, int(task), float(period))
            bins, ab, rel = into.cyclic_hists.setdefault(key, ([], [], []))
            bins.append(int(b))
            ab.append(int(a))
            rel.append(int(r))
        return "cyclic-hist"
    raise ValueError("not a nerve bench or nerve cyclic output (JSON lines or histogram file)")


def _config_title(cfg: Tuple[str, ...]) -> str:
    senders, receivers, size, rate, mode = cfg
    rate_t = "back-to-back" if rate in ("0", "0.0") else f"{float(rate):g} Hz"
    return f"{senders}→{receivers}, {size} B, {rate_t}, {mode}"


def _grid(n: int):
    import matplotlib.pyplot as plt

    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 3.6 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _legend_outside(ax, **kw) -> None:
    """The legend to the right of the axes, over no line."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kw)


def _latency_axes(ax, cfg: Tuple[str, ...], ylabel: str, cdf: bool = False) -> None:
    """One configuration's panel of a latency figure: log µs on x, the
    configuration as title, the legend beside it."""
    ax.set_xscale("log")
    if cdf:
        ax.set_ylim(0, 1.01)
    ax.set_xlabel("latency (µs)")
    ax.set_ylabel(ylabel)
    ax.set_title(_config_title(cfg), fontsize=10)
    _legend_outside(ax, fontsize=8)
    ax.grid(alpha=0.3)


def _save(fig, out: str, written: List[str]) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    # "tight": the legends sit outside the axes, to the right.
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    written.append(out)


def plot_bench_hists(hists: List[BenchHist], stem: str, fmt: str, written: List[str]) -> None:
    import numpy as np

    groups: Dict[Tuple[str, ...], List[BenchHist]] = collections.OrderedDict()
    for h in hists:
        if sum(h.count):
            groups.setdefault(h.config(), []).append(h)
    if not groups:
        return
    # Histograms: fraction of samples per bin, log-spaced latency axis.
    fig, axes = _grid(len(groups))
    for ax, (cfg, hs) in zip(axes, groups.items()):
        lo = min(min(h.low) for h in hs)
        hi = max(max(h.high) for h in hs)
        edges = np.geomspace(max(lo, 50) / 1e3, max(hi, lo + 1) / 1e3, 60)
        for h in hs:
            mid = (np.array(h.low) + np.array(h.high)) / 2e3
            frac, _ = np.histogram(mid, bins=edges, weights=np.array(h.count) / sum(h.count))
            ax.stairs(frac, edges, label=h.transport, linewidth=1.4)
        _latency_axes(ax, cfg, "fraction of messages")
    fig.suptitle("nerve bench: latency histograms")
    _save(fig, f"{stem}-latency-hist.{fmt}", written)
    # CDFs from the same histograms.
    fig, axes = _grid(len(groups))
    for ax, (cfg, hs) in zip(axes, groups.items()):
        for h in hs:
            c = np.cumsum(h.count) / sum(h.count)
            ax.step(np.array(h.high) / 1e3, c, where="post", label=h.transport)
        _latency_axes(ax, cfg, "fraction ≤ latency", cdf=True)
    fig.suptitle("nerve bench: latency CDF")
    _save(fig, f"{stem}-latency-cdf.{fmt}", written)


def _row_config(r: dict) -> Tuple[str, ...]:
    return (str(r.get("senders")), str(r.get("receivers")), str(r.get("size")),
            str(r.get("rate")), str(r.get("mode")))


PCTS = (("p50_ns", 0.5), ("p90_ns", 0.9), ("p99_ns", 0.99), ("p999_ns", 0.999), ("max_ns", 1.0))


def plot_bench_rows(rows: List[dict], stem: str, fmt: str, written: List[str], cdf: bool) -> None:
    import matplotlib.ticker

    if not rows:
        return
    # Percentiles against the number of receivers, per (senders, size,
    # rate, mode) and transport.
    groups: Dict[Tuple[str, ...], Dict[str, List[dict]]] = collections.OrderedDict()
    for r in rows:
        c = _row_config(r)
        key = (c[0], c[2], c[3], c[4])
        groups.setdefault(key, {}).setdefault(str(r["transport"]), []).append(r)
    fig, axes = _grid(len(groups))
    for ax, (key, by_t) in zip(axes, groups.items()):
        for t, rs in by_t.items():
            rs = sorted(rs, key=lambda r: r["receivers"])
            x = [r["receivers"] for r in rs]
            (line,) = ax.plot(x, [r["p50_ns"] / 1e3 for r in rs], marker="o", label=f"{t} p50")
            ax.plot(x, [r["p99_ns"] / 1e3 for r in rs], marker="^", linestyle="--",
                    color=line.get_color(), label=f"{t} p99")
        ax.set_yscale("log")
        ax.set_xlabel("receivers")
        ax.set_ylabel("latency (µs)")
        senders, size, rate, mode = key
        ax.set_title(_config_title((senders, "N", size, rate, mode)), fontsize=10)
        # Receivers are counted: integer ticks, at the counts measured.
        counts = sorted({r["receivers"] for rs in by_t.values() for r in rs})
        ax.set_xticks(counts, [str(c) for c in counts])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        _legend_outside(ax, fontsize=7)
        ax.grid(alpha=0.3, which="both")
    fig.suptitle("nerve bench: latency percentiles")
    _save(fig, f"{stem}-percentiles.{fmt}", written)
    if not cdf:
        return
    # CDF points from the percentiles (when no histogram file was given).
    cgroups: Dict[Tuple[str, ...], List[dict]] = collections.OrderedDict()
    for r in rows:
        cgroups.setdefault(_row_config(r), []).append(r)
    fig, axes = _grid(len(cgroups))
    for ax, (cfg, rs) in zip(axes, cgroups.items()):
        for r in rs:
            xs = [r[k] / 1e3 for k, _q in PCTS if r.get(k) is not None]
            qs = [q for k, q in PCTS if r.get(k) is not None]
            ax.step(xs, qs, where="post", marker=".", label=str(r["transport"]))
        _latency_axes(ax, cfg, "fraction ≤ latency", cdf=True)
    fig.suptitle("nerve bench: latency CDF (p50, p90, p99, p99.9, max)")
    _save(fig, f"{stem}-latency-cdf.{fmt}", written)


def plot_cyclic_hists(hists, overflow_bin: int, stem: str, fmt: str, written: List[str]) -> None:
    import numpy as np

    if not hists:
        return
    phases = sorted({k[0] for k in hists})
    fig, axes = _grid(2 * len(phases))
    for i, phase in enumerate(phases):
        for j, (what, idx) in enumerate((("absolute", 1), ("relative", 2))):
            ax = axes[2 * i + j]
            for key in sorted(k for k in hists if k[0] == phase):
                bins, counts = np.array(hists[key][0]), np.array(hists[key][idx])
                over = int(counts[bins >= overflow_bin].sum()) if overflow_bin else 0
                keep = bins < overflow_bin if overflow_bin else np.ones(len(bins), bool)
                bins, counts = bins[keep], counts[keep]
                if counts.sum() == 0:
                    continue
                # The file lists non-empty bins only: make them dense.
                dense = np.zeros(int(bins.max()) + 1, dtype=np.int64)
                dense[bins] = counts
                label = f"task {key[1]} ({key[2]:g} µs)" + (f", {over} beyond range" if over else "")
                ax.stairs(dense, np.arange(len(dense) + 1), label=label, linewidth=1.2)
            ax.set_yscale("log")
            ax.set_xlabel(f"|{what} wake-up error| (µs, 1 µs bins)")
            ax.set_ylabel("cycles")
            ax.set_title(f"{phase}: {what} error", fontsize=10)
            _legend_outside(ax, fontsize=7)
            ax.grid(alpha=0.3)
    fig.suptitle("nerve cyclic: jitter histograms")
    _save(fig, f"{stem}-jitter-hist.{fmt}", written)


def plot_cyclic_rows(rows: List[dict], stem: str, fmt: str, written: List[str]) -> None:
    import numpy as np

    if not rows:
        return
    import matplotlib.pyplot as plt

    # One group of bars per task and phase; the figure widens with the
    # groups and the labels stand upright so that they never overlap.
    fig, ax = plt.subplots(figsize=(max(7.0, 0.75 * len(rows) + 2.0), 4.2))
    labels = [f"{r['phase']} t{r['task']} ({r['period_us']:g} µs)" for r in rows]
    keys = (("p50_us", "p50"), ("p99_us", "p99"), ("p999_us", "p99.9"), ("max_us", "max"))
    x = np.arange(len(rows))
    w = 0.8 / len(keys)
    for i, (k, name) in enumerate(keys):
        vals = [r["abs"].get(k) if r["abs"].get(k) is not None else np.nan for r in rows]
        ax.bar(x + (i - 1.5) * w, vals, w, label=name)
    ax.set_xticks(x, labels, fontsize=8, rotation=90)
    ax.set_ylabel("|absolute wake-up error| (µs)")
    _legend_outside(ax, fontsize=8)
    ax.grid(alpha=0.3, axis="y", which="both")
    ax.set_title("nerve cyclic: wake-up error per task and phase")
    _save(fig, f"{stem}-jitter.{fmt}", written)


def plot(paths: Sequence[str], outdir: str, stem: Optional[str] = None, fmt: str = "png") -> List[str]:
    """Read ``paths`` and write the figures into ``outdir``; returns the
    files written."""
    import matplotlib

    matplotlib.use("Agg")
    inputs = Inputs()
    for p in paths:
        try:
            read(p, inputs)
        except (ValueError, KeyError, json.JSONDecodeError) as e:
            raise ValueError(f"{p}: {e}") from None
    if stem is None:
        stem = os.path.splitext(os.path.basename(paths[0]))[0]
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, stem)
    written: List[str] = []
    plot_bench_hists(inputs.bench_hists, base, fmt, written)
    plot_bench_rows(inputs.bench_rows, base, fmt, written, cdf=not inputs.bench_hists)
    plot_cyclic_hists(inputs.cyclic_hists, inputs.cyclic_overflow_bin, base, fmt, written)
    plot_cyclic_rows(inputs.cyclic_rows, base, fmt, written)
    return written


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Figures from `nerve bench` and `nerve cyclic` output "
        "(JSON lines and histogram files).")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--outdir", default=".", help="directory for the figures (default .)")
    p.add_argument("--name", help="file name stem of the figures (default: the first input's)")
    p.add_argument("--format", choices=("png", "svg", "pdf"), default="png")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        written = plot(args.files, args.outdir, args.name, args.format)
    except (OSError, ValueError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    if not written:
        print(f"{PROG}: nothing to plot (no measurement with latencies)", file=sys.stderr)
        return 1
    for w in written:
        print(w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
