"""Exceptions: one class per nerve error code.

Every failure of the C library surfaces as a subclass of :class:`Error`
carrying the code (``exc.code``, the negative ``NERVE_E*`` value) and its
name (``exc.code_name``, e.g. ``"ENOENT"``). Codes that equal an errno also
subclass :class:`OSError` (with ``exc.errno`` set), and the specific built-in
subclass where Python has one, so ``except FileNotFoundError`` and ``except
TimeoutError`` work as a Python programmer expects.
"""

from __future__ import annotations

import errno as _errno
from typing import Dict, Optional, Type

from . import _nerve

__all__ = [
    "Error",
    "OperationNotPermitted",
    "Deadlock",
    "OtherPidNamespace",
    "ChannelNotFound",
    "Interrupted",
    "BadHandle",
    "NoMessage",
    "OutOfMemory",
    "PermissionDenied",
    "Busy",
    "ChannelExists",
    "InvalidArgument",
    "NoSpace",
    "ReadOnly",
    "NameTooLong",
    "NotSupported",
    "MessageTooLarge",
    "Timeout",
    "StaleView",
    "Cancelled",
    "TooManyOpenFiles",
    "TooManyOpenFilesInSystem",
    "SystemCallFailed",
    "CorruptChannel",
    "VersionMismatch",
    "NotAChannel",
    "TruncatedChannel",
    "ChannelMismatch",
    "Overwritten",
    "Lapped",
    "AbiMismatch",
    "DecodeFailed",
]


class Error(Exception):
    """Base class of every nerve error."""

    #: The ``NERVE_E*`` code (negative), or 0 for the base class.
    code: int = 0
    #: The code's name without the prefix, e.g. ``"ECORRUPT"``.
    code_name: str = "UNKNOWN"


# Errno-backed codes: Error and OSError (or its closest built-in subclass).
class OperationNotPermitted(Error, PermissionError):
    """EPERM: the operation is not permitted."""


class ChannelNotFound(Error, FileNotFoundError):
    """ENOENT: no channel of that name."""


class Interrupted(Error, InterruptedError):
    """EINTR: interrupted by a signal."""


class BadHandle(Error, OSError):
    """EBADF: the handle is not usable."""


class NoMessage(Error, BlockingIOError):
    """EAGAIN: no new message (get() returns None instead of raising)."""


class OutOfMemory(Error, OSError):
    """ENOMEM: out of memory."""


class PermissionDenied(Error, PermissionError):
    """EACCES: the file's permission bits forbid this access."""


class Busy(Error, OSError):
    """EBUSY: the handle is busy (a reservation is open, or another thread
    is waiting on it)."""


class ChannelExists(Error, FileExistsError):
    """EEXIST: the channel already exists (create without exist_ok)."""


class InvalidArgument(Error, OSError, ValueError):
    """EINVAL: an argument (name, size, metadata, flags) is invalid."""


class NoSpace(Error, OSError):
    """ENOSPC: no space left in /dev/shm to create the channel."""


class ReadOnly(Error, OSError):
    """EROFS: the channel was opened read-only."""


class NameTooLong(Error, OSError, ValueError):
    """ENAMETOOLONG: the channel name is too long."""


class NotSupported(Error, OSError):
    """ENOSYS: not supported by this kernel."""


class MessageTooLarge(Error, OSError):
    """EMSGSIZE: the message is larger than the channel's data ring."""


class Timeout(Error, TimeoutError):
    """ETIMEDOUT: the wait reached its timeout."""


class StaleView(Error, OSError):
    """ESTALE: a writer overwrote the message while it was being viewed;
    whatever was read through the view must be discarded."""


class Cancelled(Error, OSError):
    """ECANCELED: the wait was cancelled with Channel.cancel()."""


class TooManyOpenFiles(Error, OSError):
    """EMFILE: this process has used up its file descriptors (each open
    channel holds one)."""


class TooManyOpenFilesInSystem(Error, OSError):
    """ENFILE: the system's table of open files is full."""


class SystemCallFailed(Error, OSError):
    """A system call failed with an errno nerve gives no meaning of its own
    (the code is -errno; ``exc.errno`` holds it)."""


class Deadlock(Error, OSError):
    """EDEADLK: this thread already holds the channel's writer lock (it has
    a reservation open on another handle of the channel)."""


class OtherPidNamespace(Error, OSError):
    """EXDEV: the channel's writers run in another PID namespace; writers
    of one channel must share one (readers may be anywhere)."""


# Codes without an errno.
class CorruptChannel(Error):
    """ECORRUPT: the channel file is inconsistent."""


class VersionMismatch(Error):
    """EVERSION: the channel file has an unsupported layout version."""


class NotAChannel(Error):
    """ENOTCHAN: the file is not a nerve channel."""


class TruncatedChannel(Error):
    """ETRUNC: the channel file is shorter than its header says."""


class ChannelMismatch(Error):
    """EMISMATCH: the channel exists with another geometry or metadata."""


class Overwritten(Error):
    """EOVERWRITTEN: the requested message was already overwritten."""


class Lapped(Error):
    """ELAPPED: writers overwrote the message on every read attempt."""


class AbiMismatch(Error):
    """EABI: the channel was made by an incompatible platform or ABI."""


class DecodeFailed(Error):
    """EDECODE: a message does not decode as the expected type (C++ codecs)."""


_BY_NAME: Dict[str, Type[Error]] = {
    "EPERM": OperationNotPermitted,
    "ENOENT": ChannelNotFound,
    "EINTR": Interrupted,
    "EBADF": BadHandle,
    "EAGAIN": NoMessage,
    "ENOMEM": OutOfMemory,
    "EACCES": PermissionDenied,
    "EBUSY": Busy,
    "EEXIST": ChannelExists,
    "EINVAL": InvalidArgument,
    "ENOSPC": NoSpace,
    "EROFS": ReadOnly,
    "ENAMETOOLONG": NameTooLong,
    "ENOSYS": NotSupported,
    "EMSGSIZE": MessageTooLarge,
    "ETIMEDOUT": Timeout,
    "ESTALE": StaleView,
    "ECANCELED": Cancelled,
    "EMFILE": TooManyOpenFiles,
    "ENFILE": TooManyOpenFilesInSystem,
    "EDEADLK": Deadlock,
    "EXDEV": OtherPidNamespace,
    "ECORRUPT": CorruptChannel,
    "EVERSION": VersionMismatch,
    "ENOTCHAN": NotAChannel,
    "ETRUNC": TruncatedChannel,
    "EMISMATCH": ChannelMismatch,
    "EOVERWRITTEN": Overwritten,
    "ELAPPED": Lapped,
    "EABI": AbiMismatch,
    "EDECODE": DecodeFailed,
}

#: Every error class by its (negative) code, from the C library's own table.
BY_CODE: Dict[int, Type[Error]] = {}
for _name, _code, _msg in _nerve.error_table():
    _cls = _BY_NAME[_name]  # a KeyError here means a code lacks a class
    _cls.code = _code
    _cls.code_name = _name
    BY_CODE[_code] = _cls
del _name, _code, _msg, _cls


def _make(code: int, message: str, name: Optional[str] = None) -> Error:
    """Build the exception for a C status (called by the native module)."""
    cls = BY_CODE.get(code)
    if cls is None and -1000 < code < 0:
        # Any other errno, passed through by the library as -errno.
        exc: Error = SystemCallFailed(-code, message, *([name] if name else []))
        exc.code = code
        exc.code_name = _errno.errorcode.get(-code, "UNKNOWN")
        return exc
    if cls is None:
        exc = Error(f"{message} (code {code})")
        exc.code = code
        return exc
    if issubclass(cls, OSError):
        if name is not None:
            return cls(-code, message, name)
        return cls(-code, message)
    if name is not None:
        return cls(f"{message}: {name!r}")
    return cls(message)
