"""Channels: the Python face of include/nerve/chan.h."""

from __future__ import annotations

import atexit
import threading
from typing import (
    TYPE_CHECKING,
    Any,
    Iterator,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import _errors, _nerve

if TYPE_CHECKING:  # numpy is optional at run time
    import concurrent.futures

    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Channel",
    "ChannelInfo",
    "Message",
    "Metadata",
    "Reservation",
    "View",
    "create",
    "file_size",
    "list_channels",
    "open",
    "path",
    "stat",
    "unlink",
    "wait_any",
]

Shape = Union[int, Tuple[int, ...]]
Buffer = Union[bytes, bytearray, memoryview, Any]


def _as_array(buf: Any, dtype: "npt.DTypeLike", shape: Optional[Shape]) -> "np.ndarray":
    import numpy as np

    arr = np.frombuffer(buf, dtype=dtype)
    if shape is not None:
        arr = arr.reshape(shape)
    return arr


class Message(NamedTuple):
    """One message, as returned by :meth:`Channel.get` (a copy) or entered by
    :meth:`Channel.view` (a zero-copy view, valid only inside the block)."""

    #: Sequence number (1-based, strictly increasing per channel).
    seq: int
    #: Commit time, CLOCK_MONOTONIC nanoseconds (comparable with
    #: :func:`time.monotonic_ns`).
    time_ns: int
    #: The payload: ``bytes`` for get(), a read-only ``memoryview`` for view().
    data: Union[bytes, memoryview]
    #: Messages skipped since the cursor (default and newest selections).
    missed: int
    #: Payload size in bytes.
    size: int

    def array(self, dtype: "npt.DTypeLike" = "u1", shape: Optional[Shape] = None) -> "np.ndarray":
        """The payload as a read-only numpy array of ``dtype`` (any dtype,
        structured ones included), reshaped to ``shape`` if given. No copy:
        the array shares memory with ``data``."""
        return _as_array(self.data, dtype, shape)

    def wall_time(self) -> float:
        """Commit time as seconds since the epoch (like :func:`time.time`)."""
        return _nerve.mono_to_realtime_ns(self.time_ns) / 1e9

    @property
    def time(self) -> int:
        """The old name of ``time_ns``."""
        return self.time_ns

    def __repr__(self) -> str:
        data = bytes(self.data[:16])
        more = "..." if self.size > 16 else ""
        return (f"Message(seq={self.seq}, size={self.size}, missed={self.missed}, "
                f"time_ns={self.time_ns} (monotonic), data={data!r}{more})")


class Metadata(NamedTuple):
    """What a channel carries, recorded when it was created."""

    type: Optional[str]
    encoding: Optional[str]
    schema: Optional[bytes]


#: Facts about a channel, read without any lock (struct nerve_stats, see
#: nerve_chan_stat_name): ``name``, ``slots``, ``data_size``, ``file_size``,
#: ``head_seq``, ``tail_seq``, ``newest_time_ns`` (CLOCK_MONOTONIC, 0: no
#: message), ``bytes_total``, ``waiters``, ``created_ns`` (CLOCK_REALTIME),
#: ``layout_version``, ``mode``, ``uid``, ``gid``, ``creator_version``,
#: ``lock_owner_tid`` (the writer lock's holder, a thread id as the
#: writers' PID namespace numbers it; 0: free), ``lock_flags``
#: (:data:`nerve.LOCK_OWNER_DIED`, :data:`nerve.LOCK_WAITERS`),
#: ``messages`` (still readable) and ``error`` (why the channel could not be
#: described, None when it could). ``newest_time`` and ``created`` are the
#: old names of the two times.
ChannelInfo = _nerve.ChannelInfo


def _coerce(obj: Any) -> Any:
    """Bytes-like form of an object whose buffer cannot be exported simply
    (numpy dtypes such as datetime64 refuse the buffer protocol)."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy missing
        np = None
    if np is not None and isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError("put(): arrays of Python objects hold pointers, not data")
        return np.ascontiguousarray(obj).reshape(-1).view(np.uint8)
    raise TypeError(f"put() needs bytes, a buffer or a numpy array, not {type(obj).__name__}")


_nerve._set_hooks(Message, _errors._make, _coerce)
# Before finalization begins, stop waiting threads from retaking the GIL (see
# the comment on reacquire_gil() in _nerve.cpp).
atexit.register(_nerve._at_exit)

# Each get_async() wait that must block runs on a thread of its own: a wait
# holds its thread for its whole length, so a bounded pool would let some
# waits never start (starvation) while others sleep on quiet channels.
_async_lock = threading.Lock()


# Channels with a get_async() wait in a thread. Those threads are joined at
# interpreter exit, so their waits are cancelled first.
_async_waits: "set[Channel]" = set()


def _cancel_async_waits() -> None:
    with _async_lock:
        for ch in [*_async_waits]:
            ch.cancel()


def _run_in_thread(fn: Any, **kw: Any) -> "concurrent.futures.Future[Any]":
    """Run fn(**kw) on a new thread; its future, already running."""
    _async_imports()
    import concurrent.futures

    cf: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
    cf.set_running_or_notify_cancel()

    def work() -> None:
        try:
            res = fn(**kw)
        except BaseException as e:
            cf.set_exception(e)
        else:
            cf.set_result(res)

    threading.Thread(target=work, name="nerve-wait").start()
    return cf


_async_ready = False


def _async_imports() -> None:
    """asyncio and concurrent.futures, imported at the first get_async()
    wait, not with nerve: together they are 8 MB of a process's memory
    (ssl, sockets, logging), which a process that never awaits a channel
    (a recorder armed for days, nerve blackbox) should not carry."""
    global _async_ready
    with _async_lock:
        if _async_ready:
            return
        import asyncio  # noqa: F401
        import concurrent.futures.thread  # noqa: F401  registers its exit hook before ours

        # Runs before the interpreter joins the pool's threads (LIFO after
        # concurrent.futures' own hook, which is registered at its import).
        if hasattr(threading, "_register_atexit"):
            threading._register_atexit(_cancel_async_waits)
        _async_ready = True


class View:
    """Context manager returned by :meth:`Channel.view`.

    Entering it yields a :class:`Message` whose ``data`` is a read-only
    memoryview into the ring (or ``None`` when there was nothing new and
    ``wait`` was false). Leaving it validates the view: if a writer began to
    overwrite the message meanwhile, :class:`nerve.StaleView` is raised and
    whatever was computed from the bytes must be discarded."""

    __slots__ = ("_ch", "_kw", "_span", "_mv", "_msg")

    def __init__(self, ch: "Channel", kw: dict) -> None:
        self._ch = ch
        self._kw = kw
        self._span: Any = None
        self._mv: Optional[memoryview] = None
        self._msg: Optional[Message] = None

    def __enter__(self) -> Optional[Message]:
        r = self._ch._view(**self._kw)
        if r is None:
            return None
        span, seq, time_ns, missed, size = r
        self._span = span
        self._mv = memoryview(span)
        self._msg = Message(seq, time_ns, self._mv, missed, size)
        return self._msg

    def valid(self) -> bool:
        """True while no writer has begun to overwrite the message."""
        return self._span is not None and self._span.valid()

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        span = self._span
        if span is None:
            return
        self._span = None
        self._msg = None
        # Validate while our memoryview still keeps the mapping alive: a
        # close() inside the block only marks the handle closing, and the
        # munmap waits for the release below.
        try:
            if et is None:
                span.check()
            elif et is not _errors.StaleView:
                # The block failed; if a writer overwrote the message
                # meanwhile, the failure may come from torn bytes: say so,
                # chaining the original exception, rather than let it pass
                # for a data error.
                try:
                    span.check()
                except _errors.StaleView as stale:
                    raise stale from ev
        finally:
            if self._mv is not None:
                try:
                    self._mv.release()
                except BufferError:
                    pass  # numpy arrays still export it; they keep the mapping
                self._mv = None


class Reservation:
    """Context manager returned by :meth:`Channel.reserve`.

    Entering it yields a writable buffer inside the ring: a memoryview of
    ``size`` bytes, or a numpy array when ``dtype`` was given. The message is
    committed when the block ends without an exception and discarded
    otherwise. Set :attr:`size` inside the block to publish fewer bytes.
    Do not keep the buffer after the block: the ring memory belongs to later
    messages."""

    __slots__ = ("_ch", "size", "_dtype", "_shape", "_timeout", "_span", "_mv", "_arr", "seq", "time_ns")

    def __init__(self, ch: "Channel", size: int, dtype: Any, shape: Optional[Shape], timeout: Optional[float],
                 time: Optional[int] = None) -> None:
        self._ch = ch
        #: Bytes to publish at commit (at most the reserved size).
        self.size = size
        #: Commit time to record (CLOCK_MONOTONIC ns, clamped as in
        #: :meth:`Channel.put_at`; None: the time of the commit). After the
        #: commit: the time recorded.
        self.time_ns = time
        self._dtype = dtype
        self._shape = shape
        self._timeout = timeout
        self._span: Any = None
        self._mv: Optional[memoryview] = None
        self._arr: Any = None
        #: Sequence number of the committed message (None until committed).
        self.seq: Optional[int] = None

    def __enter__(self) -> Any:
        self._span = self._ch._reserve(self.size, timeout=self._timeout)
        self._mv = memoryview(self._span)
        if self._dtype is not None:
            import numpy as np

            arr = np.frombuffer(self._mv, dtype=self._dtype)
            if self._shape is not None:
                arr = arr.reshape(self._shape)
            self._arr = arr
            return arr
        return self._mv

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        if self._arr is not None:
            # Best effort against writes into the ring after the block.
            self._arr.flags.writeable = False
            self._arr = None
        if self._mv is not None:
            try:
                self._mv.release()
            except BufferError:
                pass
            self._mv = None
        self._span = None
        if et is None:
            try:
                if self.time_ns is None:
                    self.seq = self._ch._commit(self.size)
                else:
                    self.seq, self.time_ns = self._ch._commit_at(self.size, self.time_ns)
            except BaseException:
                # A commit that failed (bad size, closed or busy handle)
                # must not leave the writer lock taken: every writer of the
                # channel would time out. _commit aborts a reservation the C
                # commit refused; this covers failures before it got there.
                self._abort_quietly()
                raise
        else:
            self._ch._abort()

    @property
    def time(self) -> Optional[int]:
        """The old name of ``time_ns``."""
        return self.time_ns

    @time.setter
    def time(self, value: Optional[int]) -> None:
        self.time_ns = value

    def _abort_quietly(self) -> None:
        try:
            self._ch._abort()
        except (_errors.Error, ValueError):
            pass  # already aborted (failed commit) or the handle is closed


class Channel(_nerve.Chan):
    """An open channel handle: made by :func:`nerve.create` or
    :func:`nerve.open`; a context manager that closes the handle.

    A handle has one cursor, so it is for one reader at a time: a thread
    that waits on it makes every other call on it raise :class:`nerve.Busy`
    (open one handle per thread). ``put`` and ``get`` are implemented in C
    and do not release the GIL unless they must wait."""

    def __enter__(self) -> "Channel":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("rw" if self.writable else "r")
        return f"<nerve.Channel {self.name!r} {state}>"

    # put() and get() come from the native base class; see _nerve.pyi.

    def view(
        self,
        newest: bool = False,
        wait: bool = False,
        timeout: Optional[float] = None,
        seq: Optional[int] = None,
        at: Optional[int] = None,
        repeat: bool = False,
        spin: float = 0.0,
        lead: float = 0.0,
    ) -> View:
        """Zero-copy read: ``with ch.view() as msg:`` gives a
        :class:`Message` whose ``data`` is a read-only memoryview into the
        ring (``msg.array(dtype, shape)`` for numpy), or ``None``. The view
        is validated when the block ends; :class:`nerve.StaleView` is raised
        if a writer overwrote the message meanwhile. Arguments as
        :meth:`get`."""
        return View(self, dict(newest=newest, wait=wait, timeout=timeout, seq=seq, at=at, repeat=repeat,
                               spin=spin, lead=lead))

    def reserve(
        self,
        size: Optional[int] = None,
        dtype: "Optional[npt.DTypeLike]" = None,
        shape: Optional[Shape] = None,
        timeout: Optional[float] = None,
        time: Optional[int] = None,
    ) -> Reservation:
        """Zero-copy write: ``with ch.reserve(n) as buf:`` gives a writable
        memoryview of ``n`` bytes inside the ring; with ``dtype`` (and
        ``shape``) a writable numpy array instead, its size computed from
        them. Committed when the block ends without error, discarded
        otherwise. The writer lock is held for the whole block. ``time``
        sets the commit time as :meth:`put_at` does (the Reservation's
        ``time`` is then the time recorded)."""
        if dtype is not None:
            import numpy as np

            dt = np.dtype(dtype)
            count = 1
            if shape is not None:
                for d in (shape,) if isinstance(shape, int) else shape:
                    count *= int(d)
            nbytes = dt.itemsize * count
            if size is not None and size != nbytes:
                raise ValueError(f"size {size} does not match dtype and shape ({nbytes} bytes)")
            size = nbytes
        if size is None:
            raise TypeError("reserve() needs a size or a dtype")
        return Reservation(self, size, dtype, shape, timeout, time)

    def follow(
        self, newest: bool = False, timeout: Optional[float] = None, spin: float = 0.0, lead: float = 0.0
    ) -> Iterator[Message]:
        """Iterate over messages as they arrive, waiting for each: every
        message in order (``newest=False``; ``msg.missed`` tells how many
        were overwritten before this reader got to them) or only the newest
        (``newest=True``, skipping what arrived meanwhile). The iteration
        ends when no message arrives within ``timeout`` seconds (None: never
        ends); Ctrl-C interrupts it. ``spin`` and ``lead`` as :meth:`get`.
        A channel that a writer grows (:meth:`grow`) is followed to its
        successor without losing the place."""
        while True:
            try:
                msg = self.get(newest=newest, wait=True, timeout=timeout, spin=spin, lead=lead)
            except _errors.Timeout:
                return
            except _errors.Superseded:
                self.follow_successor()
                continue
            if msg is not None:
                yield msg

    async def get_async(
        self,
        newest: bool = False,
        timeout: Optional[float] = None,
        seq: Optional[int] = None,
    ) -> Message:
        """Wait for a message without blocking the event loop. A message
        already there is returned at once; otherwise the wait runs in a
        worker thread, and cancelling the awaiting task cancels that wait
        (through nerve_chan_cancel); a message the wait had already taken is
        not lost: the cursor is put back, so the next get() returns it.
        Raises :class:`nerve.Timeout` after ``timeout`` seconds."""
        msg = self.get(newest=newest, seq=seq)
        if msg is not None:
            return msg
        import asyncio  # the caller's event loop imported it

        cursor = self.cursor
        with _async_lock:
            _async_waits.add(self)
        try:
            cf = _run_in_thread(self.get, newest=newest, wait=True, timeout=timeout, seq=seq)
        except BaseException:
            with _async_lock:
                _async_waits.discard(self)
            raise
        try:
            return await asyncio.wrap_future(cf)
        except asyncio.CancelledError:
            # Wake the wait and let it end before the handle is used again.
            # A second cancellation must not end this wait early: clearing
            # the cancel before the thread saw it would leave it waiting.
            self.cancel()
            try:
                while not cf.done():
                    try:
                        await asyncio.wrap_future(cf)
                    except BaseException:
                        pass  # cancelled again, or the wait's error: see cf
            finally:
                self.cancel_clear()
            if cf.exception() is None and cf.result() is not None:
                # The wait took a message before the cancel reached it: put
                # the cursor back so that the next get() returns it again.
                self.seek(cursor)
            raise
        finally:
            with _async_lock:
                _async_waits.discard(self)

    @property
    def metadata(self) -> Metadata:
        """Type name, encoding and schema recorded at creation."""
        return Metadata(*self._meta())

    def stat(self) -> ChannelInfo:
        """Facts about the channel (geometry, sequence numbers, counters)."""
        return self._stat()

    def check(self) -> str:
        """Verify the channel file's invariants; raises
        :class:`nerve.CorruptChannel` with an explanation on a problem.
        Returns the verdict: ``"ok; writer lock: STATE"``, followed by
        ``"; bell not used (why): waiting readers poll"`` when the channel's
        bell file is missing or not its creator's (see nerve_chan_check)."""
        return str(_nerve.check(self.name))


def create(
    name: str,
    slots: Optional[int] = None,
    size: Optional[int] = None,
    mode: Optional[int] = None,
    type: Optional[str] = None,
    encoding: Optional[str] = None,
    schema: Optional[Union[str, bytes]] = None,
    exist_ok: bool = False,
) -> Channel:
    """Create channel ``name`` and return it open for writing.

    ``slots`` is the number of index entries (messages kept at most),
    ``size`` the data ring in bytes (rounded up to pages; also the largest
    message), ``mode`` the permission bits; left out (None), each is the C
    library's default (NERVE_CHAN_OPTS_INIT: 1024 slots, 1 MiB, 0o644). ``type``, ``encoding`` (raw,
    cdr, ros1msg, protobuf, json, ...) and ``schema`` are recorded as
    metadata. With ``exist_ok`` an existing channel of equal geometry and
    metadata is reused; otherwise :class:`nerve.ChannelExists`."""
    if isinstance(schema, str):
        schema = schema.encode()
    for field, text in (("type", type), ("encoding", encoding)):
        # The library takes UTF-8 text without NUL (its one rule for
        # metadata); a str that cannot be encoded is refused here, as the
        # library refuses such bytes, with nerve's error.
        if text is None:
            continue
        try:
            text.encode("utf-8")
        except (UnicodeEncodeError, AttributeError):
            raise _errors._make(_errors.InvalidArgument.code,
                                f"{field} must be a str of valid UTF-8 text", name) from None
        if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text):
            # The library's other rule (nerve_chan_create): printable text,
            # so that no name printed by a tool is an escape sequence.
            raise _errors._make(_errors.InvalidArgument.code,
                                f"{field} holds a control character (C0, DEL or C1): types and "
                                "encodings are printable text", name)
    if (slots is not None and slots <= 0) or (size is not None and size <= 0):
        # The C library reads 0 as "the default"; here, as for the nerve
        # command, a size must be given as what it is (or left out).
        raise ValueError(f"slots and size must be positive (got slots={slots}, size={size})")
    if mode is not None and mode == 0:
        raise ValueError("mode must not be 0 (leave it out for the default)")
    # 0 asks the C library for its default.
    _nerve.create(name, slots or 0, size or 0, mode or 0, type, encoding, schema, exist_ok)
    return Channel(name, True)


def open(name: str, write: bool = False, lazy: bool = False) -> Channel:
    """Open an existing channel, read-only unless ``write``. Readers need
    only read permission and never write to the channel. With ``lazy``
    the ring's pages are not faulted in at open (NERVE_O_LAZY): cheap for
    a large ring of which few messages are read, not for a real-time
    reader, whose first reads would fault.

    The new handle's cursor is just before the oldest message present now:
    ``get()`` returns that message with ``missed`` 0, and ``missed`` counts
    only messages this handle could have had and did not get, never the
    history before it opened (the C library's one meaning, nerve/chan.h)."""
    return Channel(name, write, lazy)


def unlink(name: str) -> None:
    """Remove channel ``name``; open handles keep working until closed."""
    _nerve.unlink(name)


def stat(name: str) -> ChannelInfo:
    """Facts about channel ``name`` without opening it (nerve_chan_stat_name)."""
    return _nerve.stat(name)


def path(name: Optional[str] = None, bell: bool = False) -> str:
    """The file of channel ``name`` (``/dev/shm/nerve.NAME``; with ``bell``,
    its bell), from the C library (nerve_chan_path): the one place the
    location is spelled. With no name, the prefix every channel's path
    begins with (the path is the prefix followed by the name), for tools
    that look for channels in /proc/PID/maps. Nothing is opened."""
    return str(_nerve.path(name, bell))


def file_size(
    slots: Optional[int] = None,
    size: Optional[int] = None,
    type: Optional[str] = None,
    encoding: Optional[str] = None,
    schema: Optional[Union[str, bytes]] = None,
) -> int:
    """The bytes of the file :func:`create` would make with these options
    (left out: the C library's defaults), which is the memory the channel
    commits in /dev/shm (nerve_chan_file_size). Raises
    :class:`nerve.InvalidArgument` for options create() refuses."""
    if isinstance(schema, str):
        schema = schema.encode()
    if (slots is not None and slots <= 0) or (size is not None and size <= 0):
        raise ValueError(f"slots and size must be positive (got slots={slots}, size={size})")
    return int(_nerve.file_size(slots or 0, size or 0, type, encoding, schema))


def list_channels() -> List[ChannelInfo]:
    """Describe every channel in /dev/shm, sorted by name. A channel that
    cannot be read (permissions, corruption) is listed with ``error``."""
    out = []
    for name in sorted(_nerve.list_names()):
        try:
            out.append(_nerve.stat(name))
        except _errors.ChannelNotFound:
            continue  # removed meanwhile
        except _errors.Error as e:
            out.append(ChannelInfo(name, str(e)))
    return out


def wait_any(channels: Sequence[Channel], timeout: Optional[float] = None) -> List[Channel]:
    """Wait until at least one of ``channels`` (at most 64) has a message
    after its cursor and return those that have; ``[]`` when ``timeout``
    seconds pass first. Reads nothing and moves no cursor. Releases the GIL
    and can be interrupted with Ctrl-C."""
    chans = [*channels]
    mask = _nerve.wait_any(chans, timeout)
    return [c for i, c in enumerate(chans) if mask >> i & 1]
