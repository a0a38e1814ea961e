"""Real-time helpers and periodic loops: the Python face of include/nerve/rt.h.

A fixed-rate loop on Linux keeps its deadlines when its memory never
page-faults (:func:`lock_memory`), it runs under SCHED_FIFO or SCHED_RR at a
priority that follows its rate (:func:`prio_from_period`, :func:`sched_set`)
and it sleeps to absolute release times. :class:`Task` and :func:`periodic`
run such a loop in C (``clock_nanosleep`` with ``TIMER_ABSTIME``, no drift)
and measure it as Tobar et al. does: absolute error ``wake - release`` (eq. 2)
and relative error between successive cycles (eq. 3), each as max and RMS.

The loop's sleep, wake-up and statistics are C's (``nerve_task_next``, the
pull-style driver of include/nerve/rt.h); the body is the Python code that
runs between two ticks, on the thread that iterates the loop (or on the
thread :meth:`Task.start` makes), so its execution time (and any wait for
the GIL behind other Python threads) is Python's, and shows up in ``exec``
and ``overruns``. The scheduling (policy, priority, affinity) is applied to
that thread when the loop begins, and stays applied, as for a thread that
calls ``nerve_task_run``.

The C structs are typed read-only classes: :class:`Series`,
:class:`PrioMap`, :class:`Applied`, :class:`Caps`, :class:`TaskStats` and
:class:`Tick`.

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
import threading
import weakref
from array import array
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
from ._channel import Channel

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "Applied",
    "Caps",
    "Loop",
    "Policy",
    "PrioMap",
    "Series",
    "TASK_STATS_TYPE",
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


#: The type of a channel that carries a task's statistics (``stats_channel``).
TASK_STATS_TYPE: str = _nerve.TASK_STATS_TYPE


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


# ---- priorities ------------------------------------------------------------


#: Bounds of the rate-monotonic mapping (Tobar et al. eq. 1):
#: ``PrioMap(period_min_ns, period_max_ns, prio_min, prio_max)``, read-only,
#: its defaults the C library's (NERVE_RT_PRIO_MAP_INIT: 100 µs maps to 75,
#: 1 s to 0). Periods outside [period_min_ns, period_max_ns] are clamped. (A
#: ``prio_max`` of 0 means the default, as in the C struct.)
PrioMap = _nerve.PrioMap


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
    return _nerve.rt_prio_from_period(ns, prio_map)


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


#: What a set-up call actually applied: ``policy``, ``priority``,
#: ``fallback`` (None, or the error that made a best-effort call fall back,
#: usually :class:`nerve.OperationNotPermitted`), ``mem_locked``,
#: ``message`` (one sentence saying what happened).
Applied = _nerve.Applied


def lock_memory(stack: int = 0, heap: int = 0, *, best_effort: bool = False) -> Applied:
    """Lock the process's memory (mlockall of current and future pages), stop
    malloc from trimming or using mmap, and prefault ``stack`` bytes of this
    thread's stack and ``heap`` bytes of heap. Affects the whole process,
    for good. Raises :class:`nerve.OperationNotPermitted` or
    :class:`nerve.OutOfMemory` when refused, unless ``best_effort``."""
    flags = _nerve.RT_BEST_EFFORT if best_effort else 0
    return _nerve.rt_lock_memory(stack, heap, flags)


def sched_set(policy: Union[Policy, int], priority: int = 0, *,
              best_effort: bool = False) -> Applied:
    """Set the calling thread's policy and priority (1..99 for FIFO and RR, 0
    for OTHER). Raises :class:`nerve.OperationNotPermitted` when refused,
    unless ``best_effort``: then the thread runs under OTHER and
    :attr:`Applied.fallback` says why."""
    flags = _nerve.RT_BEST_EFFORT if best_effort else 0
    return _nerve.rt_sched_set(int(policy), priority, flags)


def sched_get() -> Tuple[Union[Policy, int], int]:
    """The calling thread's (policy, priority)."""
    return _nerve.rt_sched_get()


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


#: What this process may do (see :func:`probe`): ``fifo_ok``,
#: ``fifo_max_prio``, ``memlock_max`` (bytes; None if unlimited or
#: CAP_IPC_LOCK is held), ``preempt_rt``.
Caps = _nerve.Caps


def probe() -> Caps:
    """Find out, without changing anything about the caller, whether real-time
    scheduling is permitted and how much memory may be locked."""
    return _nerve.rt_probe()


# ---- timing statistics -----------------------------------------------------


#: Summary of one series of signed nanosecond samples: ``n``, ``min_ns``,
#: ``max_ns``, ``max_abs_ns`` (the "jitter" of Tobar et al., also
#: ``jitter_ns``), ``mean_ns`` (rounded toward zero), ``rms_ns`` (rounded
#: down). ``Series(n, min_ns, ...)`` makes one (all 0 by default).
Series = _nerve.Series


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
    return Timing(*_nerve.rt_timing_compute(_int64_buffer(release), _int64_buffer(wake)))


# ---- periodic tasks --------------------------------------------------------


#: What one cycle of a loop is about: ``cycle``, ``release_ns`` (when it
#: was due: the scheduled release, or the message's commit time),
#: ``wake_ns``, ``skipped`` (releases dropped just before it), ``message``
#: (channel-driven: a :class:`nerve.Message` copy, or None), ``status`` (0,
#: or the code of Timeout or Lapped) and ``timed_out``.
Tick = _nerve.Tick

#: Per-loop statistics, consistent as of one cycle (see rt.h): ``cycles``,
#: ``overruns``, ``skipped``, ``timeouts``, ``missed``, the :class:`Series`
#: ``abs_err`` (eq. 2), ``rel_err`` (eq. 3), ``latency`` and ``exec``,
#: ``period_ns``, ``policy``, ``priority``, ``sched_error`` (None, or why
#: the requested policy was not applied) and ``running``.
TaskStats = _nerve.TaskStats

_nerve._set_rt_hooks(_policy)


_OVERRUN = {"skip": _nerve.TASK_SKIP, "catch_up": _nerve.TASK_CATCH_UP}

# Loops that may still run, stopped at interpreter exit.
_live: "weakref.WeakSet[Any]" = weakref.WeakSet()
# Threads of started Tasks: like a threading.Thread, a started task keeps
# running when its Task object is dropped; they are joined at exit.
_threads: "set[threading.Thread]" = set()
_live_lock = threading.Lock()


class _TaskKeywords(NamedTuple):
    """The keywords of a loop, whichever front end took them
    (:class:`Task`, :func:`periodic`, :func:`messages`), with their
    defaults: one record for :func:`_make_native` instead of sixteen
    positional arguments. :class:`Task` documents each one."""

    period: Optional[Duration] = None
    period_ns: Optional[int] = None
    offset: Duration = 0
    start_ns: Optional[int] = None
    overrun: str = "skip"
    policy: Union[Policy, int] = Policy.OTHER
    priority: Optional[int] = None
    cpus: Optional[Iterable[int]] = None
    prio_map: Optional[PrioMap] = None
    best_effort: bool = True
    mlock: bool = False
    stack_prefault: int = 0
    chan: Optional[Channel] = None
    newest: bool = False
    deadline: Optional[Duration] = None
    msg_max: int = 0
    stats_channel: Optional[Channel] = None


def _make_native(k: _TaskKeywords) -> "_nerve.RtTask":
    if k.overrun not in _OVERRUN:
        raise ValueError("overrun must be 'skip' or 'catch_up'")
    if k.chan is not None and not isinstance(k.chan, Channel):
        raise TypeError("chan must be a nerve.Channel")
    flags = _OVERRUN[k.overrun]
    if k.best_effort:
        flags |= _nerve.RT_BEST_EFFORT
    if k.mlock:
        flags |= _nerve.TASK_MLOCK
    native = _nerve.RtTask(
        _period_ns(k.period, k.period_ns, required=k.chan is None),
        k.start_ns or 0,
        _ns(k.offset, "offset"),
        flags,
        int(k.policy),
        k.priority,
        _cpu_mask(k.cpus) if k.cpus is not None else 0,
        k.prio_map,
        k.stack_prefault,
        k.chan,
        k.newest,
        _ns(k.deadline, "deadline") if k.deadline is not None else 0,
        k.msg_max,
    )
    if k.stats_channel is not None:
        if not isinstance(k.stats_channel, Channel):
            raise TypeError("stats_channel must be a nerve.Channel")
        native.publish_stats(k.stats_channel)
    with _live_lock:
        _live.add(native)
    return native


def _busy(what: str) -> _errors.Error:
    return _errors._make(_errors.Busy.code, what)


class Task:
    """A periodic (or channel-driven) loop calling ``body(tick)`` once per
    cycle, on its own thread (:meth:`start`) or on the calling one
    (:meth:`run`).

    The loop wakes at absolute release times ``start + offset + k*period``
    (CLOCK_MONOTONIC). ``body`` gets a :class:`Tick`; it returns None (or
    anything false) to go on, a true value to stop the loop. An exception
    stops the loop and is raised again by :meth:`join` (or :meth:`run`).

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
    belongs to the loop from :meth:`start` until the loop has ended: other
    calls on it raise :class:`nerve.Busy` meanwhile.

    ``stats_channel``: a channel opened for writing (made with type
    :data:`TASK_STATS_TYPE`) on which the loop puts its statistics, one
    ``struct nerve_task_stats`` per cycle (nerve_task_publish_stats), so
    another process sees every overrun as it happens (``nerve blackbox``
    triggers on them). It too belongs to the loop while it runs.

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
        stats_channel: Optional[Channel] = None,
    ) -> None:
        if not callable(body):
            raise TypeError("body must be callable")
        self._body = body
        self._t = _make_native(_TaskKeywords(
            period=period, period_ns=period_ns, offset=offset, start_ns=start_ns,
            overrun=overrun, policy=policy, priority=priority, cpus=cpus,
            prio_map=prio_map, best_effort=best_effort, mlock=mlock,
            stack_prefault=stack_prefault, chan=chan, newest=newest,
            deadline=deadline, msg_max=msg_max, stats_channel=stats_channel))
        self._started = False
        self._finished = False
        self._thread: Optional[threading.Thread] = None
        self._exc: Optional[BaseException] = None

    def _drive(self, tick: Optional[Tick]) -> None:
        """The loop: the body for each tick, until the loop ends. ``tick``
        is the first one (None: ask for it)."""
        t = self._t
        try:
            if tick is None:
                tick = t.next()
            while tick is not None:
                if self._body(tick):
                    t.stop()
                tick = t.next()
        except BaseException as e:
            self._exc = e
            raise
        finally:
            t.stop()
            t.close()
            self._finished = True

    def _thread_main(self, ready: threading.Event) -> None:
        # The first call applies the scheduling to this thread; it returns
        # a tick only if one is due already.
        try:
            try:
                first = self._t.next(0)
                if first is None:  # stopped before it began
                    self._finished = True
                    return
            except _errors.Timeout:
                first = None
            except BaseException as e:
                self._exc = e
                self._t.close()
                self._finished = True
                return
            finally:
                ready.set()
            try:
                self._drive(first)
            except BaseException:
                pass  # kept in self._exc for join()
        finally:
            with _live_lock:
                _threads.discard(threading.current_thread())

    def start(self) -> None:
        """Start the loop on a new thread. Returns once the thread has applied
        its scheduling. Raises :class:`nerve.OperationNotPermitted` (real-time
        refused without best_effort), :class:`nerve.Busy` (already started).
        Like a thread, a started loop runs on when this object is dropped,
        until it is stopped, its body stops it, or the interpreter exits."""
        if self._started:
            raise _busy("the task was already started")
        self._started = True
        ready = threading.Event()
        th = threading.Thread(target=self._thread_main, args=(ready,),
                              name="nerve-task", daemon=True)
        self._thread = th
        with _live_lock:
            _threads.add(th)
        th.start()
        ready.wait()
        if self._finished and self._exc is not None:
            th.join()
            exc, self._exc = self._exc, None
            raise exc

    def run(self) -> None:
        """Run the loop on the calling thread until it is stopped or the body
        stops it (the GIL is released while the loop sleeps). The thread
        keeps the loop's scheduling afterwards. Signals interrupt the sleep:
        Ctrl-C (KeyboardInterrupt, or any exception a signal handler raises)
        ends the loop at once."""
        if self._started:
            raise _busy("the task was already started")
        self._started = True
        try:
            self._drive(None)
        finally:
            self._exc = None  # raised here, not again by join()

    def stop(self) -> None:
        """Ask the loop to stop (any thread, also the body); it ends within
        a fraction of a second, also while it sleeps or waits for a
        message."""
        self._t.stop()

    def join(self, timeout: Optional[float] = None) -> bool:
        """Wait for the loop to end: True once it has, False if ``timeout``
        seconds passed first. Raises the body's exception, or the error
        that ended the loop. Ctrl-C works."""
        if not self._started:
            raise _errors._make(_errors.InvalidArgument.code, "the task was never started")
        th = self._thread
        if th is not None:
            if th is threading.current_thread():
                raise ValueError("join() called from the task's own body")
            th.join(timeout)
            if th.is_alive():
                return False
        if self._exc is not None:
            exc, self._exc = self._exc, None
            raise exc
        return True

    def stats(self) -> TaskStats:
        """The loop's statistics, also while it runs (lock-free)."""
        return self._t.stats()

    def format(self, name: Optional[str] = None) -> str:
        """The statistics as a few lines of text (nerve_task_stats_format)."""
        return self._t.format(name)

    @property
    def running(self) -> bool:
        """True from start() until the loop has ended."""
        return self._started and not self._finished

    def __enter__(self) -> "Task":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        self.join()


class Loop:
    """A loop to iterate: each iteration is one cycle (see :func:`periodic`).

    The timing is C's (``nerve_task_next``: absolute sleeps, statistics, the
    given policy and priority, applied to the iterating thread when the
    loop begins); the body of the ``for`` block is the cycle's body, so one
    cycle's execution time is the time between two iterations, and a block
    that takes longer than the period is an overrun. The thread waits for
    each release with the GIL released. Leaving the ``for`` block (break,
    exception, or closing the ``with`` block) stops the loop."""

    def __init__(self, native: "_nerve.RtTask") -> None:
        self._t = native

    def __iter__(self) -> Iterator[Tick]:
        try:
            while True:
                tick = self._t.next()
                if tick is None:
                    return
                yield tick
        finally:
            self.close()

    def next(self, timeout: Optional[float] = None) -> Optional[Tick]:
        """The next tick (beginning the loop on the first call); None once the
        loop has ended. Raises :class:`nerve.Timeout` after ``timeout``
        seconds without one."""
        return self._t.next(timeout)

    def stop(self) -> None:
        """Ask the loop to stop (any thread): iteration ends."""
        self._t.stop()

    def close(self) -> None:
        """Stop the loop and end it (the block of the last tick ends now)."""
        self._t.stop()
        self._t.close()

    def stats(self) -> TaskStats:
        """The loop's statistics (see :class:`TaskStats`)."""
        return self._t.stats()

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
    stats_channel: Optional[Channel] = None,
) -> Loop:
    """A clock-driven loop to iterate: ``for tick in periodic(0.001): ...``
    runs the block at 1 kHz, woken at absolute release times by the C task
    (see :class:`Task` for the options and :class:`Loop` for where the
    timing happens)."""
    return Loop(_make_native(_TaskKeywords(
        period=period, period_ns=period_ns, offset=offset, start_ns=start_ns,
        overrun=overrun, policy=policy, priority=priority, cpus=cpus,
        prio_map=prio_map, best_effort=best_effort, mlock=mlock,
        stack_prefault=stack_prefault, stats_channel=stats_channel)))


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
    stats_channel: Optional[Channel] = None,
) -> Loop:
    """A channel-driven loop to iterate: one tick per message on ``chan``
    (``newest``: only the latest), or a tick with ``timed_out`` when
    ``deadline`` passes after the previous wake-up without one. ``period``
    (nominal) picks the priority and is the reference of the relative
    error. The handle belongs to the loop until it ends."""
    return Loop(_make_native(_TaskKeywords(
        period=period, policy=policy, priority=priority, cpus=cpus,
        best_effort=best_effort, chan=chan, newest=newest, deadline=deadline,
        msg_max=msg_max, stats_channel=stats_channel)))


@atexit.register
def _stop_all() -> None:
    # Runs before _nerve._at_exit (atexit is last-in, first-out): stop every
    # loop and let the threads of started Tasks end while they may still
    # take the GIL.
    with _live_lock:
        live = list(_live)
        threads = list(_threads)
    for t in live:
        t.stop()
    for th in threads:
        th.join()
