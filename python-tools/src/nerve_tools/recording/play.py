"""nerve play: replay an MCAP file into channels with its original timing.

Messages are put in log-time order, each at its offset from the first
selected message divided by ``--rate`` (absolute deadlines, so errors do not
accumulate). A channel that does not exist is created: with the geometry and
metadata ``nerve record`` kept in the file, or, for other MCAP files (a
rosbag2 recording, say), sized for the largest message of its topic with the
type, encoding and schema of the MCAP channel. Topics are mapped to channel
names by ``_common.channel_name`` ("/robot/imu" -> "robot.imu") unless
renamed with ``--rename``.
"""

from __future__ import annotations

import argparse
import fnmatch
import signal
import sys
import time
from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Sequence, Tuple

from mcap.reader import make_reader
from mcap.records import Channel as McapChannel
from mcap.records import Message as McapMessage
from mcap.records import Schema as McapSchema

import nerve

from .. import options
from .._common import (
    META_DATA_SIZE,
    META_ENCODING,
    META_NAME,
    META_SLOTS,
    META_TYPE,
    chan_error,
    channel_name,
    die,
    from_mcap,
    plural,
    sigterm_as_interrupt,
)

PROG = "nerve play"
MIN_DATA = 64 << 10


@dataclass
class Target:
    """Where one MCAP channel's messages go."""

    topic: str
    name: str
    slots: int
    data_size: int
    type: Optional[str]
    encoding: Optional[str]
    schema: Optional[bytes]
    largest: int = 0
    count: int = 0
    ch: Optional[nerve.Channel] = None
    created: bool = False


def _pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


class Player:
    """Replays MCAP files (one, or the parts of a split recording, in order)
    into channels. ``select``: glob patterns on topics (all when empty);
    ``rename``: topic -> channel name; ``start``/``end``: seconds from the
    first message of the first file."""

    def __init__(
        self,
        paths: Sequence[str],
        select: Sequence[str] = (),
        rename: Optional[Dict[str, str]] = None,
        start: Optional[float] = None,
        end: Optional[float] = None,
    ) -> None:
        self.paths = list(paths)
        self.select = list(select)
        self.rename = dict(rename or {})
        self.targets: Dict[str, Target] = {}
        self.first_ns: Optional[int] = None
        self._scan(start, end)

    def _wanted(self, topic: str) -> bool:
        return not self.select or any(fnmatch.fnmatchcase(topic, p) for p in self.select)

    def _messages(self) -> Iterator[Tuple[Optional[McapSchema], McapChannel, McapMessage]]:
        for path in self.paths:
            with open(path, "rb") as f:
                reader = make_reader(f)
                yield from reader.iter_messages(log_time_order=True)

    def _scan(self, start: Optional[float], end: Optional[float]) -> None:
        """One pass over the files: the time window, every topic's largest
        message and count, the channels to create."""
        t_first = None
        for _schema, _chan, msg in self._messages():
            t_first = msg.log_time if t_first is None else min(t_first, msg.log_time)
        self.first_ns = t_first
        self.start_ns = None if start is None or t_first is None else t_first + int(start * 1e9)
        self.end_ns = None if end is None or t_first is None else t_first + int(end * 1e9)
        self.total = 0
        self.played = 0  # messages put by play(), counted as they go
        for schema, chan, msg in self._messages():
            if not self._wanted(chan.topic) or not self._in_window(msg.log_time):
                continue
            tgt = self.targets.get(chan.topic)
            if tgt is None:
                tgt = self.targets[chan.topic] = self._target(schema, chan)
            tgt.largest = max(tgt.largest, len(msg.data))
            tgt.count += 1
            self.total += 1
        names: Dict[str, str] = {}
        for t in self.targets.values():
            if t.name in names:
                raise ValueError(f"topics {names[t.name]!r} and {t.topic!r} both map to "
                                 f"channel {t.name!r}; use --rename")
            names[t.name] = t.topic

    def _in_window(self, t: int) -> bool:
        return (self.start_ns is None or t >= self.start_ns) and (self.end_ns is None or t <= self.end_ns)

    def _target(self, schema: Optional[McapSchema], chan: McapChannel) -> Target:
        md = chan.metadata or {}
        name = self.rename.get(chan.topic) or md.get(META_NAME) or channel_name(chan.topic)
        if META_ENCODING in md:  # written by nerve record: exactly as it was
            typ = md.get(META_TYPE) or None
            enc = md.get(META_ENCODING) or None
        else:
            typ = schema.name if schema is not None and schema.name else None
            enc = from_mcap(chan.message_encoding)
        sch = schema.data if schema is not None and schema.data else None
        slots = int(md.get(META_SLOTS, 0) or 0) or 1024
        data_size = int(md.get(META_DATA_SIZE, 0) or 0)
        return Target(chan.topic, name, slots, data_size, typ, enc, sch)

    def open(self) -> None:
        """Open (or create) every target channel for writing. A target that
        cannot be opened (not a channel, corrupt, no permission) is
        reported and dropped, so that the other topics still play; it is an
        error only when no target is left."""
        for topic, t in list(self.targets.items()):
            try:
                self._open_target(t)
            except nerve.Error as e:
                print(f"{PROG}: {chan_error(t.name, e)}; not playing {topic!r}", file=sys.stderr)
                self.total -= t.count
                del self.targets[topic]
        if not self.targets:
            raise ValueError("no channel to play into")

    def _open_target(self, t: Target) -> None:
        need = max(t.data_size, 2 * _pow2(max(t.largest, 1)), MIN_DATA)
        try:
            ch = nerve.open(t.name, write=True)
        except nerve.ChannelNotFound:
            try:
                nerve.create(t.name, slots=t.slots, size=need, type=t.type,
                             encoding=t.encoding, schema=t.schema).close()
                t.created = True
            except nerve.ChannelExists:  # created meanwhile by someone else
                pass
            ch = nerve.open(t.name, write=True)
        size = ch.stat().data_size
        if size < t.largest:
            # An existing channel too small for the recording grows (a larger
            # successor under its name; its readers follow it).
            try:
                ch.grow(need)
            except nerve.Error:
                ch.close()
                raise
            print(f"{PROG}: grew channel {t.name} from {size} to {ch.stat().data_size} bytes "
                  f"for its largest message ({t.largest} bytes)", file=sys.stderr)
        t.ch = ch

    def close(self) -> None:
        for t in self.targets.values():
            if t.ch is not None:
                t.ch.close()
                t.ch = None

    def play(self, rate: float = 1.0, fast: bool = False, progress=None) -> int:
        """Put every selected message once; returns how many. ``rate``
        scales time (2: twice as fast); ``fast`` ignores timing.
        ``progress(n)`` is called after each message."""
        if rate <= 0:
            raise ValueError("rate must be positive")
        t0_wall = time.monotonic_ns()
        t0_log: Optional[int] = None
        n = 0  # this pass; self.played counts every pass, interrupted ones too
        for _schema, chan, msg in self._messages():
            t = self.targets.get(chan.topic)
            if t is None or not self._in_window(msg.log_time):
                continue
            if t0_log is None:
                t0_log = msg.log_time
            if not fast:
                due = t0_wall + int((msg.log_time - t0_log) / rate)
                while True:
                    left = due - time.monotonic_ns()
                    if left <= 0:
                        break
                    time.sleep(left / 1e9)
            assert t.ch is not None
            # Ctrl-C (or SIGTERM) is held off while a message is put and
            # counted, so an interrupted pass counts exactly what it put.
            held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
            try:
                try:
                    t.ch.put(msg.data)
                except nerve.Superseded:  # another writer grew it meanwhile
                    t.ch.follow_successor()
                    t.ch.put(msg.data)
                n += 1
                self.played += 1
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
            if progress is not None:
                progress(n)
        return n


#: The signals that stop play (Ctrl-C, and SIGTERM by sigterm_as_interrupt).
_STOPS = {signal.SIGINT, signal.SIGTERM}


def _rename(text: str) -> Tuple[str, str]:
    old, sep, new = text.partition("=")
    if not sep or not old or not new:
        raise argparse.ArgumentTypeError(f"expected TOPIC=CHANNEL, not {text!r}")
    return old, new


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Replay MCAP files into channels with their original timing.")
    p.add_argument("files", nargs="+", metavar="FILE.mcap",
                   help="an MCAP file; several are played one after the other (the parts of a split recording)")
    p.add_argument("-c", "--channel", action="append", default=[], metavar="TOPIC",
                   help="play only this topic (glob patterns allowed; repeatable)")
    p.add_argument("-r", "--rename", action="append", type=_rename, default=[], metavar="TOPIC=CHANNEL",
                   help="put the messages of TOPIC into CHANNEL (repeatable)")
    p.add_argument("--rate", type=float, default=1.0, help="time factor: 2 plays twice as fast (default 1)")
    p.add_argument("--fast", action="store_true", help="ignore timing: put messages back to back")
    p.add_argument("--loop", action="store_true", help="start again at the end, until Ctrl-C")
    p.add_argument("--start", type=float, metavar="SEC", help="skip the first SEC seconds of the recording")
    p.add_argument("--end", type=float, metavar="SEC", help="stop SEC seconds after the recording's start")
    p.add_argument("--list", action="store_true", help="print the topics and their target channels, play nothing")
    options.add_quiet(p, "no progress bar and no summary")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.rate <= 0:
        parser().error("--rate must be positive")
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    sigterm_as_interrupt()
    try:
        player = Player(args.files, select=args.channel, rename=dict(args.rename),
                        start=args.start, end=args.end)
    except (OSError, ValueError) as e:
        die(PROG, str(e))
    except Exception as e:  # the mcap reader's errors for a damaged file
        die(PROG, f"cannot read {' '.join(args.files)}: {type(e).__name__}: {e}")
    if args.list:
        for t in player.targets.values():
            print(f"{t.topic}\t{t.name}\t{plural(t.count, 'message')}\t{t.type or '-'}\t{t.encoding or '-'}")
        return 0
    if not player.targets:
        die(PROG, "no message to play (check --channel, --start, --end)")
    try:
        player.open()
    except (nerve.Error, ValueError) as e:
        player.close()
        die(PROG, str(e))
    loops = 0
    interrupted = False
    t0 = time.monotonic()
    progress = None
    if console.is_terminal and not args.quiet:
        progress = Progress(TextColumn("[bold]play[/bold]"), BarColumn(), MofNCompleteColumn(),
                            TimeRemainingColumn(), console=console, transient=True)
        progress.start()
    try:
        while True:
            task = progress.add_task("play", total=player.total) if progress else None
            cb = (lambda n, task=task: progress.update(task, completed=n)) if progress else None
            player.play(rate=args.rate, fast=args.fast, progress=cb)
            loops += 1
            if progress is not None:
                progress.remove_task(task)
            if not args.loop:
                break
    except KeyboardInterrupt:
        interrupted = True
    except nerve.Error as e:
        die(PROG, str(e))
    finally:
        if progress is not None:
            progress.stop()
        player.close()
    if not args.quiet:
        made = [t.name for t in player.targets.values() if t.created]
        # What was played, also when Ctrl-C ended a pass part-way.
        n, k = player.played, len(player.targets)
        print(f"{PROG}: {plural(n, 'message')} into {plural(k, 'channel')} in "
              f"{time.monotonic() - t0:.2f} s ({plural(loops, 'pass', 'passes')}"
              + (", interrupted" if interrupted else "") + ")"
              + (f"; created {', '.join(made)}" if made else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
