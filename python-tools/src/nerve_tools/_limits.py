"""Bounds on what a remote peer may make nerve allocate (issue 27, item 4).

Wherever a peer's word sizes a local channel -- ``nerve bridge --import``
(the remote's description), ``nerve ros1 --from-ros`` (the first message),
``nerve ros2`` from ROS -- the channel is created only if it fits these
bounds, the same everywhere and configured the same way:

- ``--max-channel-size SIZE`` (env ``NERVE_MAX_CHANNEL_SIZE``, default 64M):
  neither the channel's data ring nor its index (32 bytes a slot) may be
  larger than SIZE. The data ring is what ``nerve create --size`` sets and
  ``nerve ls`` shows, so a peer may size a channel up to ``--size SIZE``.
- ``--max-import-total SIZE`` (env ``NERVE_MAX_IMPORT_TOTAL``, default
  512M): the files of all channels the tool created from peers' word,
  while they exist, together (header, metadata, index and data ring, as
  docs/design/0001-shm-layout.md lays them out: exactly the memory they
  commit in /dev/shm).

A flag overrides the environment, which overrides the default. SIZE is a
byte count in nerve's one size grammar, read by the C library
(:func:`nerve.parse_size`, nerve_size_parse): an optional K, M, G or T
suffix (powers of 1024; "KiB", "MB" and the like are read the same).
Over a bound, that channel alone is
refused before anything is allocated, the refusal is counted
(``refused_size``) and the caller prints one line; everything else goes on.
A local channel that already exists costs nothing (the tool allocates
nothing to use it) and is not charged.

This module is protocol-free on purpose. The bounds themselves are kept
by the C library's bridge kernel (nerve_budget; docs/bridge-kernel.md),
which every engine calls, so the rules, the messages, the size grammar,
the page size and the file layout are spelled once, there.
"""

from __future__ import annotations

import argparse
import os
import threading
from typing import Optional, Set

import nerve
import nerve.bridge

DEFAULT_MAX_CHANNEL = 64 << 20
DEFAULT_MAX_TOTAL = 512 << 20
ENV_MAX_CHANNEL = "NERVE_MAX_CHANNEL_SIZE"
ENV_MAX_TOTAL = "NERVE_MAX_IMPORT_TOTAL"

class LimitError(ValueError):
    """A malformed SIZE (flag or environment variable)."""


def parse_size(text: str) -> int:
    """``"64M"`` -> 67108864, by the C library's grammar
    (:func:`nerve.parse_size`). Raises LimitError with the reason."""
    try:
        return nerve.parse_size(str(text))
    except nerve.InvalidArgument as e:
        raise LimitError(f"bad size {text!r}: {e.detail}") from None


def fmt_size(n: int) -> str:
    """A byte count for people: 67108864 -> "64 MiB", 1000 -> "1000 bytes"."""
    for shift, unit in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{int(v)} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} bytes"


def channel_file_bytes(slots: int, data_size: int, meta_bytes: int = 0) -> int:
    """The size of a channel's file (what it commits in /dev/shm), from the
    C library (nerve_chan_file_size, :func:`nerve.file_size`), for
    ``meta_bytes`` of metadata (type + encoding + schema). The file's cost
    depends only on the metadata's total length, so a schema of that many
    bytes stands in for it. Raises nerve.InvalidArgument for a geometry
    nerve_chan_create() refuses."""
    return nerve.file_size(slots, data_size, schema=b"x" * meta_bytes)


def _resolve(flag: Optional[str], env: str, default: int, what: str) -> int:
    text = flag if flag is not None else os.environ.get(env)
    if text is None or text == "":
        return default
    try:
        n = parse_size(text)
    except LimitError as e:
        src = what if flag is not None else f"${env}"
        raise LimitError(f"{src}: {e}") from None
    if n <= 0:
        raise LimitError(f"{what if flag is not None else '$' + env} must be positive")
    return n


class ImportBudget:
    """The two bounds and what is charged against the total, kept by the
    C library's bridge kernel (nerve_budget, :class:`nerve.bridge.Budget`:
    the rules and messages are the same for every engine). Thread-safe.
    Keys are the local channel names."""

    def __init__(self, max_channel: int = DEFAULT_MAX_CHANNEL, max_total: int = DEFAULT_MAX_TOTAL) -> None:
        self.max_channel = max_channel
        self.max_total = max_total
        self._b = nerve.bridge.Budget(max_channel, max_total)
        self._lock = threading.Lock()
        self._names: Set[str] = set()  # for holds(); the bytes are the kernel's

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "ImportBudget":
        """From the flags of :func:`nerve_tools.options.add_limits`, else the environment,
        else the defaults. Raises LimitError with a message for the user."""
        return cls(_resolve(getattr(args, "max_channel_size", None), ENV_MAX_CHANNEL,
                            DEFAULT_MAX_CHANNEL, "--max-channel-size"),
                   _resolve(getattr(args, "max_import_total", None), ENV_MAX_TOTAL,
                            DEFAULT_MAX_TOTAL, "--max-import-total"))

    @property
    def charged(self) -> int:
        return int(self._b.stats()["used"])

    @property
    def refused(self) -> int:
        return int(self._b.stats()["refused"])

    def admit(self, name: str, slots: int, data_size: int, meta_bytes: int = 0,
              count: bool = True) -> Optional[str]:
        """Reserve the file of channel ``name`` (``slots`` index entries,
        a ``data_size`` data ring, ``meta_bytes`` of metadata: its cost
        depends only on the metadata's length, so a schema of that many
        bytes stands in for it) before it is created. Returns None
        (charged: call :meth:`release` once the channel is gone or its
        creation failed), or why not (counted in ``refused`` unless
        ``count`` is false, for a refusal already counted; nothing
        reserved)."""
        with self._lock:
            try:
                self._b.admit(name, slots, data_size, schema=b"x" * meta_bytes, count=count)
            except (nerve.Error, ValueError, OverflowError) as e:
                return str(getattr(e, "detail", e))
            self._names.add(name)
        return None

    def release(self, name: str) -> None:
        """The channel ``name`` is gone (or was never made): its bytes no
        longer count."""
        with self._lock:
            self._b.release(name)
            self._names.discard(name)

    def holds(self, name: str) -> bool:
        with self._lock:
            return name in self._names
