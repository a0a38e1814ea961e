# Type stub of the native module (python/src/_nerve.cpp).
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from ._channel import Message

VERSION: int
VERSION_STRING: str
LAYOUT_VERSION: int
NAME_MAX: int
WAIT_MAX: int

class Span:
    """Memory inside a channel's ring, exported through the buffer protocol."""
    def check(self) -> None: ...
    def valid(self) -> bool: ...

class Chan:
    def __init__(self, name: str, write: bool = False) -> None: ...
    def put(self, data: Any, *, timeout: Optional[float] = None) -> int:
        """Append a copy of data (bytes, any buffer, numpy array) as one
        message and return its sequence number. ``timeout`` (seconds, None
        = no limit) bounds only the wait for the writer lock; raises
        MessageTooLarge, ReadOnly, Busy (a reservation is open), Timeout."""
    def put_at(self, data: Any, time: int, *, timeout: Optional[float] = None) -> Tuple[int, int]:
        """As put(), but the commit time is ``time`` (CLOCK_MONOTONIC ns,
        e.g. a message's origin time on another host), clamped between the
        previous message's time and now so that times in the ring stay
        ordered. Returns (seq, time recorded)."""
    def get(
        self,
        *,
        newest: bool = False,
        wait: bool = False,
        timeout: Optional[float] = None,
        seq: Optional[int] = None,
        at: Optional[int] = None,
        repeat: bool = False,
    ) -> Optional[Message]:
        """Copy a message out: the next unseen one (default; the oldest still
        present if it was overwritten, with ``missed`` counting the loss),
        the newest (``newest=True``; ``repeat=True`` returns it again even if
        already seen), sequence number ``seq``, or the newest committed at or
        before CLOCK_MONOTONIC time ``at`` (ns). Returns None when nothing is
        new and ``wait`` is false; with ``wait`` blocks (GIL released,
        Ctrl-C interrupts) and raises Timeout after ``timeout`` seconds.
        Raises Overwritten for a ``seq`` already gone, Cancelled after
        cancel()."""
    def _view(
        self,
        *,
        newest: bool = False,
        wait: bool = False,
        timeout: Optional[float] = None,
        seq: Optional[int] = None,
        at: Optional[int] = None,
        repeat: bool = False,
    ) -> Optional[Tuple[Span, int, int, int, int]]: ...
    def _reserve(self, size: int, *, timeout: Optional[float] = None) -> Span: ...
    def _commit(self, size: int) -> int: ...
    def _commit_at(self, size: int, time: int) -> Tuple[int, int]: ...
    def _abort(self) -> None: ...
    def _stat(self) -> Dict[str, int]: ...
    def _meta(self) -> Tuple[Optional[str], Optional[str], Optional[bytes]]: ...
    def ring(self) -> Tuple[int, int]: ...
    def close(self) -> None:
        """Close the handle (buffers still exported keep the mapping)."""
    def cancel(self) -> None:
        """Wake every wait on this handle with Cancelled, until cancel_clear()."""
    def cancel_clear(self) -> None:
        """Undo cancel()."""
    def seek(self, seq: int) -> None:
        """Set the cursor: the next get() returns message seq + 1."""
    @property
    def cursor(self) -> int:
        """Sequence number of the last message get() or view() returned."""
    @property
    def name(self) -> str: ...
    @property
    def writable(self) -> bool: ...
    @property
    def closed(self) -> bool: ...

def create(
    name: str,
    slots: int,
    size: int,
    mode: int,
    type: Optional[str] = None,
    encoding: Optional[str] = None,
    schema: Optional[bytes] = None,
    exist_ok: bool = False,
) -> None: ...
def unlink(name: str) -> None: ...
def list_names() -> List[str]: ...
def stat(name: str) -> Dict[str, int]: ...
def check(name: str) -> str: ...
def name_check(name: str) -> None: ...
def wait_any(chans: List[Chan], timeout: Optional[float] = None) -> int: ...
def now_ns() -> int: ...
def mono_to_realtime_ns(mono_ns: int) -> int: ...
def error_table() -> List[Tuple[str, int, str]]: ...
def _set_hooks(message_type: type, error_factory: Callable[..., BaseException], coerce: Callable[[Any], Any]) -> None: ...

# Real-time helpers (include/nerve/rt.h); typed wrappers in nerve.rt.
RT_OTHER: int
RT_FIFO: int
RT_RR: int
RT_BEST_EFFORT: int
TASK_SKIP: int
TASK_CATCH_UP: int
TASK_MLOCK: int

_Series = Tuple[int, int, int, int, int, int]
_Applied = Tuple[int, int, int, bool, str]

def rt_prio_from_period(
    period_ns: int, prio_map: Optional[Tuple[int, int, int, int]] = None
) -> int: ...
def rt_lock_memory(stack: int, heap: int, flags: int) -> _Applied: ...
def rt_sched_set(policy: int, priority: int, flags: int) -> _Applied: ...
def rt_sched_get() -> Tuple[int, int]: ...
def rt_affinity_set(cpus: int) -> None: ...
def rt_probe() -> Tuple[bool, int, int, bool]: ...
def rt_timing_compute(release: Any, wake: Any) -> Tuple[_Series, _Series]: ...
def _set_rt_hooks(tick_type: type) -> None: ...

class RtTask:
    """A nerve_task running Python (call mode: a body; step mode: next_tick)."""
    def __init__(
        self,
        body: Optional[Callable[[Any], Any]],
        step: bool,
        period_ns: int,
        start_ns: int,
        offset_ns: int,
        flags: int,
        policy: int,
        priority: Optional[int],
        cpus: int,
        prio_map: Optional[Tuple[int, int, int, int]],
        stack_prefault: int,
        chan: Optional[Chan],
        newest: bool,
        deadline_ns: int,
        msg_max: int,
    ) -> None: ...
    def start(self) -> None: ...
    def run(self) -> None: ...
    def stop(self) -> None: ...
    def _interrupt(self) -> None: ...
    def join(self, timeout: Optional[float] = None) -> bool: ...
    def next_tick(self, timeout: Optional[float] = None) -> Optional[Any]: ...
    def stats(
        self,
    ) -> Tuple[int, int, int, int, int, _Series, _Series, _Series, _Series, int, int, int, int, bool]: ...
    def format(self, name: Optional[str] = None) -> str: ...
    @property
    def started(self) -> bool: ...
    @property
    def finished(self) -> bool: ...
