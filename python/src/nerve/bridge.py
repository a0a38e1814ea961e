"""The bridge kernel: what every nerve bridge does on the nerve side, from
the C library (include/nerve/bridge.h; the contract is
docs/bridge-kernel.md), so the Python engines (``nerve ros1``, ``nerve
bridge --ros2``) follow the same rules as the C and Rust ones.

>>> import nerve.bridge as nb
>>> nb.topic_of_channel("robot.imu-raw")
'/robot/imu_raw'
>>> nb.channel_of_topic("/robot/imu", domain=7)
'ros2-d7.robot.imu'
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Sequence, Tuple

from . import _nerve

#: Longest topic topic_of_channel() returns, in bytes.
TOPIC_MAX: int = _nerve.TOPIC_MAX
#: How often a ChannelDir without inotify looks, in milliseconds.
DIR_SCAN_MS: int = _nerve.DIR_SCAN_MS
#: Own sequence numbers an OwnGuard remembers per channel.
OWN_N: int = _nerve.OWN_N


def topic_of_channel(name: str, domain: int = 0) -> str:
    """The ROS topic of channel ``name``: ``robot.imu-raw`` ->
    ``/robot/imu_raw``; with ``domain`` > 0 a leading ``ros2-dDOMAIN.``
    (rmw_nerve's channels of that domain) is dropped first. Raises
    :class:`nerve.InvalidArgument` for a name that is not a channel name."""
    return str(_nerve.topic_of_channel(name, domain))


def channel_of_topic(topic: str, domain: int = 0) -> str:
    """The channel of ROS topic ``topic``: ``/robot/imu`` -> ``robot.imu``
    (``ros2-dDOMAIN.robot.imu`` with ``domain`` > 0). Raises
    :class:`nerve.InvalidArgument` when the result is not a channel name."""
    return str(_nerve.channel_of_topic(topic, domain))


def glob_check(glob: str) -> None:
    """Raise :class:`nerve.InvalidArgument` (with the reason) unless
    ``glob`` is a glob of channel names: name characters and ``*``, ``?``,
    ``[set]``, ``[!set]``."""
    _nerve.glob_check(glob)


def glob_match(glob: str, name: str) -> bool:
    """Whether channel ``name`` matches ``glob`` (checked as glob_check)."""
    return bool(_nerve.glob_match(glob, name))


class ChannelDir:
    """The channels of /dev/shm matching ``globs`` (all if empty) and their
    changes: :meth:`next` gives ``("created", name)`` for each one present
    now and each that appears, ``("removed", name)`` for each that goes (a
    replaced file: removed, then created), and None when nothing waits.
    :meth:`fileno` becomes readable when a change may wait (inotify, or a
    timer every DIR_SCAN_MS where inotify is unavailable or ``scan`` is
    True), so it fits select/poll/asyncio's add_reader."""

    def __init__(self, globs: Sequence[str] = (), scan: bool = False) -> None:
        self._d = _nerve.ChannelDir(list(globs), scan)

    def fileno(self) -> int:
        return int(self._d.fileno())

    @property
    def inotify(self) -> bool:
        """True if woken by inotify, False if by the periodic scan."""
        return bool(self._d.inotify)

    def next(self) -> Optional[Tuple[str, str]]:
        return self._d.next()

    def close(self) -> None:
        self._d.close()

    def __enter__(self) -> "ChannelDir":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Budget:
    """The import budget (nerve_budget): neither the data ring nor the
    index of one channel over ``max_channel`` bytes, and the files of all
    channels admitted (nerve.file_size) together not over ``max_total``.
    Thread-safe."""

    def __init__(self, max_channel: int, max_total: int) -> None:
        self._b = _nerve.Budget(max_channel, max_total)

    def admit(self, name: str, slots: int, size: int, type: Optional[str] = None,
              encoding: Optional[str] = None, schema: Optional[bytes] = None,
              count: bool = True) -> int:
        """Charge channel ``name`` before it is created (again: its charge
        is replaced) and return its file's bytes. Over a bound raises
        :class:`nerve.MessageTooLarge` (one channel) or
        :class:`nerve.NoSpace` (the total), the reason in the message,
        counted in ``stats()["refused"]`` unless ``count`` is False."""
        return int(self._b.admit(name, slots, size, type, encoding, schema, count))

    def release(self, name: str) -> bool:
        """Take back ``name``'s charge; False if it had none."""
        return bool(self._b.release(name))

    def stats(self) -> dict:
        """max_channel, max_total, used, channels, refused."""
        return dict(self._b.stats())


class OwnGuard:
    """The own-sequence guard of one channel (nerve_own): a bridge never
    exports a message it imported itself, and never drops one another
    writer put. The importer wraps each put in :meth:`put` (or calls
    :meth:`begin` before it and :meth:`commit` / :meth:`abort` after); the
    exporter asks :meth:`is_own` about every message it reads. A channel
    made again under the same name needs :meth:`reset` (or a new guard).
    Thread-safe."""

    def __init__(self) -> None:
        self._g = _nerve.OwnGuard()

    def begin(self) -> int:
        """Mark a put in flight before it starts; returns its token."""
        return int(self._g.begin())

    def commit(self, token: int, seq: int) -> None:
        """The put of ``token`` committed sequence number ``seq``."""
        self._g.end(token, seq)

    def abort(self, token: int) -> None:
        """The put of ``token`` committed nothing."""
        self._g.end(token, None)

    @contextmanager
    def put(self) -> Iterator[Callable[[int], None]]:
        """``with guard.put() as done: done(ch.put(data))``:
        begin before the block, commit with the number given to ``done``,
        abort when the block raises or never calls it."""
        token = self.begin()
        seqs: list = []
        try:
            yield seqs.append
        finally:
            if seqs:
                self.commit(token, seqs[-1])
            else:
                self.abort(token)

    def is_own(self, seq: int) -> bool:
        """Whether message ``seq`` of the channel was put through this
        guard. Waits (without the GIL, at most 100 ms) while a put of this
        process is between its commit and :meth:`commit`; at the bound it
        answers False and counts ``stats()["late"]``."""
        return bool(self._g.check(seq))

    def reset(self) -> None:
        """Forget every number recorded: the channel was made again under
        the same name (its numbers start again)."""
        self._g.reset()

    def stats(self) -> dict:
        """committed, waited (checks that waited for a put), late."""
        return dict(self._g.stats())


__all__ = [
    "Budget",
    "ChannelDir",
    "DIR_SCAN_MS",
    "OWN_N",
    "OwnGuard",
    "TOPIC_MAX",
    "channel_of_topic",
    "glob_check",
    "glob_match",
    "topic_of_channel",
]
