"""nerve: real-time shared-memory channels, from Python.

A channel is a named ring of messages in POSIX shared memory (see the C
library's include/nerve/chan.h). Writers never wait for readers; readers
take the next or the newest message, copy it (:meth:`Channel.get`) or view
it in place (:meth:`Channel.view`), and are told how many they missed.

>>> import nerve, numpy as np
>>> with nerve.create("cam", slots=8, size=8 << 20) as w, nerve.open("cam") as r:
...     w.put(np.zeros((1080, 1920, 3), np.uint8))
...     with r.view(newest=True) as msg:
...         img = msg.array(np.uint8, (1080, 1920, 3))   # no copy
"""

from . import _nerve
from ._channel import (
    Channel,
    ChannelInfo,
    Message,
    Metadata,
    Reservation,
    View,
    create,
    file_size,
    list_channels,
    open,
    path,
    stat,
    unlink,
    wait_any,
)
from ._errors import *  # noqa: F401,F403  (the exception classes)
from ._errors import __all__ as _error_names

__version__: str = _nerve.VERSION_STRING

#: Longest channel name, in bytes.
NAME_MAX: int = _nerve.NAME_MAX
#: Most channels one wait_any() call waits on.
WAIT_MAX: int = _nerve.WAIT_MAX
#: ChannelInfo.lock_flags: the writer lock's holder died with it (the
#: next writer recovers it).
LOCK_OWNER_DIED: int = _nerve.LOCK_OWNER_DIED
#: ChannelInfo.lock_flags: writers are waiting for the lock.
LOCK_WAITERS: int = _nerve.LOCK_WAITERS


def now_ns() -> int:
    """CLOCK_MONOTONIC now in nanoseconds: the clock of ``Message.time_ns``."""
    return _nerve.now_ns()


def parse_size(text: str) -> int:
    """A byte count in nerve's one size grammar (nerve_size_parse): digits
    with an optional K, M, G or T suffix, powers of 1024, an optional "i"
    after the unit and an optional "B" (``"64K"``, ``"8MiB"`` and ``"1gb"``
    read as the nerve command reads them). No blanks, sign or fraction.
    Raises :class:`nerve.InvalidArgument` with the reason otherwise."""
    return int(_nerve.parse_size(text))


def check(name: str) -> str:
    """Verify every invariant of channel ``name`` that can be checked without
    the writer lock; raises :class:`CorruptChannel` with an explanation.
    Returns the verdict (see :meth:`Channel.check`)."""
    return str(_nerve.check(name))


__all__ = [
    "Channel",
    "ChannelInfo",
    "Message",
    "Metadata",
    "Reservation",
    "View",
    "bridge",  # noqa: F405 (imported at its first use: __getattr__)
    "check",
    "create",
    "file_size",
    "list_channels",
    "now_ns",
    "open",
    "parse_size",
    "path",
    "rt",  # noqa: F405 (imported at its first use: __getattr__)
    "stat",
    "unlink",
    "wait_any",
    "NAME_MAX",
    "WAIT_MAX",
    "LOCK_OWNER_DIED",
    "LOCK_WAITERS",
    *_error_names,
]


#: Submodules imported at their first use (nerve.rt, nerve.bridge), not by
#: `import nerve`: a program that does not use them (a recorder that stays
#: armed for days) does not keep them, nor datetime and array with rt.
_LAZY = {
    "bridge": "the bridge kernel: names, globs, ChannelDir, Budget",
    "rt": "real-time helpers and periodic loops",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    # nerve.list, the name list_channels() had before: kept for old callers
    # without a module-level `list` that shadows the built-in.
    if name == "list":
        return list_channels
    raise AttributeError(f"module 'nerve' has no attribute {name!r}")
