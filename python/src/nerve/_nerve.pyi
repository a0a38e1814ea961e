# Type stub of the native module (python/src/_nerve*.cpp; see _nerve.h).
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._channel import Message

VERSION: int
VERSION_STRING: str
LAYOUT_VERSION: int
NAME_MAX: int
WAIT_MAX: int
LOCK_OWNER_DIED: int
LOCK_WAITERS: int

class Span:
    """Memory inside a channel's ring, exported through the buffer protocol."""
    def check(self) -> None: ...
    def valid(self) -> bool: ...

class Chan:
    def __init__(self, name: str, write: bool = False, lazy: bool = False) -> None: ...
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
        spin: float = 0.0,
        lead: float = 0.0,
    ) -> Optional[Message]:
        """Copy a message out: the next unseen one (default; the oldest still
        present if it was overwritten, with ``missed`` counting the loss),
        the newest (``newest=True``; ``repeat=True`` returns it again even if
        already seen), sequence number ``seq``, or the newest committed at or
        before CLOCK_MONOTONIC time ``at`` (ns). Returns None when nothing is
        new and ``wait`` is false; with ``wait`` blocks (GIL released,
        Ctrl-C interrupts) and raises Timeout after ``timeout`` seconds.
        Raises Overwritten for a ``seq`` already gone, Cancelled after
        cancel().

        ``spin`` and ``lead`` (seconds; only with ``wait``) are the C++
        API's nerve::WaitPolicy: before it sleeps, the wait polls for up
        to ``spin`` without the GIL and without a system call, so a
        message that comes meanwhile is returned without a wake-up (tens
        of microseconds on a VM) at the cost of that CPU time. With a
        ``lead`` as well, and once this handle has read two messages of a
        periodic channel, the wait sleeps until ``lead`` before the next
        message is due (an early message still wakes it) and polls only
        from then on. Use them on dedicated cores."""
    def _view(
        self,
        *,
        newest: bool = False,
        wait: bool = False,
        timeout: Optional[float] = None,
        seq: Optional[int] = None,
        at: Optional[int] = None,
        repeat: bool = False,
        spin: float = 0.0,
        lead: float = 0.0,
    ) -> Optional[Tuple[Span, int, int, int, int]]: ...
    def _reserve(self, size: int, *, timeout: Optional[float] = None) -> Span: ...
    def _commit(self, size: int) -> int: ...
    def _commit_at(self, size: int, time: int) -> Tuple[int, int]: ...
    def _abort(self) -> None: ...
    def _stat(self) -> ChannelInfo: ...
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
    def grow(self, size: int, slots: int = 0) -> None:
        """Replace the channel with a larger successor under its name."""
    def follow_successor(self) -> bool:
        """After Superseded: reopen the name, keeping this handle's place."""
    def renamed(self) -> bool:
        """Whether the name now names another file, or none."""
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
def stat(name: str) -> ChannelInfo: ...
def path(name: Optional[str] = None, bell: bool = False) -> str: ...
def file_size(slots: int, size: int, type: Optional[str] = None, encoding: Optional[str] = None,
              schema: Optional[bytes] = None) -> int: ...
def parse_size(text: str) -> int: ...

# The bridge kernel (include/nerve/bridge.h); nerve.bridge wraps these.
TOPIC_MAX: int
DIR_SCAN_MS: int
def topic_of_channel(name: str, domain: int = 0) -> str: ...
def channel_of_topic(topic: str, domain: int = 0) -> str: ...
def glob_check(glob: str) -> None: ...
def glob_match(glob: str, name: str) -> bool: ...

class ChannelDir:
    def __init__(self, globs: List[str], scan: bool = False) -> None: ...
    def fileno(self) -> int: ...
    @property
    def inotify(self) -> bool: ...
    def next(self) -> Optional[Tuple[str, str]]: ...
    def close(self) -> None: ...

class Budget:
    def __init__(self, max_channel: int, max_total: int) -> None: ...
    def admit(self, name: str, slots: int, size: int, type: Optional[str] = None,
              encoding: Optional[str] = None, schema: Optional[bytes] = None,
              count: bool = True) -> int: ...
    def release(self, name: str) -> bool: ...
    def stats(self) -> Dict[str, int]: ...

OWN_N: int
class OwnGuard:
    def __init__(self) -> None: ...
    def begin(self) -> int: ...
    def end(self, token: int, seq: Optional[int] = None) -> None: ...
    def check(self, seq: int) -> bool: ...
    def reset(self) -> None: ...
    def stats(self) -> Dict[str, int]: ...

class ChannelInfo:
    """struct nerve_stats with the channel's name (read-only)."""
    def __init__(self, name: str, error: Optional[str] = None) -> None: ...
    name: str
    error: Optional[str]
    slots: int
    data_size: int
    file_size: int
    head_seq: int
    tail_seq: int
    newest_time_ns: int
    bytes_total: int
    waiters: int
    created_ns: int
    layout_version: int
    mode: int
    uid: int
    gid: int
    creator_version: int
    lock_owner_tid: int
    lock_flags: int
    @property
    def messages(self) -> int: ...
    @property
    def newest_time(self) -> int: ...
    @property
    def created(self) -> int: ...
    @property
    def created_realtime_ns(self) -> int: ...
def check(name: str) -> str: ...
def name_check(name: str) -> None: ...
def wait_any(chans: List[Chan], timeout: Optional[float] = None) -> int: ...
def now_ns() -> int: ...
def mono_to_realtime_ns(mono_ns: int) -> int: ...
def error_table() -> List[Tuple[str, int, str]]: ...
def _set_hooks(
    message_type: type, error_factory: Callable[..., BaseException], coerce: Callable[[Any], Any]
) -> None: ...

# MCAP records (_nerve_mcap.cpp), for nerve blackbox's dump.
class McapRun:
    """What one mcap_messages() call copied (read-only)."""
    data: bytes  # the Message records, back to back (mcap_messages only)
    size: int  # bytes of records (in data, or written to the file)
    index: bytes  # (log time, offset in the chunk) per record, native u64
    count: int
    missed: int
    first_ns: int  # commit times of the first and the last record
    last_ns: int
    next_seq: int  # where the next call starts
    stop: str  # "caught_up", "end", "full" or "error"
def mcap_messages(
    chan: Chan, channel_id: int, seq: int, end_ns: int, *, time_offset: int = 0,
    chunk_offset: int = 0, max_bytes: int = 1 << 20, count_first_missed: bool = True
) -> McapRun:
    """Copy chan's messages from sequence number ``seq`` (a NEXT read from a
    cursor just before it: validated as every read, one overwritten before it
    was copied counted in ``missed``, the first message's count only with
    ``count_first_missed``) to the newest, as MCAP Message records of
    channel ``channel_id`` with log and publish time = commit time +
    ``time_offset``, GIL released. Stops at a message committed after
    ``end_ns`` (read, not written: ``next_seq`` is its number; stop "end"),
    once the records hold ``max_bytes`` (stop "full"), when nothing is newer
    (stop "caught_up"), or at a read error after records were copied (stop
    "error": the next call raises it; with none copied, this one raises).
    Index offsets start at ``chunk_offset``. Raises ValueError for a bad
    argument or a closed handle, Busy while another thread waits on it."""
def mcap_messages_to_file(
    chan: Chan, fd: int, channel_id: int, seq: int, end_ns: int, *, time_offset: int = 0,
    max_bytes: int = 1 << 20, count_first_missed: bool = True
) -> McapRun:
    """As mcap_messages(), but the records are written to file descriptor
    ``fd`` at its position (which is where index offsets start): each
    header by write(), each payload by nerve_chan_view_write() (the kernel
    copies it from the channel file; nothing passes through this process).
    A message overwritten while it was written is taken back (fd's position
    returns to the record's start) and counted in ``missed``; ``data`` is
    empty and ``size`` says how many bytes were written."""

# Real-time helpers (include/nerve/rt.h); typed wrappers in nerve.rt.
RT_OTHER: int
RT_FIFO: int
RT_RR: int
RT_BEST_EFFORT: int
TASK_SKIP: int
TASK_CATCH_UP: int
TASK_MLOCK: int
TASK_STATS_TYPE: str

class Series:
    def __init__(self, n: int = 0, min_ns: int = 0, max_ns: int = 0, max_abs_ns: int = 0,
                 mean_ns: int = 0, rms_ns: int = 0) -> None: ...
    n: int
    min_ns: int
    max_ns: int
    max_abs_ns: int
    mean_ns: int
    rms_ns: int
    @property
    def jitter_ns(self) -> int: ...

class PrioMap:
    def __init__(self, period_min_ns: int = ..., period_max_ns: int = ..., prio_min: int = ...,
                 prio_max: int = ...) -> None: ...
    period_min_ns: int
    period_max_ns: int
    prio_min: int
    prio_max: int

class Applied:
    policy: int
    priority: int
    fallback_err: int
    fallback: Optional[BaseException]
    mem_locked: bool
    message: str

class Caps:
    fifo_ok: bool
    fifo_max_prio: int
    memlock_max: Optional[int]
    preempt_rt: bool

class TaskStats:
    cycles: int
    overruns: int
    skipped: int
    timeouts: int
    missed: int
    abs_err: Series
    rel_err: Series
    latency: Series
    exec: Series
    period_ns: int
    policy: int
    priority: int
    sched_err: int
    sched_error: Optional[BaseException]
    running: bool
    stats_lost: int

class Tick:
    cycle: int
    release_ns: int
    wake_ns: int
    skipped: int
    message: Optional[Message]
    status: int
    timed_out: bool

def rt_prio_from_period(period_ns: int, prio_map: Optional[PrioMap] = None) -> int: ...
def rt_lock_memory(stack: int, heap: int, flags: int) -> Applied: ...
def rt_sched_set(policy: int, priority: int, flags: int) -> Applied: ...
def rt_sched_get() -> Tuple[int, int]: ...
def rt_affinity_set(cpus: int) -> None: ...
def rt_probe() -> Caps: ...
def rt_timing_compute(release: Any, wake: Any) -> Tuple[Series, Series]: ...
def _set_rt_hooks(policy: Callable[[int], Any]) -> None: ...

class RtTask:
    """A nerve_task driven by next() (nerve_task_next)."""
    def __init__(
        self,
        period_ns: int,
        start_ns: int,
        offset_ns: int,
        flags: int,
        policy: int,
        priority: Optional[int],
        cpus: int,
        prio_map: Optional[PrioMap],
        stack_prefault: int,
        chan: Optional[Chan],
        newest: bool,
        deadline_ns: int,
        msg_max: int,
    ) -> None: ...
    def next(self, timeout: Optional[float] = None) -> Optional[Tick]: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...
    def stats(self) -> TaskStats: ...
    def publish_stats(self, chan: Optional[Chan]) -> None: ...
    def format(self, name: Optional[str] = None) -> str: ...
    @property
    def begun(self) -> bool: ...
    @property
    def ended(self) -> bool: ...
