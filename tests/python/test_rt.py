"""nerve.rt: priorities (seed 003 eq. 1), timing statistics (eqs. 2-3),
periodic and channel-driven loops, and the fallback without privileges.

No assertion here depends on how fast the machine is: loops are checked
through their counters and their computed release times (which the loop
derives from the period, not from a clock reading), never through measured
latencies. Every wait has a timeout, and pytest-timeout guards the rest."""

from __future__ import annotations

import datetime
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from array import array
from typing import Callable, List

import pytest

import nerve
from nerve import rt

from polling import poll

MS = 1_000_000  # ns


# ---- priority mapping ------------------------------------------------------


def eq1(period_ns: int, pmin: int = 0, pmax: int = 75,
        tmin: int = 100_000, tmax: int = 1_000_000_000) -> int:
    """Seed 003 eq. 1 in floating point, clamped, rounded half up."""
    t = min(max(period_ns, tmin), tmax)
    p = pmin + (pmax - pmin) * (math.log10(tmax) - math.log10(t)) / (
        math.log10(tmax) - math.log10(tmin))
    return math.floor(p + 0.5 + 1e-9)


def near_half(period_ns: int, **kw: int) -> bool:
    """True when eq. 1 lands so close to .5 that rounding may go either way
    between two correct implementations of the logarithm."""
    pmin, pmax = kw.get("pmin", 0), kw.get("pmax", 75)
    tmin, tmax = kw.get("tmin", 100_000), kw.get("tmax", 1_000_000_000)
    t = min(max(period_ns, tmin), tmax)
    p = pmin + (pmax - pmin) * (math.log10(tmax) - math.log10(t)) / (
        math.log10(tmax) - math.log10(tmin))
    return abs(p - math.floor(p) - 0.5) < 1e-6 and p != math.floor(p) + 0.5


def test_prio_bounds_and_documented_values() -> None:
    assert rt.prio_from_period(100e-6) == 75          # Tmin -> Pmax
    assert rt.prio_from_period(1.0) == 0              # Tmax -> Pmin
    assert rt.prio_from_period(10e-6) == 75           # clamped below
    assert rt.prio_from_period(60.0) == 0             # clamped above
    # The values docs/realtime.md quotes (10 ms is an exact half: 37.5).
    assert rt.prio_from_period(0.001) == 56
    assert rt.prio_from_period(0.010) == 38
    assert rt.prio_from_period(0.100) == 19


def test_prio_matches_eq1_between_bounds() -> None:
    checked = 0
    for k in range(0, 401):
        period = round(10 ** (5 + 4 * k / 400))  # 100 us .. 1 s, log-spaced
        for p in (period - 1, period, period + 1):
            if near_half(p):
                continue
            assert rt.prio_from_period(period_ns=p) == eq1(p), p
            checked += 1
    assert checked > 1000
    # Shorter period, never lower priority (rate-monotonic order).
    prios = [rt.prio_from_period(period_ns=p) for p in range(100_000, 2_000_000, 997)]
    assert prios == sorted(prios, reverse=True)


def test_prio_custom_bounds() -> None:
    m = rt.PrioMap(period_min_ns=1 * MS, period_max_ns=100 * MS, prio_min=10, prio_max=50)
    kw = dict(pmin=10, pmax=50, tmin=1 * MS, tmax=100 * MS)
    assert rt.prio_from_period(0.001, prio_map=m) == 50
    assert rt.prio_from_period(0.100, prio_map=m) == 10
    assert rt.prio_from_period(0.010, prio_map=m) == 30
    assert rt.prio_from_period(1e-6, prio_map=m) == 50
    assert rt.prio_from_period(5.0, prio_map=m) == 10
    for p in range(1 * MS, 100 * MS, 123_457):
        if not near_half(p, **kw):
            assert rt.prio_from_period(period_ns=p, prio_map=m) == eq1(p, **kw), p


def test_prio_units_and_errors() -> None:
    assert rt.prio_from_period(datetime.timedelta(milliseconds=1)) == 56
    assert rt.prio_from_period(period_ns=1 * MS) == 56
    with pytest.raises(nerve.InvalidArgument):
        rt.prio_from_period(period_ns=0)
    with pytest.raises(nerve.InvalidArgument):
        rt.prio_from_period(0.001, prio_map=rt.PrioMap(period_min_ns=MS, period_max_ns=MS))
    with pytest.raises(nerve.InvalidArgument):
        rt.prio_from_period(0.001, prio_map=rt.PrioMap(prio_min=60, prio_max=50))
    with pytest.raises(nerve.InvalidArgument):
        rt.prio_from_period(0.001, prio_map=rt.PrioMap(prio_max=100))
    with pytest.raises(TypeError):
        rt.prio_from_period(0.001, period_ns=MS)
    with pytest.raises(TypeError):
        rt.prio_from_period()
    with pytest.raises(ValueError):
        rt.prio_from_period(-1.0)


# ---- timing statistics -----------------------------------------------------


def series(xs: List[int]) -> rt.Series:
    """The expected summary, computed independently of the C code."""
    if not xs:
        return rt.Series()
    n = len(xs)
    s = sum(xs)
    mean = abs(s) // n * (1 if s >= 0 else -1)  # toward zero
    return rt.Series(n, min(xs), max(xs), max(abs(x) for x in xs), mean,
                     math.isqrt(sum(x * x for x in xs) // n))


def test_timing_compute_synthetic() -> None:
    period = 1 * MS
    base = 5_000_000_000
    # Releases with two skipped periods (k = 3 and 4 missing) and wake-ups
    # with chosen errors, negative ones included.
    ks = [0, 1, 2, 5, 6, 7, 8, 9]
    err = [1000, -250, 30_000, 7, 0, -4001, 123_456, 2]
    release = [base + k * period for k in ks]
    wake = [r + e for r, e in zip(release, err)]
    t = rt.timing_compute(release, wake)
    assert t.abs_err == series(err)
    rel = [(wake[i] - wake[i - 1]) - (release[i] - release[i - 1])
           for i in range(1, len(ks))]
    assert rel == [err[i] - err[i - 1] for i in range(1, len(err))]
    assert t.rel_err == series(rel)
    assert t.abs_err.jitter_ns == 123_456
    assert t.abs_err.mean_ns == sum(err) // len(err)


def test_timing_compute_inputs() -> None:
    np = pytest.importorskip("numpy")
    release = np.arange(0, 100 * MS, MS, dtype=np.int64)
    jitter = (np.arange(100, dtype=np.int64) * 7919) % 5000 - 2500
    wake = release + jitter
    a = rt.timing_compute(release, wake)
    assert a.abs_err == series(jitter.tolist())
    assert rt.timing_compute(release.tolist(), wake.tolist()) == a
    assert rt.timing_compute(array("q", release.tolist()), array("q", wake.tolist())) == a
    # Mean rounds toward zero, RMS down.
    t = rt.timing_compute([0, 0], [-3, -4])
    assert (t.abs_err.mean_ns, t.abs_err.rms_ns) == (-3, 3)
    assert t.rel_err == rt.Series(1, -1, -1, 1, -1, 1)
    empty = rt.timing_compute([], [])
    assert empty.abs_err.n == 0 and empty.rel_err.n == 0
    with pytest.raises(ValueError):
        rt.timing_compute([1, 2], [1])
    with pytest.raises(TypeError):
        rt.timing_compute(array("d", [1.0]), array("d", [1.0]))
    with pytest.raises(TypeError):
        rt.timing_compute(release.astype(float), wake.astype(float))


# ---- periodic tasks --------------------------------------------------------


def test_task_counts_cycles_on_an_absolute_schedule() -> None:
    ticks: List[rt.Tick] = []

    def body(tick: rt.Tick) -> bool:
        ticks.append(tick)
        return tick.cycle >= 19

    start = nerve.now_ns() + 5 * MS
    t = rt.Task(0.002, body, start_ns=start, offset=0.001)
    t.start()
    assert t.join(timeout=60)
    st = t.stats()
    assert [k.cycle for k in ticks] == list(range(20))
    assert st.cycles == 20 and st.abs_err.n == 20 and st.rel_err.n == 19
    assert st.exec.n == 20 and st.period_ns == 2 * MS
    assert not st.running and not t.running
    assert st.policy == rt.Policy.OTHER and st.sched_error is None
    # Releases are start + offset + k * period exactly, unless a slow
    # machine made the loop skip some, which the ticks then report.
    assert ticks[0].release_ns == start + 1 * MS
    k = 0
    for tick in ticks:
        k += tick.skipped
        assert tick.release_ns == start + 1 * MS + k * 2 * MS
        assert tick.wake_ns >= tick.release_ns
        assert tick.message is None
        k += 1
    assert "20 cycles" in t.format("ctl")


@pytest.mark.parametrize("overrun", ["skip", "catch_up"])
def test_task_overruns(overrun: str) -> None:
    period = 2 * MS
    slow = {2, 5}
    ticks: List[rt.Tick] = []

    def body(tick: rt.Tick) -> bool:
        ticks.append(tick)
        if tick.cycle in slow:
            time.sleep(3.5 * period / 1e9)  # ends well after the next release
        return tick.cycle >= 9

    t = rt.Task(period_ns=period, period=None, body=body, overrun=overrun)
    t.start()
    assert t.join(timeout=60)
    st = t.stats()
    assert st.cycles == 10
    assert st.overruns >= len(slow)
    gaps = [(b.release_ns - a.release_ns) for a, b in zip(ticks, ticks[1:])]
    assert all(g % period == 0 and g > 0 for g in gaps)
    if overrun == "catch_up":
        assert st.skipped == 0
        assert all(k.skipped == 0 for k in ticks)
        assert gaps == [period] * 9        # every release runs
    else:
        # Each slow body (3.5 periods) drops at least three releases, and
        # each tick says how many were dropped just before it.
        for a, b in zip(ticks, ticks[1:]):
            assert b.skipped == (b.release_ns - a.release_ns) // period - 1
            if a.cycle in slow:
                assert b.skipped >= 3
        assert st.skipped >= sum(k.skipped for k in ticks) >= 3 * len(slow)


def test_task_stop_from_another_thread() -> None:
    seen = threading.Event()

    def body(tick: rt.Tick) -> None:
        if tick.cycle >= 4:
            seen.set()

    t = rt.Task(0.001, body)
    t.start()
    assert t.running
    stopper = threading.Thread(target=lambda: (seen.wait(30), t.stop()))
    stopper.start()
    assert t.join(timeout=60)
    stopper.join()
    st = t.stats()
    assert seen.is_set() and st.cycles >= 5 and not st.running
    with pytest.raises(nerve.Busy):
        t.start()


def test_dropped_task_keeps_running() -> None:
    done = threading.Event()

    def body(tick: rt.Tick) -> bool:
        if tick.cycle == 9:
            done.set()
            return True
        return False

    rt.Task(0.001, body).start()
    # Only the module holds the loop now; it must still reach cycle 9.
    assert done.wait(60)


def test_task_join_timeout_and_stop_before_start() -> None:
    t = rt.Task(0.001, lambda tick: None)
    with pytest.raises(nerve.InvalidArgument):
        t.join()  # never started
    t.start()
    assert t.join(timeout=0.0) is False  # still running
    t.stop()
    assert t.join(timeout=60)
    # stop() before start(): the loop ends before its first cycle.
    t2 = rt.Task(0.001, lambda tick: None)
    t2.stop()
    t2.start()
    assert t2.join(timeout=60)
    assert t2.stats().cycles == 0


def test_task_body_exception_is_raised_by_join() -> None:
    def body(tick: rt.Tick) -> None:
        if tick.cycle == 3:
            raise ZeroDivisionError("cycle 3")

    with pytest.raises(ZeroDivisionError, match="cycle 3"):
        with rt.Task(0.001, body) as t:
            while t.running:  # wait for the body to end the loop
                time.sleep(0.001)
    t = rt.Task(0.001, body)
    t.start()
    with pytest.raises(ZeroDivisionError):
        t.join(timeout=60)
    assert t.stats().cycles == 4


def test_task_run_on_calling_thread() -> None:
    cycles: List[int] = []
    main = threading.get_ident()

    def body(tick: rt.Tick) -> bool:
        assert threading.get_ident() == main
        cycles.append(tick.cycle)
        return tick.cycle == 9

    out: List[BaseException] = []

    def worker() -> None:
        nonlocal main
        main = threading.get_ident()
        try:
            rt.Task(0.001, body).run()
        except BaseException as e:  # pragma: no cover - reported below
            out.append(e)

    th = threading.Thread(target=worker)  # run() keeps its policy: not pytest's thread
    th.start()
    th.join(60)
    assert not out and cycles == list(range(10))


def test_task_options_are_validated() -> None:
    with pytest.raises(TypeError):
        rt.Task(0.001, 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        rt.Task(0.001, print, overrun="late")
    with pytest.raises(TypeError):
        rt.Task(None, print)  # a clock task needs a period
    with pytest.raises(nerve.InvalidArgument):
        rt.Task(0.001, print, policy=rt.Policy.OTHER, priority=5)
    with pytest.raises(nerve.InvalidArgument):
        rt.Task(0.001, print, policy=rt.Policy.FIFO, priority=100)


def test_task_fifo_priority_follows_period() -> None:
    caps = rt.probe()
    t = rt.Task(0.005, lambda tick: tick.cycle >= 2, policy=rt.FIFO)
    t.start()
    assert t.join(timeout=60)
    st = t.stats()
    assert st.cycles == 3
    if caps.fifo_ok:
        assert (st.policy, st.priority) == (rt.FIFO, rt.prio_from_period(0.005))
        assert st.sched_error is None
    else:
        assert st.policy == rt.OTHER
        assert isinstance(st.sched_error, nerve.OperationNotPermitted)


# ---- iterator loops ---------------------------------------------------------


def test_periodic_iterator_counts_and_closes() -> None:
    loop = rt.periodic(0.001)
    seen = []
    for tick in loop:
        seen.append(tick.cycle)
        if tick.cycle == 29:
            break
    st = loop.stats()
    assert seen == list(range(30))
    assert st.cycles == 30 and not st.running  # break stopped the loop


def test_periodic_stop_from_another_thread() -> None:
    with rt.periodic(0.001, overrun="catch_up") as loop:
        n = 0
        for tick in loop:
            n += 1
            if tick.cycle == 4:
                threading.Thread(target=loop.stop).start()
            assert n < 10_000  # the loop must end
    # A stop that lands between the loop's wake-up and its body call counts
    # one cycle that the iteration never saw.
    assert n >= 5 and n <= loop.stats().cycles <= n + 1


def test_periodic_overrun_in_the_block() -> None:
    with rt.periodic(0.002) as loop:
        for tick in loop:
            if tick.cycle == 1:
                time.sleep(0.008)  # the block is the body: an overrun
            if tick.cycle == 3:
                break
    st = loop.stats()
    assert st.cycles == 4 and st.overruns >= 1 and st.skipped >= 3


def test_messages_loop(name: Callable[[str], str]) -> None:
    n = name("drive")
    with nerve.create(n, slots=16, size=4096) as w, nerve.open(n) as r:
        for i in range(5):
            w.put(b"m%d" % i)
        got = []
        with rt.messages(r, deadline=30.0) as loop:
            for tick in loop:
                assert tick.message is not None and not tick.timed_out
                got.append(tick.message.data)
                with pytest.raises(nerve.Busy):
                    r.get()  # the handle belongs to the loop
                if len(got) == 5:
                    break
        assert got == [b"m%d" % i for i in range(5)]
        assert loop.stats().cycles == 5 and loop.stats().timeouts == 0
        # Nothing arrives: the deadline gives a tick without a message.
        with rt.messages(r, deadline=0.01) as loop:
            tick = loop.next(timeout=30)
            assert tick is not None and tick.timed_out and tick.message is None
        assert loop.stats().timeouts >= 1
        # The handle is the reader's again, and not left cancelled.
        w.put(b"after")
        msg = r.get(wait=True, timeout=30)
        assert msg is not None and msg.data == b"after"


def test_channel_task_stops_at_once(name: Callable[[str], str]) -> None:
    n = name("task")
    with nerve.create(n, slots=16, size=4096) as w, nerve.open(n) as r:
        got = []
        t = rt.Task(0.001, lambda tick: got.append(tick.message.data), chan=r,
                    newest=True)
        t.start()
        w.put(b"x")
        t.stop()  # cancels the wait: no deadline needed to end the loop
        assert t.join(timeout=60)
        assert t.stats().timeouts == 0 and len(got) == t.stats().cycles <= 1
        w.put(b"y")  # the handle is usable again, and not cancelled
        assert r.get(newest=True).data == b"y"


def test_struct_classes_are_typed_and_read_only() -> None:
    s = rt.Series(3, -1, 5, 5, 2, 3)
    assert (s.n, s.min_ns, s.max_ns, s.max_abs_ns, s.mean_ns, s.rms_ns) == (3, -1, 5, 5, 2, 3)
    assert s == rt.Series(3, -1, 5, 5, 2, 3) and s != rt.Series() and s != (3, -1)
    assert hash(s) == hash(rt.Series(3, -1, 5, 5, 2, 3)) and s.jitter_ns == 5
    assert repr(s) == "Series(n=3, min_ns=-1, max_ns=5, max_abs_ns=5, mean_ns=2, rms_ns=3)"
    with pytest.raises(AttributeError):
        s.n = 4  # type: ignore[misc]
    # PrioMap's defaults are the C library's (NERVE_RT_PRIO_MAP_INIT).
    d = rt.PrioMap()
    assert rt.prio_from_period(period_ns=d.period_min_ns, prio_map=d) == d.prio_max
    assert rt.prio_from_period(period_ns=d.period_max_ns, prio_map=d) == d.prio_min
    assert rt.prio_from_period(0.001, prio_map=d) == rt.prio_from_period(0.001)
    assert rt.PrioMap(prio_max=50) == rt.PrioMap(prio_max=50) != d
    assert repr(rt.PrioMap(prio_min=1)).startswith("PrioMap(period_min_ns=")
    caps = rt.probe()
    assert isinstance(caps, rt.Caps) and repr(caps).startswith("Caps(fifo_ok=")
    t = rt.Task(0.001, lambda tick: tick.cycle >= 1)
    t.start()
    assert t.join(60)
    st = t.stats()
    assert isinstance(st, rt.TaskStats) and isinstance(st.exec, rt.Series)
    assert repr(st).startswith("TaskStats(cycles=2,") and "policy=<Policy.OTHER: 0>" in repr(st)
    with pytest.raises(AttributeError):
        st.cycles = 0  # type: ignore[misc]
    with rt.periodic(0.001) as loop:
        tick = loop.next(timeout=30)
        assert isinstance(tick, rt.Tick) and repr(tick).startswith("Tick(cycle=0,")
        with pytest.raises(AttributeError):
            tick.cycle = 1  # type: ignore[misc]


def test_loop_timeout_consumes_no_cycle() -> None:
    # The first release an hour away: next() times out, again and again,
    # without a cycle; a stop then ends the loop at once.
    with rt.periodic(1.0, offset=3600) as loop:
        for _ in range(2):
            with pytest.raises(nerve.Timeout):
                loop.next(timeout=0.01)
        assert loop.stats().cycles == 0 and loop.stats().running
        loop.stop()
        assert loop.next(timeout=30) is None
    assert loop.stats().cycles == 0 and not loop.stats().running


def test_loops_run_on_the_driving_thread() -> None:
    # Task.start() runs the body on a Python thread of its own (no native
    # helper thread); an iterator loop runs on the iterating thread, whose
    # scheduling it sets (and leaves) as the statistics say.
    seen: List[str] = []
    t = rt.Task(0.001, lambda tick: seen.append(threading.current_thread().name) or tick.cycle >= 2)
    t.start()
    assert t.join(60) and seen == ["nerve-task"] * 3

    def drive() -> object:
        with rt.periodic(0.01, policy=rt.FIFO) as loop:
            for _tick in loop:
                return loop.stats(), rt.sched_get()
        return None

    st, got = in_thread(drive)  # type: ignore[misc]
    assert got == (st.policy, st.priority)
    if rt.probe().fifo_ok:
        assert got == (rt.FIFO, rt.prio_from_period(0.01))


# ---- set-up helpers ---------------------------------------------------------


def in_thread(fn: Callable[[], object]) -> object:
    """Run fn on a fresh thread (scheduling and affinity are per thread, so
    pytest's own thread is left alone) and return its result."""
    box: list = []

    def run() -> None:
        try:
            box.append(("ok", fn()))
        except BaseException as e:
            box.append(("err", e))

    th = threading.Thread(target=run)
    th.start()
    th.join(60)
    kind, val = box[0]
    if kind == "err":
        raise val  # type: ignore[misc]
    return val


def test_sched_set_get_in_a_thread() -> None:
    def other() -> object:
        a = rt.sched_set(rt.OTHER, 0)
        return a, rt.sched_get()

    a, got = in_thread(other)  # type: ignore[misc]
    assert (a.policy, a.priority, a.fallback) == (rt.OTHER, 0, None)
    assert got == (rt.OTHER, 0)
    with pytest.raises(nerve.InvalidArgument):
        in_thread(lambda: rt.sched_set(rt.FIFO, 0))
    if rt.probe().fifo_ok:
        a, got = in_thread(lambda: (rt.sched_set(rt.RR, 7), rt.sched_get()))  # type: ignore[misc]
        assert a.policy == rt.RR and got == (rt.RR, 7)


def test_affinity_set_in_a_thread() -> None:
    cpu = min(os.sched_getaffinity(0))

    def pin() -> object:
        rt.affinity_set({cpu})
        return os.sched_getaffinity(0)  # this thread's mask

    assert in_thread(pin) == {cpu}
    with pytest.raises(nerve.InvalidArgument):
        in_thread(lambda: rt.affinity_set(set()))
    with pytest.raises(ValueError):
        rt.affinity_set({64})
    with pytest.raises(TypeError):
        rt.affinity_set(3)  # type: ignore[arg-type]  (CPU 3 or mask 0b11?)


def test_probe() -> None:
    caps = rt.probe()
    assert isinstance(caps.fifo_ok, bool)
    assert 0 <= caps.fifo_max_prio <= 99
    assert caps.fifo_ok == (caps.fifo_max_prio > 0)
    if os.geteuid() == 0 and caps.fifo_ok:
        assert caps.fifo_max_prio == 99


# ---- without privileges, and at exit ----------------------------------------

_UNPRIVILEGED = textwrap.dedent("""
    import os, resource, sys
    import nerve
    from nerve import rt
    if os.geteuid() == 0:
        # Become nobody after the imports (the interpreter may live where
        # nobody cannot read it). setuid() from root to another user drops
        # every capability, CAP_SYS_NICE and CAP_IPC_LOCK included.
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    caps = rt.probe()
    if caps.fifo_ok:
        print("SKIP: this user may use SCHED_FIFO (RLIMIT_RTPRIO %s)"
              % (resource.getrlimit(resource.RLIMIT_RTPRIO),))
        sys.exit(0)
    try:
        rt.sched_set(rt.FIFO, 10)
        sys.exit("strict sched_set succeeded")
    except nerve.OperationNotPermitted as e:
        assert isinstance(e, PermissionError)
    a = rt.sched_set(rt.FIFO, 10, best_effort=True)
    assert a.policy == rt.OTHER and a.priority == 0, a
    assert isinstance(a.fallback, nerve.OperationNotPermitted), a
    assert a.message, a
    assert rt.sched_get() == (rt.OTHER, 0)
    # A strict task leaves no thread behind and raises.
    t = rt.Task(0.001, lambda tick: True, policy=rt.FIFO, best_effort=False)
    try:
        t.start()
        sys.exit("strict task started")
    except nerve.OperationNotPermitted:
        pass
    # The default (best effort) runs under OTHER and says why.
    t = rt.Task(0.001, lambda tick: tick.cycle >= 4, policy=rt.FIFO)
    t.start()
    assert t.join(60)
    st = t.stats()
    assert st.cycles == 5 and st.policy == rt.OTHER, st
    assert isinstance(st.sched_error, nerve.OperationNotPermitted), st
    # Memory locking: refused beyond RLIMIT_MEMLOCK, unless best effort.
    a = rt.lock_memory(0, 0, best_effort=True)
    if not a.mem_locked:
        assert a.fallback is not None, a
        try:
            rt.lock_memory(0, 0)
            sys.exit("strict lock_memory succeeded after a refusal")
        except (nerve.OperationNotPermitted, nerve.OutOfMemory):
            pass
    print("OK", os.geteuid(), a.mem_locked)
""")


def test_fallback_without_privileges() -> None:
    p = subprocess.run([sys.executable, "-c", _UNPRIVILEGED], cwd="/",
                       capture_output=True, text=True, timeout=100)
    assert p.returncode == 0, p.stdout + p.stderr
    if p.stdout.startswith("SKIP:"):
        pytest.skip(p.stdout.strip())
    assert p.stdout.startswith("OK"), p.stdout + p.stderr
    if os.geteuid() == 0:
        assert p.stdout.split()[1] == "65534"


def test_lock_memory_in_a_subprocess() -> None:
    # mlockall() acts on the whole process for good: not on pytest's.
    code = textwrap.dedent("""
        from nerve import rt
        caps = rt.probe()
        a = rt.lock_memory(1 << 16, 1 << 20, best_effort=True)
        print(caps.memlock_max is None, a.mem_locked, a.fallback is None,
              bool(a.message))
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, timeout=100)
    assert p.returncode == 0, p.stderr
    unlimited, locked, no_fallback, has_msg = p.stdout.split()
    assert has_msg == "True"
    assert locked == no_fallback  # locked, or a fallback that says why
    if unlimited == "True":  # CAP_IPC_LOCK or no limit: it must lock
        assert locked == "True"


def test_exit_with_loops_still_running() -> None:
    code = textwrap.dedent("""
        import threading
        from nerve import rt
        t = rt.Task(0.001, lambda tick: None)
        t.start()
        ready = threading.Event()
        def spin():
            for tick in rt.periodic(0.001):
                ready.set()
        threading.Thread(target=spin, daemon=True).start()
        ready.wait(30)
        print("exiting", t.running)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, timeout=100)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "exiting True"


_CTRL_C = textwrap.dedent("""
    import sys
    from nerve import rt
    mode = sys.argv[1]
    def body(tick):
        if tick.cycle == 0:
            print("ready", flush=True)
    loop = None
    try:
        if mode == "run":        # the loop on this thread: stops after a cycle
            rt.Task(0.001, body).run()
        elif mode == "join":     # a join waiting in slices
            t = rt.Task(0.001, body)
            t.start()
            t.join()
        else:                    # an iterator waiting for its next tick
            loop = rt.periodic(0.05)
            for tick in loop:
                body(tick)
    except KeyboardInterrupt:
        if loop is not None and loop.stats().running:
            sys.exit("the iterator loop still runs")
        print("interrupted", flush=True)
        sys.exit(0)
    sys.exit("the loop returned")
""")


@pytest.mark.parametrize("mode", ["run", "join", "iter"])
def test_ctrl_c(mode: str) -> None:
    p = subprocess.Popen([sys.executable, "-c", _CTRL_C, mode],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, err
    assert out.strip() == "interrupted"


_RUN_CTRL_C = textwrap.dedent("""
    import sys
    import nerve
    from nerve import rt
    mode, name = sys.argv[1], sys.argv[2]
    def body(tick):
        if tick.cycle == 0:
            print("ready", flush=True)
    r = nerve.open(name)
    try:
        if mode == "chan":   # no message, no deadline: waits for ever
            print("ready", flush=True)
            rt.Task(None, lambda tick: None, chan=r).run()
        else:                # a clock loop sleeping for an hour
            rt.Task(3600, body).run()
    except KeyboardInterrupt:
        r.close()
        print("interrupted", flush=True)
        sys.exit(0)
    sys.exit("the loop returned")
""")


@pytest.mark.parametrize("mode", ["chan", "clock"])
def test_ctrl_c_stops_a_waiting_run(chan, mode):
    p = subprocess.Popen([sys.executable, "-c", _RUN_CTRL_C, mode, chan.name],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        if mode == "chan":
            poll(lambda: chan.stat().waiters > 0, "the loop to wait on the channel")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 0, err
    assert out.strip() == "interrupted"


def test_join_after_run_on_the_same_thread() -> None:
    t = rt.Task(0.001, lambda tick: tick.cycle >= 2)
    t.run()
    assert t.join() is True


def test_stats_channel(name: Callable[[str], str]) -> None:
    """stats_channel: one struct nerve_task_stats per cycle (the C test,
    tests/rt/test_rt_publish_stats.c, checks the contents); the handle
    belongs to the loop while it runs; the loop's own handle is refused."""
    n, d = name("stats"), name("drive")
    with nerve.create(n, slots=64, size=4096, type=rt.TASK_STATS_TYPE) as w, nerve.open(n) as r, \
            nerve.create(d, slots=8, size=4096) as dw:
        with pytest.raises(nerve.InvalidArgument, match="a handle of their own"):
            rt.messages(dw, stats_channel=dw)
        with rt.periodic(0.001, stats_channel=w) as loop:
            for tick in loop:
                if tick.cycle == 0:
                    with pytest.raises(nerve.Busy):
                        w.put(b"x")
                if tick.cycle >= 4:
                    break
            assert loop.stats().stats_lost == 0
        w.put(b"mine again")  # the loop has ended: the handle is the caller's
        msgs = [bytes(m.data) for m in iter(r.get, None)]
        assert msgs.pop() == b"mine again"
        # One per cycle ended: the five of ticks 0-4 (closing ends the last).
        assert [int.from_bytes(m[:8], sys.byteorder) for m in msgs] == [1, 2, 3, 4, 5]
