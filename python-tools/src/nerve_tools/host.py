"""The host record of benchmark results, in Python: the same object, key
for key, as the C writer (tools/report.c, ``host_json``) puts in ``nerve
bench`` and ``nerve cyclic`` output (docs/cli.md), so that results from
either language compare field by field; and the same UTC stamp form.

    {"cpu", "cores", "kernel", "governor" (None if unknown), "isolated",
     "vm", "preempt_rt", "rt_granted" (None if not asked), "nerve"}
"""

from __future__ import annotations

import datetime as dt
import os
import time
from typing import Any, Dict, Optional

import nerve


def _line(path: str) -> str:
    """The first line of a file without its newline ("" if unreadable)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline().rstrip("\n")
    except OSError:
        return ""


def _cpuinfo() -> tuple:
    """(model name, flags) of the first CPU in /proc/cpuinfo."""
    model, flags = "unknown", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for ln in f:
                key, _, value = ln.partition(":")
                key = key.strip()
                if key == "model name" and model == "unknown":
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = value
                if model != "unknown" and flags:
                    break
    except OSError:
        pass
    return model, flags


def record(rt_granted: Optional[bool] = None) -> Dict[str, Any]:
    """This machine, as a JSON-ready dict. ``rt_granted``: whether the
    measurement got SCHED_FIFO (None: not asked for)."""
    u = os.uname()
    kernel = f"{u.release} {u.version}"
    model, flags = _cpuinfo()
    return {
        "cpu": model,
        "cores": os.cpu_count() or 0,
        "kernel": kernel,
        "governor": _line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") or None,
        "isolated": _line("/sys/devices/system/cpu/isolated"),
        "vm": "hypervisor" in flags.split(),
        "preempt_rt": _line("/sys/kernel/realtime") == "1" or "PREEMPT_RT" in kernel,
        "rt_granted": rt_granted,
        "nerve": nerve.__version__,
    }


def stamp(realtime_ns: Optional[int] = None) -> str:
    """ISO 8601 UTC with nanoseconds (now, or ``realtime_ns``), as the C
    tools write it: ``2026-11-22T10:00:00.123456789Z``."""
    ns = time.time_ns() if realtime_ns is None else realtime_ns
    sec, frac = divmod(ns, 1_000_000_000)
    day = dt.datetime.fromtimestamp(sec, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{day}.{frac:09d}Z"
