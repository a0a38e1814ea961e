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
from typing import Dict, List, Optional, Type

from . import _nerve


class Error(Exception):
    """Base class of every nerve error.

    ``str(exc)`` is the one line every binding and the ``nerve`` command
    print for a failure: ``NAME: CODE: detail`` (``CODE: detail`` without
    a channel), the detail being the C library's (``nerve_err_detail``):
    what was wrong, what would have been accepted, what to do."""

    #: The ``NERVE_E*`` code (negative), or 0 for the base class.
    code: int = 0
    #: The code's name without the prefix, e.g. ``"ECORRUPT"``.
    code_name: str = "UNKNOWN"
    #: The channel the failure concerns, or None.
    channel: Optional[str] = None
    #: The library's detail of the failure, or None.
    detail: Optional[str] = None

    def __str__(self) -> str:
        if self.detail is None:
            return super().__str__()
        head = ""
        if self.channel is not None:
            # A name that breaks the rule is quoted, as the C verbs do.
            bad = "channel name" in self.detail
            head = f"{self.channel!r}: " if bad else f"{self.channel}: "
        return f"{head}{self.code_name}: {self.detail}"


class SystemCallFailed(Error, OSError):
    """A system call failed with an errno nerve gives no meaning of its own
    (the code is -errno; ``exc.errno`` holds it)."""


# The one table of error classes: (class name, code name in the C library's
# table, Python bases besides Error, doc). Codes that equal an errno
# subclass OSError (or its closest built-in subclass); the others only
# Error. The classes, __all__ and BY_CODE are all made from it.
_TABLE = [
    ("OperationNotPermitted", "EPERM", (PermissionError,),
     "EPERM: the operation is not permitted."),
    ("ChannelNotFound", "ENOENT", (FileNotFoundError,),
     "ENOENT: no channel of that name."),
    ("Interrupted", "EINTR", (InterruptedError,),
     "EINTR: interrupted by a signal."),
    ("BadHandle", "EBADF", (OSError,),
     "EBADF: the handle is not usable."),
    ("NoMessage", "EAGAIN", (BlockingIOError,),
     "EAGAIN: no new message (get() returns None instead of raising)."),
    ("OutOfMemory", "ENOMEM", (OSError,),
     "ENOMEM: out of memory."),
    ("PermissionDenied", "EACCES", (PermissionError,),
     "EACCES: the file's permission bits forbid this access."),
    ("Busy", "EBUSY", (OSError,),
     "EBUSY: the handle is busy (a reservation is open, or another thread "
     "is waiting on it)."),
    ("ChannelExists", "EEXIST", (FileExistsError,),
     "EEXIST: the channel already exists (create without exist_ok)."),
    ("InvalidArgument", "EINVAL", (OSError, ValueError),
     "EINVAL: an argument (name, size, metadata, flags) is invalid."),
    ("NoSpace", "ENOSPC", (OSError,),
     "ENOSPC: no space left in /dev/shm to create the channel."),
    ("ReadOnly", "EROFS", (OSError,),
     "EROFS: the channel was opened read-only."),
    ("NameTooLong", "ENAMETOOLONG", (OSError, ValueError),
     "ENAMETOOLONG: the channel name is too long."),
    ("NotSupported", "ENOSYS", (OSError,),
     "ENOSYS: not supported by this kernel."),
    ("MessageTooLarge", "EMSGSIZE", (OSError,),
     "EMSGSIZE: the message is larger than the channel's data ring."),
    ("Timeout", "ETIMEDOUT", (TimeoutError,),
     "ETIMEDOUT: the wait reached its timeout."),
    ("StaleView", "ESTALE", (OSError,),
     "ESTALE: a writer overwrote the message while it was being viewed; "
     "whatever was read through the view must be discarded."),
    ("Cancelled", "ECANCELED", (OSError,),
     "ECANCELED: the wait was cancelled with Channel.cancel()."),
    ("TooManyOpenFiles", "EMFILE", (OSError,),
     "EMFILE: this process has used up its file descriptors (each open "
     "channel holds one)."),
    ("TooManyOpenFilesInSystem", "ENFILE", (OSError,),
     "ENFILE: the system's table of open files is full."),
    ("Deadlock", "EDEADLK", (OSError,),
     "EDEADLK: this thread already holds the channel's writer lock (it has "
     "a reservation open on another handle of the channel)."),
    ("OtherPidNamespace", "EXDEV", (OSError,),
     "EXDEV: a writer of another PID namespace has the channel open; writers "
     "that have one channel open at once must share one (readers may be "
     "anywhere)."),
    ("CorruptChannel", "ECORRUPT", (),
     "ECORRUPT: the channel file is inconsistent."),
    ("VersionMismatch", "EVERSION", (),
     "EVERSION: the channel file has an unsupported layout version."),
    ("NotAChannel", "ENOTCHAN", (),
     "ENOTCHAN: the file is not a nerve channel."),
    ("TruncatedChannel", "ETRUNC", (),
     "ETRUNC: the channel file is shorter than its header says."),
    ("ChannelMismatch", "EMISMATCH", (),
     "EMISMATCH: the channel exists with another geometry or metadata."),
    ("Overwritten", "EOVERWRITTEN", (),
     "EOVERWRITTEN: the requested message was already overwritten."),
    ("Lapped", "ELAPPED", (),
     "ELAPPED: writers overwrote the message on every read attempt."),
    ("AbiMismatch", "EABI", (),
     "EABI: the channel was made by an incompatible platform or ABI."),
    ("DecodeFailed", "EDECODE", (),
     "EDECODE: a message does not decode as the expected type (C++ codecs, "
     "nerve_tools.ros2.types)."),
    ("Superseded", "ESUPERSEDED", (),
     "ESUPERSEDED: a writer grew the channel: its name now names a larger "
     "successor holding every message still present; Channel.follow() "
     "moves the handle there, keeping its place."),
]

#: Every error class by its (negative) code, from the C library's own table.
BY_CODE: Dict[int, Type[Error]] = {}


def _build() -> List[str]:
    codes = {name: code for name, code, _msg in _nerve.error_table()}
    names = ["Error"]
    for cls_name, code_name, bases, doc in _TABLE:
        code = codes.pop(code_name)  # a KeyError: a class for an unknown code
        cls = type(cls_name, (Error, *bases), {
            "__doc__": doc,
            "__module__": __name__,
            "__qualname__": cls_name,
            "code": code,
            "code_name": code_name,
        })
        globals()[cls_name] = cls
        BY_CODE[code] = cls
        names.append(cls_name)
    if codes:  # the C library has a code without a class here
        raise ImportError(f"nerve: no error class for {sorted(codes)}")
    return names + ["SystemCallFailed"]


__all__ = _build()

def _make(code: int, message: str, name: Optional[str] = None) -> Error:
    """Build the exception for a C status (called by the native module)."""
    exc = _make_plain(code, message, name)
    exc.channel = name
    exc.detail = message
    return exc


def _make_plain(code: int, message: str, name: Optional[str] = None) -> Error:
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
