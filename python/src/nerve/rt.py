"""Real-time helpers and periodic loops: the Python face of include/nerve/rt.h.

A fixed-rate loop on Linux keeps its deadlines when its memory never
page-faults (:func:`lock_memory`), it runs under SCHED_FIFO or SCHED_RR at a
priority that follows its rate (:func:`prio_from_period`, :func:`sched_set`)
and it sleeps to absolute release times. :class:`Task` and :func:`periodic`
run such a loop in C (``clock_nanosleep`` with ``TIMER_ABSTIME``, no drift)
and measure it as Tobar et al. does: absolute error ``wake - release`` (eq. 2)
and relative error between successive cycles (eq. 3), each as max and RMS.

The loop's sleep, wake-up and statistics are C's; a body written in Python
needs the GIL, so its execution time (and any wait for the GIL behind other
Python threads) is Python's, and shows up in ``exec`` and ``overruns``.

>>> from nerve import rt
>>> with rt.periodic(0.001) as loop:          # 1 kHz
...     for tick in loop:
...         if tick.cycle == 999:
...             break
>>> print(loop.stats().abs_err.max_abs_ns)     # the jitter, in ns

When real-time scheduling or memory locking is not permitted, calls raise
:class:`nerve.OperationNotPermitted` (or :class:`nerve.OutOfMemory` from
mlockall) unless ``best_effort=True``, which falls back to SCHED_OTHER or
unlocked memory and says so in the result (:attr:`Applied.fallback`,
:attr:`TaskStats.sched_error`). :func:`probe` tells in advance.
"""

from __future__ import annotations

import atexit
import datetime
import enum
import os
import signal
import threading
import weakref
from array import array
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Iterable,
    Iterator,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _errors, _nerve
from ._channel import Channel, Message

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "Applied",
    "Caps",
    "Loop",
    "Policy",
    "PrioMap",
    "Series",
    "Task",
    "TaskStats",
    "Tick",
    "Timing",
    "affinity_set",
    "lock_memory",
    "messages",
    "periodic",
    "prio_from_period",
    "probe",
    "sched_get",
    "sched_set",
    "timing_compute",
]

#: A duration: seconds as a number, or a :class:`datetime.timedelta`.
Duration = Union[float, int, datetime.timedelta]


class Policy(enum.IntEnum):
    """Scheduling policies; the values equal Linux's SCHED_* constants."""

    OTHER = _nerve.RT_OTHER
    FIFO = _nerve.RT_FIFO
    RR = _nerve.RT_RR


OTHER = Policy.OTHER
FIFO = Policy.FIFO
RR = Policy.RR


def _ns(d: Duration, what: str) -> int:
    """Nanoseconds of a duration (seconds or timedelta); refuses negatives."""
    if isinstance(d, datetime.timedelta):
        ns = (d.days * 86400 + d.seconds) * 1_000_000_000 + d.microseconds * 1000
    elif isinstance(d, (int, float)) and not isinstance(d, bool):
        if d != d:
            raise ValueError(f"{what} must be a number, not NaN")
        ns = round(d * 1e9)
    else:
        raise TypeError(f"{what} must be seconds (a number) or a timedelta, "
                        f"not {type(d).__name__}")
    if ns < 0:
        raise ValueError(f"{what} must not be negative")
    return ns


def _policy(p: Union[Policy, int]) -> Union[Policy, int]:
    try:
        return Policy(p)
    except ValueError:
        return int(p)  # another SCHED_* policy, reported raw


def _error(code: int) -> Optional[_errors.Error]:
    """The exception object for a fallback code (None for 0)."""
    if code == 0:
        return None
    return _errors._make(code, _error_text(code))


def _error_text(code: int) -> str:
    for name, value, msg in _nerve.error_table():
        if value == code:
            return msg
    return f"error {code}"


# ---- priorities ------------------------------------------------------------


@dataclass(frozen=True)
class PrioMap:
    """Bounds of the rate-monotonic mapping (Tobar et al. eq. 1). The defaults
    are the paper's: 100 µs maps to 75, 1 s to 0. Periods outside
    [period_min_ns, period_max_ns] are clamped. (A ``prio_max`` of 0 means
    the default 75, as in the C struct.)"""

    period_min_ns: int = 100_000
    period_max_ns: int = 1_000_000_000
    prio_min: int = 0
    prio_max: int = 75

    def _native(self) -> Tuple[int, int, int, int]:
        return (self.prio_min, self.prio_max, self.period_min_ns, self.period_max_ns)


def prio_from_period(
    period: Optional[Duration] = None,
    *,
    period_ns: Optional[int] = None,
    prio_map: Optional[PrioMap] = None,
) -> int:
    """The rate-monotonic priority of a period, by Tobar et al. eq. 1::

        P(T) = Pmin + (Pmax - Pmin) * (log10 Tmax - log10 T)
                                    / (log10 Tmax - log10 Tmin)

    rounded to the nearest integer, halves up. Give the period in seconds
    (or a timedelta), or in nanoseconds as ``period_ns``. Raises
    :class:`nerve.InvalidArgument` for a period <= 0 or inconsistent
    bounds."""
    ns = _period_ns(period, period_ns, required=True)
    return _nerve.rt_prio_from_period(ns, prio_map._native() if prio_map else None)


def _period_ns(period: Optional[Duration], period_ns: Optional[int],
               required: bool) -> int:
    if period is not None and period_ns is not None:
        raise TypeError("give period or period_ns, not both")
    if period_ns is not None:
        if isinstance(period_ns, bool) or not isinstance(period_ns, int):
            raise TypeError("period_ns must be an int")
        return period_ns
    if period is None:
        if required:
            raise TypeError("a period is required")
        return 0
    return _ns(period, "period")


# ---- process and thread set-up ---------------------------------------------


@dataclass(frozen=True)
class Applied:
    """What a set-up call actually applied."""

    #: Policy in force after the call.
    policy: Union[Policy, int]
    #: Its priority (0 under OTHER).
    priority: int
    #: None, or the error that made a best-effort call fall back (usually
    #: :class:`nerve.OperationNotPermitted`).
    fallback: Optional[_errors.Error]
    #: lock_memory(): True if mlockall held.
    mem_locked: bool
    #: One sentence saying what happened.
    message: str


def _applied(t: Tuple[int, int, int, bool, str]) -> Applied:
    policy, prio, err, locked, msg = t
    return Applied(_policy(policy), prio, _error(err), locked, msg)


def lock_memory(stack: int = 0, heap: int = 0, *, best_effort: bool = False) -> Applied:
    """Lock the process's memory (mlockall of current and future pages), stop
    malloc from trimming or using mmap, and prefault ``stack`` bytes of this
    thread's stack and ``heap`` bytes of heap. Affects the whole process,
    for good. Raises :class:`nerve.OperationNotPermitted` or
    :class:`nerve.OutOfMemory` when refused, unless ``best_effort``."""
    flags = _nerve.RT_BEST_EFFORT if best_effort else 0
    return _applied(_nerve.rt_lock_memory(stack, heap, flags))


def sched_set(policy: Union[Policy, int], priority: int = 0, *,
              best_effort: bool = False) -> Applied:
    """Set the calling thread's policy and priority (1..99 for FIFO and RR, 0
    for OTHER). Raises :class:`nerve.OperationNotPermitted` when refused,
    unless ``best_effort``: then the thread runs under OTHER and
    :attr:`Applied.fallback` says why."""
    flags = _nerve.RT_BEST_EFFORT if best_effort else 0
    return _applied(_nerve.rt_sched_set(int(policy), priority, flags))


def sched_get() -> Tuple[Union[Policy, int], int]:
    """The calling thread's (policy, priority)."""
    policy, prio = _nerve.rt_sched_get()
    return _policy(policy), prio


def _cpu_mask(cpus: Iterable[int]) -> int:
    if isinstance(cpus, int):
        # A bare int could be a CPU number or a mask: refuse the guess.
        raise TypeError("cpus takes CPU numbers, e.g. {0, 1}")
    mask = 0
    for c in cpus:
        if not 0 <= c < 64:
            raise ValueError(f"CPU {c} is outside 0..63")
        mask |= 1 << c
    return mask


def affinity_set(cpus: Iterable[int]) -> None:
    """Pin the calling thread to the given CPU numbers (0..63), e.g.
    ``affinity_set({2, 3})``. Raises :class:`nerve.InvalidArgument` when no
    CPU of the set is allowed."""
    _nerve.rt_affinity_set(_cpu_mask(cpus))


@dataclass(frozen=True)
class Caps:
    """What this process may do (see :func:`probe`)."""

    #: True if a thread may run under SCHED_FIFO.
    fifo_ok: bool
    #: Highest FIFO priority permitted (0 if none).
    fifo_max_prio: int
    #: RLIMIT_MEMLOCK in bytes; None if unlimited or CAP_IPC_LOCK is held.
    memlock_max: Optional[int]
    #: True if the kernel is PREEMPT_RT.
    preempt_rt: bool


def probe() -> Caps:
    """Find out, without changing anything about the caller, whether real-time
    scheduling is permitted and how much memory may be locked."""
    fifo_ok, fifo_max, memlock, rt = _nerve.rt_probe()
    return Caps(fifo_ok, fifo_max, None if memlock < 0 else memlock, rt)


# ---- timing statistics -----------------------------------------------------


@dataclass(frozen=True)
class Series:
    """Summary of one series of signed nanosecond samples."""

    n: int = 0
    min_ns: int = 0
    max_ns: int = 0
    #: Largest magnitude: the "jitter" of Tobar et al..
    max_abs_ns: int = 0
    #: Mean, rounded toward zero.
    mean_ns: int = 0
    #: Square root of the mean square (Tobar et al.'s sqrt(MSE)), rounded down.
    rms_ns: int = 0

    @property
    def jitter_ns(self) -> int:
        """Same as :attr:`max_abs_ns`."""
        return self.max_abs_ns


class Timing(NamedTuple):
    """Result of :func:`timing_compute`."""

    #: Eq. 2: wake[i] - release[i].
    abs_err: Series
    #: Eq. 3: (wake[i] - wake[i-1]) - (release[i] - release[i-1]).
    rel_err: Series


def _int64_buffer(x: Any) -> Any:
    """A C-contiguous int64 buffer of x (numpy arrays without a copy when
    they already are one)."""
    if type(x).__module__ == "numpy":
        import numpy as np

        if x.dtype.kind not in "iu":
            # Float nanoseconds have lost precision already; say so.
            raise TypeError(f"timestamps must be integer nanoseconds, not {x.dtype}")
        return np.ascontiguousarray(x, dtype=np.int64).reshape(-1)
    if isinstance(x, array) and x.typecode == "q":
        return x
    return array("q", x)


def timing_compute(
    release: Union[Sequence[int], "npt.ArrayLike"],
    wake: Union[Sequence[int], "npt.ArrayLike"],
) -> Timing:
    """Timing errors of a periodic loop from its release and wake-up times (ns,
    numpy arrays or sequences of ints): the same computation the tasks make
    one sample at a time. Releases need not be equally spaced (skipped
    periods are allowed)."""
    a, r = _nerve.rt_timing_compute(_int64_buffer(release), _int64_buffer(wake))
    return Timing(Series(*a), Series(*r))


# ---- periodic tasks --------------------------------------------------------


class Tick(NamedTuple):
    """What one cycle of a loop is about."""

    #: 0, 1, 2 ... cycles run so far.
    cycle: int
    #: When the cycle was due: the scheduled release (clock) or the
    #: message's commit time (channel-driven), CLOCK_MONOTONIC ns.
    release_ns: int
    #: When the loop woke for it (CLOCK_MONOTONIC ns).
    wake_ns: int
    #: Clock loops with overrun="skip": releases dropped just before this one.
    skipped: int
    #: Channel-driven loops: the message (a copy), or None.
    message: Optional[Message]
    #: Channel-driven loops: 0 (a message), the code of Timeout (the deadline
    #: passed without one) or of Lapped (writers kept overwriting it).
    status: int

    @property
    def timed_out(self) -> bool:
        """True if the deadline passed without a message."""
        return self.status == _errors.Timeout.code


_nerve._set_rt_hooks(Tick)


@dataclass(frozen=True)
class TaskStats:
    """Per-loop statistics, consistent as of one cycle (see rt.h)."""

    #: Cycles run.
    cycles: int
    #: Cycles that ended after the next release (clock) or deadline (chan).
    overruns: int
    #: Clock loops, overrun="skip": releases dropped after overruns.
    skipped: int
    #: Channel-driven loops: deadlines that passed without a message.
    timeouts: int
    #: Channel-driven loops: messages the reader skipped.
    missed: int
    #: Eq. 2, wake - release (clock loops).
    abs_err: Series
    #: Eq. 3 (clock loops; channel-driven loops with a period).
    rel_err: Series
    #: Release (or message commit) -> body start.
    latency: Series
    #: Body start -> body end.
    exec: Series
    period_ns: int
    #: Policy and priority applied to the loop's thread.
    policy: Union[Policy, int]
    priority: int
    #: None, or why the requested policy was not applied (best effort).
    sched_error: Optional[_errors.Error]
    #: True while the loop runs.
    running: bool


def _stats(t: Tuple[Any, ...]) -> TaskStats:
    (cycles, overruns, skipped, timeouts, missed, a, r, lat, ex, period,
     policy, prio, err, running) = t
    return TaskStats(cycles, overruns, skipped, timeouts, missed, Series(*a),
                     Series(*r), Series(*lat), Series(*ex), period,
                     _policy(policy), prio, _error(err), running)


_OVERRUN = {"skip": _nerve.TASK_SKIP, "catch_up": _nerve.TASK_CATCH_UP}

# Loops that may still be running, stopped and joined at interpreter exit.
_live: "weakref.WeakSet[Any]" = weakref.WeakSet()
# Started Tasks not yet joined: like a threading.Thread, a started task
# keeps running when its Task object is dropped.
_running: "set[Any]" = set()
_live_lock = threading.Lock()


def _make_native(
    body: Optional[Callable[[Tick], Any]],
    step: bool,
    period: Optional[Duration],
    period_ns: Optional[int],
    offset: Duration,
    start_ns: Optional[int],
    overrun: str,
    policy: Union[Policy, int],
    priority: Optional[int],
    cpus: Optional[Iterable[int]],
    prio_map: Optional[PrioMap],
    best_effort: bool,
    mlock: bool,
    stack_prefault: int,
    chan: Optional[Channel],
    newest: bool,
    deadline: Optional[Duration],
    msg_max: int,
) -> "_nerve.RtTask":
    if overrun not in _OVERRUN:
        raise ValueError("overrun must be 'skip' or 'catch_up'")
    if chan is not None and not isinstance(chan, Channel):
        raise TypeError("chan must be a nerve.Channel")
    flags = _OVERRUN[overrun]
    if best_effort:
        flags |= _nerve.RT_BEST_EFFORT
    if mlock:
        flags |= _nerve.TASK_MLOCK
    native = _nerve.RtTask(
        body,
        step,
        _period_ns(period, period_ns, required=chan is None),
        start_ns or 0,
        _ns(offset, "offset"),
        flags,
        int(policy),
        priority,
        _cpu_mask(cpus) if cpus is not None else 0,
        prio_map._native() if prio_map else None,
        stack_prefault,
        chan,
        newest,
        _ns(deadline, "deadline") if deadline is not None else 0,
        msg_max,
    )
    with _live_lock:
        _live.add(native)
    return native


def _run_interruptible(native: "_nerve.RtTask") -> None:
    """native.run() on this thread, stopped by Ctrl-C.

    While the loop runs the thread sits in C (a clock sleep, a wait for a
    message) and cannot run Python's signal handlers. So on the main thread
    a pipe becomes the signal wakeup fd for the run, and a watcher thread
    reading it stops the loop when SIGINT arrives (the thread then raises
    KeyboardInterrupt as it returns). Bytes for other signals are passed on
    to the wakeup fd that was set before, if any."""
    if threading.current_thread() is not threading.main_thread():
        native.run()  # signal handlers run on the main thread only
        return
    r, w = os.pipe2(os.O_CLOEXEC)
    os.set_blocking(w, False)
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):  # pragma: no cover - no wakeup fd here
        os.close(r)
        os.close(w)
        native.run()
        return

    def watch() -> None:
        sent = False
        while True:
            data = os.read(r, 256)
            sigs = data.replace(b"\0", b"")
            if sigs and old >= 0:
                try:
                    os.write(old, sigs)
                except OSError:
                    pass
            if (not sent and signal.SIGINT in sigs
                    and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
                native._interrupt()
                sent = True
            if not data or b"\0" in data:  # run() has returned
                return

    watcher = threading.Thread(target=watch, name="nerve-ctrl-c", daemon=True)
    watcher.start()
    try:
        native.run()
    finally:
        signal.set_wakeup_fd(old)
        os.write(w, b"\0")
        watcher.join()
        os.close(r)
        os.close(w)


class Task:
    """A periodic (or channel-driven) loop calling ``body(tick)`` from its own
    thread, once per cycle.

    The loop wakes at absolute release times ``start + offset + k*period``
    (CLOCK_MONOTONIC). ``body`` gets a :class:`Tick`; it returns None (or
    anything false) to go on, a true value to stop the loop. An exception
    stops the loop and is raised again by :meth:`join` (or :meth:`run`).
    The body runs with the GIL held, which the loop takes for each cycle.

    ``overrun``: "skip" drops the releases that passed while a body ran
    late, "catch_up" runs the body once for each, back to back.
    ``policy``/``priority``: the loop thread's scheduling (priority None:
    rate-monotonic from the period, see :func:`prio_from_period`);
    ``best_effort`` (default True) falls back to OTHER when real-time
    scheduling is refused, else :meth:`start` raises
    :class:`nerve.OperationNotPermitted`. ``cpus``: CPU numbers to pin the
    loop to. ``mlock``: lock the process's memory first.

    Channel-driven (``chan`` given): the loop waits for each message on the
    channel (``newest``: only the latest) at most ``deadline`` after the
    previous wake-up, and calls the body with ``tick.message`` or, on a
    deadline, ``tick.timed_out``. ``period`` is then optional: it picks the
    priority and is the reference of the relative error. The channel handle
    belongs to the loop from :meth:`start` to :meth:`join`: other calls on
    it raise :class:`nerve.Busy` meanwhile.

    >>> t = Task(0.01, lambda tick: tick.cycle >= 99)   # 100 cycles at 100 Hz
    >>> t.start(); t.join(); t.stats().cycles
    100
    """

    def __init__(
        self,
        period: Optional[Duration],
        body: Callable[[Tick], Any],
        *,
        period_ns: Optional[int] = None,
        offset: Duration = 0,
        start_ns: Optional[int] = None,
        overrun: str = "skip",
        policy: Union[Policy, int] = Policy.OTHER,
        priority: Optional[int] = None,
        cpus: Optional[Iterable[int]] = None,
        prio_map: Optional[PrioMap] = None,
        best_effort: bool = True,
        mlock: bool = False,
        stack_prefault: int = 0,
        chan: Optional[Channel] = None,
        newest: bool = False,
        deadline: Optional[Duration] = None,
        msg_max: int = 0,
    ) -> None:
        if not callable(body):
            raise TypeError("body must be callable")
        self._t = _make_native(body, False, period, period_ns, offset, start_ns,
                               overrun, policy, priority, cpus, prio_map,
                               best_effort, mlock, stack_prefault, chan, newest,
                               deadline, msg_max)

    def start(self) -> None:
        """Start the loop on a new thread. Returns once the thread has applied
        its scheduling. Raises :class:`nerve.OperationNotPermitted` (real-time
        refused without best_effort), :class:`nerve.Busy` (already started).
        Like a thread, a started loop runs on when this object is dropped,
        until it is stopped, its body stops it, or the interpreter exits."""
        self._t.start()
        with _live_lock:
            for t in [t for t in _running if t.finished]:
                _running.discard(t)  # ended and never joined
            _running.add(self._t)

    def run(self) -> None:
        """Run the loop on the calling thread until it is stopped or the body
        stops it (the GIL is released while the loop sleeps). The thread
        keeps the loop's scheduling afterwards. On the main thread, Ctrl-C
        (SIGINT under Python's default handler) stops the loop at once, also
        while it sleeps or waits for a message, and raises
        KeyboardInterrupt; other signals' handlers run at the next cycle."""
        _run_interruptible(self._t)

    def stop(self) -> None:
        """Ask the loop to stop (any thread, also the body). A clock loop
        notices at its next release; a channel-driven one at once."""
        self._t.stop()

    def join(self, timeout: Optional[float] = None) -> bool:
        """Wait for the loop to end: True once it has, False if ``timeout``
        seconds passed first. Raises the body's exception, or the error
        that ended the loop. Waits with the GIL released; Ctrl-C works."""
        try:
            return self._t.join(timeout)
        finally:
            if self._t.finished:
                with _live_lock:
                    _running.discard(self._t)

    def stats(self) -> TaskStats:
        """The loop's statistics, also while it runs (lock-free)."""
        return _stats(self._t.stats())

    def format(self, name: Optional[str] = None) -> str:
        """The statistics as a few lines of text (nerve_task_stats_format)."""
        return self._t.format(name)

    @property
    def running(self) -> bool:
        """True from start() until the loop has ended."""
        return self._t.started and not self._t.finished

    def __enter__(self) -> "Task":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        self.join()


class Loop:
    """A loop to iterate: each iteration is one cycle (see :func:`periodic`).

    The timing runs in C on a helper thread (absolute sleeps, statistics,
    the given policy and priority); the body of the ``for`` block runs on
    the iterating thread, which waits for each release with the GIL
    released. One cycle's execution time is the time between two
    iterations, so a block that takes longer than the period is an
    overrun. Leaving the ``for`` block (break, exception, or closing the
    ``with`` block) stops the loop."""

    def __init__(self, native: "_nerve.RtTask") -> None:
        self._t = native

    def __iter__(self) -> Iterator[Tick]:
        try:
            while True:
                tick = self._t.next_tick()
                if tick is None:
                    return
                yield tick
        finally:
            self.close()

    def next(self, timeout: Optional[float] = None) -> Optional[Tick]:
        """The next tick (starting the loop on the first call); None once the
        loop has ended. Raises :class:`nerve.Timeout` after ``timeout``
        seconds without one."""
        return self._t.next_tick(timeout)

    def stop(self) -> None:
        """Ask the loop to stop (any thread): iteration ends."""
        self._t.stop()

    def close(self) -> None:
        """Stop the loop and wait for it to end (raises its error, if any)."""
        self._t.stop()
        if self._t.started:
            self._t.join()

    def stats(self) -> TaskStats:
        """The loop's statistics (see :class:`TaskStats`)."""
        return _stats(self._t.stats())

    def format(self, name: Optional[str] = None) -> str:
        """The statistics as a few lines of text."""
        return self._t.format(name)

    def __enter__(self) -> "Loop":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def periodic(
    period: Optional[Duration] = None,
    *,
    period_ns: Optional[int] = None,
    offset: Duration = 0,
    start_ns: Optional[int] = None,
    overrun: str = "skip",
    policy: Union[Policy, int] = Policy.OTHER,
    priority: Optional[int] = None,
    cpus: Optional[Iterable[int]] = None,
    prio_map: Optional[PrioMap] = None,
    best_effort: bool = True,
    mlock: bool = False,
    stack_prefault: int = 0,
) -> Loop:
    """A clock-driven loop to iterate: ``for tick in periodic(0.001): ...``
    runs the block at 1 kHz, woken at absolute release times by the C task
    (see :class:`Task` for the options and :class:`Loop` for where the
    timing happens)."""
    return Loop(_make_native(None, True, period, period_ns, offset, start_ns,
                             overrun, policy, priority, cpus, prio_map,
                             best_effort, mlock, stack_prefault, None, False,
                             None, 0))


def messages(
    chan: Channel,
    *,
    deadline: Optional[Duration] = None,
    newest: bool = False,
    period: Optional[Duration] = None,
    policy: Union[Policy, int] = Policy.OTHER,
    priority: Optional[int] = None,
    cpus: Optional[Iterable[int]] = None,
    best_effort: bool = True,
    msg_max: int = 0,
) -> Loop:
    """A channel-driven loop to iterate: one tick per message on ``chan``
    (``newest``: only the latest), or a tick with ``timed_out`` when
    ``deadline`` passes after the previous wake-up without one. ``period``
    (nominal) picks the priority and is the reference of the relative
    error. The handle belongs to the loop until it ends."""
    return Loop(_make_native(None, True, period, None, 0, None, "skip", policy,
                             priority, cpus, None, best_effort, False, 0, chan,
                             newest, deadline, msg_max))


@atexit.register
def _stop_all() -> None:
    # Runs before _nerve._at_exit (atexit is last-in, first-out): let every
    # loop finish its cycle and end while bodies may still take the GIL.
    with _live_lock:
        live = list(_live)
    for t in live:
        t.stop()
    for t in live:
        if t.started and not t.finished:
            try:
                t.join(None)
            except BaseException:  # the loop's error has no one to go to
                pass
