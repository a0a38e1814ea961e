"""Messages between a channel and GPU memory (cupy), overwrite-safe.

The Python face of ``include/nerve/cxx/gpu.hpp``; ``docs/gpu.md`` is the
guide. A frame crosses a channel with one copy at each end once the ring is
registered with the device (:func:`register`)::

    import cupy as cp, nerve, nerve.gpu
    cam = nerve.open("camera")                    # read-only handle
    reg = nerve.gpu.register(cam)                 # once (read-only pinning)
    frame = cp.empty((1080, 1920, 3), cp.uint8)
    got = nerve.gpu.copy_view_to_device(cam, frame, wait=True)
    # got.data is frame, holding message got.seq, checked after the copy

Two generic helpers hold the protocol and take the copy as a callable
``copy(dst, src)`` that has finished when it returns (``dst`` and ``src``
are flat uint8 arrays of the message's size: numpy for the ring side, the
caller's array type for the other), so the protocol runs, and is tested,
with numpy on machines without a GPU:

- :func:`copy_view`: view a message, copy it out, then check the view. If a
  writer began to overwrite the message during the copy, the copy is
  discarded (the destination holds torn bytes), the cursor is put back and
  the copy retried, up to ``attempts`` times; then :class:`nerve.Lapped`.
  ``Copied.discarded`` counts the copies thrown away.
- :func:`put_from`: reserve, copy into the reservation, commit; a copy that
  raises aborts the reservation (nothing is published).

cupy is optional (``pip install 'nerve[gpu]'``); only the ``*_device``
helpers and :func:`register` import it, when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional

from . import _errors
from ._channel import Channel

if TYPE_CHECKING:  # numpy and cupy are optional at run time
    pass

__all__ = [
    "Copied",
    "Registration",
    "copy_view",
    "copy_view_to_device",
    "host_copy",
    "plan_registration",
    "put_from",
    "put_from_device",
    "register",
]

#: ``copy(dst, src)``: copy the flat uint8 array ``src`` into ``dst`` (same
#: size) and return once the copy has completed.
Copier = Callable[[Any, Any], None]

# CUDA constants (cuda_runtime_api / driver_types), fixed by the CUDA ABI.
_REGISTER_DEFAULT = 0x00
_REGISTER_READ_ONLY = 0x08
_ATTR_HOST_REGISTER_SUPPORTED = 99
_ATTR_PAGEABLE_USES_HOST_PAGE_TABLES = 100
_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED = 113
_MEMCPY_HOST_TO_DEVICE = 1
_MEMCPY_DEVICE_TO_HOST = 2


class Copied(NamedTuple):
    """A message copied out of a channel by :func:`copy_view`."""

    #: Sequence number of the message.
    seq: int
    #: Commit time, CLOCK_MONOTONIC nanoseconds.
    time_ns: int
    #: Messages skipped since the cursor.
    missed: int
    #: Payload size in bytes.
    size: int
    #: Where the bytes are: ``out`` itself when the message fills it, else
    #: a flat uint8 view of its first ``size`` bytes.
    data: Any
    #: Copies thrown away because a writer overwrote the message during
    #: them.
    discarded: int

    @property
    def time(self) -> int:
        """The old name of ``time_ns``."""
        return self.time_ns


def host_copy(dst: Any, src: Any) -> None:
    """The host copier: ``dst[...] = src`` with numpy."""
    import numpy as np

    np.copyto(dst, src)


def _flat_u8(arr: Any) -> Any:
    """A flat uint8 view of a C-contiguous numpy or cupy array."""
    if not arr.flags.c_contiguous:
        raise ValueError("the array must be C-contiguous")
    return arr.reshape(-1).view("u1")


def copy_view(
    ch: Channel,
    out: Any,
    copy: Copier = host_copy,
    *,
    newest: bool = False,
    wait: bool = False,
    timeout: Optional[float] = None,
    attempts: int = 4,
) -> Optional[Copied]:
    """Copy one message of ``ch`` into ``out`` (a C-contiguous numpy or cupy
    array of at least the message's size) with ``copy(dst, src)``, and check
    afterwards that no writer overwrote it during the copy.

    Which message and waiting as :meth:`nerve.Channel.get`: the next after
    the cursor, or the newest; ``None`` when there is nothing new and
    ``wait`` is false; :class:`nerve.Timeout` after ``timeout`` seconds.
    Raises :class:`nerve.MessageTooLarge` (consuming nothing) when ``out``
    is too small, :class:`nerve.Lapped` when every attempt was overwritten
    (the cursor is then where it was), and whatever ``copy`` raises (nothing
    consumed). On any exception the contents of ``out`` are unspecified."""
    import numpy as np

    flat = _flat_u8(out)
    cap = flat.size
    cursor = ch.cursor
    kw: dict = dict(newest=newest, wait=wait, timeout=timeout)
    discarded = 0
    for _ in range(max(1, attempts)):
        failure: Optional[BaseException] = None
        too_large = 0
        msg = None
        try:
            with ch.view(**kw) as msg:
                if msg is None:
                    return None
                if msg.size > cap:
                    too_large = msg.size
                elif msg.size > 0:
                    src = np.frombuffer(msg.data, np.uint8)
                    try:
                        copy(flat[: msg.size], src)
                    except BaseException as e:  # reported after the check
                        failure = e
                    finally:
                        del src  # release the export before the view ends
        except _errors.StaleView:
            if failure is None and not too_large:
                # Overwritten during the copy: discard it and try again;
                # there is newer data now, so the retry does not wait.
                discarded += 1
                ch.seek(cursor)
                kw.update(wait=False, timeout=None)
                continue
        if too_large:
            ch.seek(cursor)
            raise _errors.MessageTooLarge(
                -_errors.MessageTooLarge.code,
                f"message of {too_large} bytes does not fit the destination ({cap} bytes)",
            )
        if failure is not None:
            ch.seek(cursor)
            raise failure
        assert msg is not None
        data = out if msg.size == cap else flat[: msg.size]
        return Copied(msg.seq, msg.time_ns, msg.missed, msg.size, data, discarded)
    raise _errors.Lapped(f"{ch.name!r}: writers overwrote the message during each of {discarded} copies")


def put_from(ch: Channel, src: Any, copy: Copier = host_copy, *, timeout: Optional[float] = None) -> int:
    """Publish the bytes of ``src`` (a C-contiguous numpy or cupy array) on
    writable ``ch``: reserve ``src.nbytes`` bytes in the ring, ``copy(dst,
    src)`` straight into them, commit. Returns the sequence number. A copy
    that raises aborts the reservation: nothing is published and the writer
    lock is released. ``timeout`` bounds the wait for the writer lock."""
    flat = _flat_u8(src)
    res = ch.reserve(flat.size, timeout=timeout)
    with res as buf:
        if flat.size:
            import numpy as np

            dst = np.frombuffer(buf, np.uint8)
            try:
                copy(dst, flat)
            finally:
                del dst
    assert res.seq is not None
    return res.seq


def _cupy() -> Any:
    try:
        import cupy
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError("nerve.gpu needs cupy for device copies: pip install 'nerve[gpu]'") from e
    return cupy


def _device_copier(kind: int, stream: Any) -> Copier:
    cp = _cupy()

    def copy(dst: Any, src: Any) -> None:
        s = stream if stream is not None else cp.cuda.get_current_stream()
        d_ptr = dst.data.ptr if kind == _MEMCPY_HOST_TO_DEVICE else dst.ctypes.data
        s_ptr = src.ctypes.data if kind == _MEMCPY_HOST_TO_DEVICE else src.data.ptr
        cp.cuda.runtime.memcpyAsync(d_ptr, s_ptr, src.nbytes, kind, s.ptr)
        s.synchronize()  # only a completed copy can be checked

    return copy


def copy_view_to_device(
    ch: Channel,
    out: Any = None,
    *,
    shape: Any = None,
    dtype: Any = "u1",
    stream: Any = None,
    newest: bool = False,
    wait: bool = False,
    timeout: Optional[float] = None,
    attempts: int = 4,
) -> Optional[Copied]:
    """:func:`copy_view` into the cupy array ``out`` (or a new one of
    ``shape`` and ``dtype``; without a shape, of the channel's largest
    message, ``data`` then being the message's first bytes) on ``stream``
    (default: the current stream), one DMA transfer when the ring is
    registered. Raises as :func:`copy_view`."""
    cp = _cupy()
    if out is None:
        if shape is None:
            shape = (ch.stat().data_size,)
        out = cp.empty(shape, dtype)
    copier = _device_copier(_MEMCPY_HOST_TO_DEVICE, stream)
    return copy_view(ch, out, copier, newest=newest, wait=wait, timeout=timeout, attempts=attempts)


def put_from_device(ch: Channel, src: Any, *, stream: Any = None, timeout: Optional[float] = None) -> int:
    """:func:`put_from` the cupy array ``src`` on ``stream`` (default: the
    current stream): one DMA into the reservation when the ring is
    registered. Returns the sequence number."""
    return put_from(ch, src, _device_copier(_MEMCPY_DEVICE_TO_HOST, stream), timeout=timeout)


def plan_registration(
    writable: bool,
    host_register_supported: bool,
    read_only_supported: bool,
    pageable_uses_host_page_tables: bool,
) -> Optional[str]:
    """How a ring mapping is registered: ``"writable"`` (a writable handle:
    default flags), ``"read-only"`` (``cudaHostRegisterReadOnly``),
    ``"host-page-tables"`` (a read-only mapping registered without the
    flag, on devices that read pageable memory through the host's page
    tables) or ``None`` (not registered: device copies from the ring take
    the driver's pageable path, several times slower for large frames)."""
    if not host_register_supported:
        return None
    if writable:
        return "writable"
    if read_only_supported:
        return "read-only"
    if pageable_uses_host_page_tables:
        return "host-page-tables"
    return None


class Registration:
    """A channel's ring registered with CUDA, made by :func:`register`; a
    context manager that unregisters it. ``mode`` says how
    (:func:`plan_registration`), or is ``None`` with ``reason`` saying why
    not. Close it before closing the channel."""

    __slots__ = ("mode", "reason", "base", "size", "_rt")

    def __init__(self, mode: Optional[str], reason: Optional[str], base: int, size: int, rt: Any) -> None:
        self.mode = mode
        self.reason = reason
        self.base = base
        self.size = size
        self._rt = rt

    @property
    def registered(self) -> bool:
        return self.mode is not None

    def close(self) -> None:
        """Unregister (cudaHostUnregister); idempotent."""
        if self.mode is not None:
            self.mode = None
            self._rt.hostUnregister(self.base)

    def __enter__(self) -> "Registration":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        how = self.mode or f"not registered: {self.reason}"
        return f"<nerve.gpu.Registration {self.size} bytes at {self.base:#x}, {how}>"


def register(ch: Channel, device: Optional[int] = None, *, runtime: Any = None) -> Registration:
    """Register the ring of ``ch`` with CUDA device ``device`` (default: the
    current one) once, so device copies to and from it are single DMA
    transfers. A read-only handle gets ``cudaHostRegisterReadOnly`` where
    the device supports it. Where registration is not supported or the
    driver refuses it, nothing is raised: the result's ``mode`` is ``None``
    and ``reason`` says why, and copies still work, through the pageable
    path. ``runtime`` stands in for ``cupy.cuda.runtime`` (tests)."""
    rt = runtime if runtime is not None else _cupy().cuda.runtime
    base, size = ch.ring()
    dev = rt.getDevice() if device is None else device

    def attr(a: int) -> bool:
        try:
            return bool(rt.deviceGetAttribute(a, dev))
        except Exception:  # an attribute this driver does not know
            return False

    mode = plan_registration(
        ch.writable,
        attr(_ATTR_HOST_REGISTER_SUPPORTED),
        attr(_ATTR_HOST_REGISTER_READ_ONLY_SUPPORTED),
        attr(_ATTR_PAGEABLE_USES_HOST_PAGE_TABLES),
    )
    if mode is None:
        why = "the device cannot register this mapping (read-only pinning unsupported)"
        return Registration(None, why, base, size, rt)
    flags = _REGISTER_READ_ONLY if mode == "read-only" else _REGISTER_DEFAULT
    try:
        rt.hostRegister(base, size, flags)
    except Exception as e:  # the driver refused: fall back to pageable copies
        return Registration(None, f"cudaHostRegister failed: {e}", base, size, rt)
    return Registration(mode, None, base, size, rt)
