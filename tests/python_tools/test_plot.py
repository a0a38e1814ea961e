"""nerve plot: figures from sample `nerve bench` and `nerve cyclic` output
(the fields of docs/cli.md and docs/realtime.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
from matplotlib import image

from conftest import tool

HOST = {"cpu": "Test CPU", "cores": 2, "kernel": "6.1", "governor": None,
        "isolated": "", "preempt_rt": False, "rt_granted": False}


def bench_row(transport: str, receivers: int, p50: int) -> dict:
    return {"transport": transport, "mode": "wait", "senders": 1, "receivers": receivers,
            "size": 64, "rate": 1000, "duration_s": 2, "rounds": 5, "n": 2000 * receivers,
            "missed": 0, "p50_ns": p50, "p90_ns": 2 * p50, "p99_ns": 4 * p50,
            "p999_ns": 8 * p50, "max_ns": 20 * p50, "host": HOST}


def write_samples(d: Path) -> dict:
    rows = [bench_row(t, r, base * r) for t, base in (("nerve", 5000), ("futex", 4000), ("pipe", 9000))
            for r in (1, 2, 4, 8)]
    rows.append({"transport": "mq", "mode": "wait", "senders": 1, "receivers": 1, "size": 64,
                 "rate": 1000, "skipped": "msgsize_max", "host": HOST})
    bench = d / "bench.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rng = np.random.default_rng(1)
    hist_lines = []
    for t, mu in (("nerve", 8.6), ("pipe", 9.2)):
        for receivers in (1, 2):
            hist_lines.append(f"# transport={t} mode=wait senders=1 receivers={receivers} "
                              "size=64 rate=1000 zero_copy=0\n# low_ns\thigh_ns\tcount\n")
            lat = rng.lognormal(mu + 0.3 * receivers, 0.4, 3000).astype(int)
            counts = np.bincount(lat // 64)
            for b in np.nonzero(counts)[0]:
                hist_lines.append(f"{b * 64}\t{b * 64 + 63}\t{counts[b]}\n")
            hist_lines.append("\n")
    hist = d / "bench.hist"
    hist.write_text("".join(hist_lines))
    cyc = [{"host": {"cpu": "Test CPU", "cpus": 2, "kernel": "6.1", "governor": "", "isolated": "",
                     "preempt_rt": False, "fifo_permitted": True, "nerve": "0.1.0"}}]
    for phase in ("other", "fifo"):
        for task in range(2):
            s = {"n": 1000, "min_us": 1.0, "mean_us": 5.0, "max_us": 90.0, "jitter_us": 90.0,
                 "rms_us": 6.0, "p50_us": 4, "p99_us": 30, "p999_us": 60}
            cyc.append({"tool": "nerve-cyclic", "scenario": "harmonic", "load": "none", "phase": phase,
                        "task": task, "period_us": 1000.0 * (task + 1), "policy": "SCHED_OTHER",
                        "prio": 0, "fifo_refused": False, "duration_s": 1.0, "cycles": 1000,
                        "overruns": 0, "skipped": 0, "abs": s, "rel": s, "hist_overflow": 0})
    cyclic = d / "cyclic.jsonl"
    cyclic.write_text("".join(json.dumps(r) + "\n" for r in cyc))
    ch = ["# nerve-cyclic histogram: 1 us bins of |error|; non-empty bins only; bin 10000 = overflow\n",
          "# phase task period_us bin_us abs_count rel_count\n"]
    for phase in ("other", "fifo"):
        for task in range(2):
            for b in range(0, 40, 3):
                ch.append(f"{phase} {task} {1000 * (task + 1)} {b} {100 - 2 * b} {80 - b}\n")
            ch.append(f"{phase} {task} {1000 * (task + 1)} 10000 1 0\n")
    chist = d / "cyclic.hist"
    chist.write_text("".join(ch))
    return {"bench": bench, "hist": hist, "cyclic": cyclic, "chist": chist}


def check_png(path: Path) -> None:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = image.imread(path)
    assert img.shape[0] > 200 and img.shape[1] > 400
    assert float(np.std(img[..., :3])) > 0.01  # not a blank canvas


def test_plot_bench_and_cyclic(tmp_path: Path) -> None:
    s = write_samples(tmp_path)
    out = tmp_path / "fig"
    r = subprocess.run([tool("plot"), str(s["bench"]), str(s["hist"]), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    names = sorted(Path(p).name for p in r.stdout.split())
    assert names == ["bench-latency-cdf.png", "bench-latency-hist.png", "bench-percentiles.png"]
    r = subprocess.run([tool("plot"), str(s["cyclic"]), str(s["chist"]), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(Path(p).name for p in r.stdout.split()) == ["cyclic-jitter-hist.png", "cyclic-jitter.png"]
    for p in out.iterdir():
        check_png(p)


def test_plot_cdf_from_percentiles_and_errors(tmp_path: Path) -> None:
    s = write_samples(tmp_path)
    out = tmp_path / "fig2"
    r = subprocess.run([tool("plot"), str(s["bench"]), "-o", str(out), "--name", "run"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(Path(p).name for p in r.stdout.split()) == ["run-latency-cdf.png", "run-percentiles.png"]
    for p in out.iterdir():
        check_png(p)
    bad = tmp_path / "bad.txt"
    bad.write_text("hello\n")
    r = subprocess.run([tool("plot"), str(bad)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "bad.txt" in r.stderr


def test_figures_are_readable(tmp_path, monkeypatch) -> None:
    """Receiver counts on an integer axis at the measured counts, legends
    outside the axes (over no line), jitter labels that do not overlap."""
    import matplotlib

    matplotlib.use("Agg")
    from nerve_tools.viz import plot as P

    figs = {}

    def keep(fig, out, written):
        fig.canvas.draw()
        figs[out.rsplit("-", 1)[-1].split(".")[0] if "jitter." not in out else "jitter"] = fig
        written.append(out)

    monkeypatch.setattr(P, "_save", keep)
    paths = write_samples(tmp_path)
    inputs = P.Inputs()
    for p in (paths["bench"], paths["cyclic"]):
        P.read(str(p), inputs)
    P.plot_bench_rows(inputs.bench_rows, str(tmp_path / "b"), "png", [], cdf=False)
    many = [dict(r, phase=f"phase{i}") for i, r in enumerate(inputs.cyclic_rows * 3)]
    P.plot_cyclic_rows(many, str(tmp_path / "c"), "png", [])
    fig = figs["percentiles"]
    ax = fig.axes[0]
    assert list(ax.get_xticks()) == [1, 2, 4, 8]
    r = fig.canvas.get_renderer()
    leg = ax.get_legend().get_window_extent(r)
    assert leg.x0 >= ax.get_window_extent(r).x1          # right of the axes
    jax = figs["jitter"].axes[0]
    r = figs["jitter"].canvas.get_renderer()
    boxes = [t.get_window_extent(r) for t in jax.get_xticklabels()]
    assert len(boxes) == len(many)
    for a, b in zip(boxes, boxes[1:]):
        assert not a.overlaps(b), (a, b)
