"""nerve record: write every message of some channels into an MCAP file.

Each nerve channel becomes one MCAP channel (topic = channel name) with the
schema and message encoding of the channel's metadata (see
``_common.to_mcap``); its type, encoding and geometry are kept in the MCAP
channel's metadata so that ``nerve play`` can recreate it. Messages are read
in next-unseen order, so none is skipped unless a writer overran the ring
faster than the recorder read it; those are counted (exactly, from
``Message.missed``) and reported, per channel, on the status line, at the
end, and in the file (metadata record ``nerve.missed``).

Log time and publish time of a message are its commit time converted to
wall-clock time with one offset taken at the start of the recording
(metadata record ``nerve.recording`` holds it), so the relative timing of
the recording is the channel's, to the nanosecond. The MCAP sequence field
holds the nerve sequence number (modulo 2^32).

Which messages: of a channel that exists when the recording starts, those
committed after it started (``--from-start``: also those still in its
ring); of a channel that appears later (a name given but not yet created,
or one matching ``--all``/a glob pattern), all of them from its first.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from mcap.writer import CompressionType, Writer

import nerve

from .. import __version__, options
from .._common import (
    META_DATA_SIZE,
    META_ENCODING,
    META_NAME,
    META_SLOTS,
    META_TYPE,
    chan_error,
    die,
    human_bytes,
    is_pattern,
    plural,
    realtime_offset_ns,
    select,
    to_mcap,
)

PROG = "nerve record"
LIBRARY = f"nerve-tools {__version__}"
RESCAN_S = 0.5  # how often new channels are looked for


@dataclass
class ChannelStats:
    """What the recorder did with one channel."""

    messages: int = 0
    bytes: int = 0
    missed: int = 0
    first_ns: int = 0  # commit time of the first recorded message
    last_ns: int = 0   # and of the last

    def rate(self) -> float:
        """Messages per second between the first and last recorded."""
        if self.messages < 2 or self.last_ns <= self.first_ns:
            return 0.0
        return (self.messages - 1) * 1e9 / (self.last_ns - self.first_ns)


@dataclass
class _Source:
    ch: nerve.Channel
    created: int                 # creation stamp, to notice a re-created channel
    mcap_id: Optional[int] = None  # channel id in the current file


@dataclass
class Recorder:
    """Records channels into an MCAP file (or a series of files when split).

    Use: ``rec = Recorder(path, names)``, then repeatedly ``rec.wait()`` and
    ``rec.poll()``, and ``rec.close()`` to finish the file (summary and
    index). ``names`` are channel names or glob patterns; ``all_channels``
    records every channel (and those that appear later)."""

    path: str
    names: Sequence[str] = ()
    all_channels: bool = False
    from_start: bool = False
    split_bytes: Optional[int] = None
    split_seconds: Optional[float] = None
    compression: str = "zstd"
    chunk_size: int = 1 << 20
    stats: Dict[str, ChannelStats] = field(default_factory=dict)
    files: List[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.names and not self.all_channels:
            raise ValueError("no channel to record (give names, patterns or --all)")
        self._exact = [n for n in self.names if not is_pattern(n)]
        self._patterns = [n for n in self.names if is_pattern(n)]
        self._sources: Dict[str, _Source] = {}
        # Channels dropped after an error, by creation time (a channel
        # created again under the name is recorded again).
        self._dropped: Dict[str, int] = {}
        self._offset = realtime_offset_ns()
        self._started_ns = nerve.now_ns()
        self._file_started_ns = self._started_ns
        self._writer: Optional[Writer] = None
        self._stream = None
        self._file_missed: Dict[str, int] = {}
        self._index = 0
        self._last_scan = 0.0
        self._open_file()
        self.scan(initial=True)

    # -- channels ---------------------------------------------------------

    @property
    def channels(self) -> List[str]:
        """Names of the channels being recorded."""
        return sorted(self._sources)

    @property
    def waiting_for(self) -> List[str]:
        """Named channels that do not exist (yet)."""
        return [n for n in self._exact if n not in self._sources]

    def scan(self, initial: bool = False) -> None:
        """Open channels that appeared (and re-open re-created ones)."""
        self._last_scan = time.monotonic()
        listing = {i.name: i for i in nerve.list_channels()}
        wanted = set(n for n in self._exact if n in listing)
        if self.all_channels or self._patterns:
            wanted.update(select(self._patterns, listing.values()))
        for name in sorted(wanted):
            info = listing[name]
            src = self._sources.get(name)
            if info.error is not None or (src is not None and src.created == info.created_ns):
                continue
            if self._dropped.get(name) == info.created_ns:
                continue
            if src is not None:  # removed and created again: a new channel
                src.ch.close()
                del self._sources[name]
            self._add(name, initial)

    def _add(self, name: str, initial: bool) -> bool:
        try:
            ch = nerve.open(name)
        except nerve.ChannelNotFound:
            return False
        except nerve.Error as e:
            print(f"{PROG}: {chan_error(name, e)}", file=sys.stderr)
            return False
        try:
            st = ch.stat()
        except nerve.Error as e:
            ch.close()
            print(f"{PROG}: {chan_error(name, e)}", file=sys.stderr)
            return False
        if initial and not self.from_start:
            ch.seek(st.head_seq)
        elif initial and st.tail_seq > 1:
            # From the oldest message present: those gone before the
            # recording started are not missed by it.
            ch.seek(st.tail_seq - 1)
        # A channel that appeared later is read from sequence 1: any message
        # already overwritten counts as missed.
        self._sources[name] = _Source(ch, st.created_ns)
        self.stats.setdefault(name, ChannelStats())
        return True

    def _look_for_missing(self) -> None:
        """Named channels not there yet are tried at every poll (an open of a
        missing file is cheap), so that a channel created just before its
        first messages is seen as soon as possible."""
        for name in self.waiting_for:
            self._add(name, initial=False)

    # -- the file ---------------------------------------------------------

    def _file_name(self) -> str:
        if not (self.split_bytes or self.split_seconds):
            return self.path
        root, ext = os.path.splitext(self.path)
        return f"{root}_{self._index:03d}{ext or '.mcap'}"

    def _open_file(self) -> None:
        name = self._file_name()
        self._stream = open(name, "wb")
        comp = {"zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4,
                "none": CompressionType.NONE}[self.compression]
        self._writer = Writer(self._stream, chunk_size=self.chunk_size,
                              compression=comp, enable_data_crcs=True)
        self._writer.start(profile="", library=LIBRARY)
        self._file_started_ns = nerve.now_ns()
        self._file_bytes = 0  # message records added, compressed or not
        self._file_missed = {}
        self.files.append(name)
        for src in self._sources.values():
            src.mcap_id = None

    def _finish_file(self) -> None:
        assert self._writer is not None and self._stream is not None
        self._writer.add_metadata("nerve.recording", {
            "clock_offset_ns": str(self._offset),
            "started_monotonic_ns": str(self._file_started_ns),
            "recorder": LIBRARY,
            "host": os.uname().nodename,
        })
        self._writer.add_metadata("nerve.missed", {
            name: str(self._file_missed.get(name, 0)) for name in sorted(self._sources)})
        self._writer.finish()
        self._stream.close()
        self._writer = None
        self._stream = None

    def _register(self, name: str, src: _Source) -> int:
        assert self._writer is not None
        meta = src.ch.metadata
        enc = to_mcap(meta)
        schema_id = 0
        if enc.schema_encoding:
            schema_id = self._writer.register_schema(enc.schema_name, enc.schema_encoding, enc.schema)
        st = src.ch.stat()
        src.mcap_id = self._writer.register_channel(
            topic=name, message_encoding=enc.message_encoding, schema_id=schema_id,
            metadata={META_NAME: name, META_TYPE: meta.type or "",
                      META_ENCODING: meta.encoding or "",
                      META_SLOTS: str(st.slots), META_DATA_SIZE: str(st.data_size)})
        return src.mcap_id

    def _maybe_split(self) -> None:
        assert self._stream is not None
        if self._file_bytes == 0:
            return  # never leave a file empty
        # Chunks reach the stream only when full (or at the end), so the
        # size of the file so far is estimated from the messages added to
        # it: at most the uncompressed size, which is what a size limit on
        # the disk must assume anyway.
        if self.split_bytes and max(self._stream.tell(), self._file_bytes) >= self.split_bytes:
            pass
        elif self.split_seconds and (nerve.now_ns() - self._file_started_ns) >= self.split_seconds * 1e9:
            pass
        else:
            return
        self._finish_file()
        self._index += 1
        self._open_file()

    # -- recording --------------------------------------------------------

    def poll(self, limit: Optional[int] = None) -> int:
        """Record the messages that arrived, at most ``limit`` in all;
        returns how many."""
        if time.monotonic() - self._last_scan >= RESCAN_S:
            self.scan()
        elif self._exact:
            self._look_for_missing()
        n = 0
        for name, src in sorted(self._sources.items()):
            try:
                n += self._drain(name, src, None if limit is None else limit - n)
            except nerve.Error as e:
                # A channel that turned bad (rewritten by a hostile or buggy
                # writer) is dropped; the others go on being recorded.
                print(f"{PROG}: {name}: {e}; no longer recorded", file=sys.stderr)
                src.ch.close()
                del self._sources[name]
                self._dropped[name] = src.created
        return n

    def _drain(self, name: str, src: _Source, limit: Optional[int]) -> int:
        n = 0
        st = self.stats[name]
        while limit is None or n < limit:
            try:
                msg = src.ch.get()
            except nerve.Superseded:  # a writer grew it: on to the successor
                src.ch.follow_successor()
                continue
            if msg is None:
                break
            if self.split_bytes or self.split_seconds:
                self._maybe_split()
            assert self._writer is not None
            mcap_id = src.mcap_id if src.mcap_id is not None else self._register(name, src)
            t = msg.time_ns + self._offset
            self._writer.add_message(mcap_id, log_time=t, data=msg.data,
                                     publish_time=t, sequence=msg.seq & 0xFFFFFFFF)
            if msg.missed:
                st.missed += msg.missed
                self._file_missed[name] = self._file_missed.get(name, 0) + msg.missed
            if st.messages == 0:
                st.first_ns = msg.time_ns
            st.messages += 1
            st.bytes += msg.size
            self._file_bytes += msg.size + 31  # + the Message record's fields
            st.last_ns = msg.time_ns
            n += 1
        return n

    def wait(self, timeout: float = 0.2) -> None:
        """Wait until a recorded channel has a message, ``timeout`` seconds
        at most (so that new channels are found meanwhile)."""
        chans = [s.ch for s in self._sources.values()]
        if self.waiting_for:
            timeout = min(timeout, 0.02)
        if not chans:
            time.sleep(timeout)
            return
        if len(chans) <= nerve.WAIT_MAX:
            nerve.wait_any(chans, timeout)
        else:  # more than one wait_any can take: wait on a part, poll all
            nerve.wait_any(chans[: nerve.WAIT_MAX], min(timeout, 0.01))

    @property
    def total(self) -> ChannelStats:
        t = ChannelStats()
        for s in self.stats.values():
            t.messages += s.messages
            t.bytes += s.bytes
            t.missed += s.missed
        return t

    def close(self) -> None:
        """Finish the file: summary, index, statistics."""
        if self._writer is not None:
            self._finish_file()
        for src in self._sources.values():
            src.ch.close()
        self._sources.clear()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- command line -----------------------------------------------------------


def _positive(text: str) -> float:
    v = float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return v


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Record channels into an MCAP file: every message, with its "
        "schema and encoding, until Ctrl-C.",
        epilog="Channels that exist at the start are recorded from their next "
        "message; channels that appear later, from their first. Messages a "
        "writer overwrote before the recorder read them are counted as missed.")
    options.add_patterns(p, "none; --all for every channel")
    p.add_argument("-o", "--output", required=True, metavar="FILE.mcap")
    p.add_argument("-a", "--all", action="store_true", help="every channel, also those created later")
    p.add_argument("--from-start", action="store_true",
                   help="also record the messages already in the rings")
    p.add_argument("--split-size", type=options.positive_size, metavar="BYTES",
                   help="start a new file when one reaches BYTES (e.g. 512M); files are FILE_000.mcap, ...")
    p.add_argument("--split-duration", type=_positive, metavar="SEC",
                   help="start a new file every SEC seconds")
    p.add_argument("--compression", choices=("zstd", "lz4", "none"), default="zstd")
    options.add_count(p, "stop after N messages")
    p.add_argument("--duration", type=_positive, metavar="SEC", help="stop after SEC seconds")
    options.add_quiet(p, "no status line and no summary")
    return p


def _table(rec: Recorder, elapsed: float):  # -> rich Table
    from rich.table import Table

    t = Table(box=None, pad_edge=False)
    for col in ("channel", "messages", "bytes", "rate Hz", "missed"):
        t.add_column(col, justify="left" if col == "channel" else "right")
    for name in sorted(rec.stats):
        s = rec.stats[name]
        t.add_row(name, str(s.messages), human_bytes(s.bytes), f"{s.rate():.1f}",
                  f"[red]{s.missed}[/red]" if s.missed else "0")
    tot = rec.total
    t.add_row(f"[bold]{plural(len(rec.stats), 'channel')}, {elapsed:.1f} s[/bold]", str(tot.messages),
              human_bytes(tot.bytes), "", str(tot.missed))
    return t


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    if not args.patterns and not args.all:
        parser().error("give CHANNEL names or patterns, or --all")
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True)
    # Ctrl-C and SIGTERM only set a flag: an exception in the middle of
    # writing a record would leave the file without its summary. A wait in
    # progress ends within its timeout (0.25 s), then the loop stops.
    stop = []
    signal.signal(signal.SIGINT, lambda s, f: stop.append(s))
    signal.signal(signal.SIGTERM, lambda s, f: stop.append(s))
    try:
        rec = Recorder(args.output, args.patterns, all_channels=args.all,
                       from_start=args.from_start, split_bytes=args.split_size,
                       split_seconds=args.split_duration, compression=args.compression)
    except OSError as e:
        die(PROG, str(e))
    # The ready line: everything committed from now on is recorded.
    what = ", ".join(rec.channels) or "no channel yet"
    waiting = f" (waiting for {', '.join(rec.waiting_for)})" if rec.waiting_for else ""
    print(f"{PROG}: recording {what}{waiting} to {rec.files[0]}; Ctrl-C to stop",
          file=sys.stderr, flush=True)
    t0 = time.monotonic()
    live = None
    if console.is_terminal and not args.quiet:
        live = Live(_table(rec, 0), console=console, refresh_per_second=4, transient=True)
        live.start()
    try:
        while not stop:
            left = None if args.count is None else args.count - rec.total.messages
            if left is not None and left <= 0:
                break
            elapsed = time.monotonic() - t0
            if args.duration is not None and elapsed >= args.duration:
                break
            timeout = 0.25 if args.duration is None else min(0.25, args.duration - elapsed)
            rec.wait(max(timeout, 0.0))
            rec.poll(limit=left)
            if live is not None:
                live.update(_table(rec, elapsed))
        if stop:
            # Everything committed before the signal is in the file.
            left = None if args.count is None else args.count - rec.total.messages
            rec.poll(limit=left)
    finally:
        if live is not None:
            live.stop()
        rec.close()
    if not args.quiet:
        console.print(_table(rec, time.monotonic() - t0))
    tot = rec.total
    missed = ", ".join(f"{n}: {s.missed}" for n, s in sorted(rec.stats.items()) if s.missed)
    print(f"{PROG}: {plural(tot.messages, 'message')}, {plural(tot.bytes, 'byte')}, {tot.missed} missed"
          + (f" ({missed})" if missed else "") + f" -> {', '.join(rec.files)}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
