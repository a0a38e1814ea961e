"""nerve._nerve.mcap_messages and mcap_messages_to_file: a channel's
messages copied out as MCAP Message records (python/src/_nerve_mcap.cpp),
the hot loop of `nerve blackbox`'s dump, into a buffer or straight into a
file (each payload by nerve_chan_view_write: the kernel copies it): exact
records and index, the window's end, chunk limits, exact missed counts
(overwritten before the copy, and while it ran), what is never delivered
(an uncommitted reservation), errors. Each test runs both copies."""

from __future__ import annotations

import os
import struct
import subprocess
import time
from array import array
from typing import List, Tuple

import pytest

import nerve
from nerve import _nerve

HEAD = struct.Struct("<BQHIQQ")  # opcode, length, channel, sequence, log, publish


def records(run: _nerve.McapRun, base: int = 0) -> List[Tuple[int, int, int, int, bytes]]:
    """(channel id, sequence, log time, offset in data, payload) of each
    record in run.data, checked against run.index (whose offsets start at
    the call's chunk_offset, base)."""
    out, at, data = [], 0, run.data
    while at < len(data):
        op, length, cid, seq, log, pub = HEAD.unpack_from(data, at)
        assert op == 0x05 and log == pub
        n = length - (HEAD.size - 9)
        out.append((cid, seq, log, at, data[at + HEAD.size: at + HEAD.size + n]))
        at += HEAD.size + n
    assert at == len(data)
    idx = array("Q", run.index)
    assert list(idx) == [v for r in out for v in (r[2], base + r[3])]
    assert run.count == len(out)
    return out


class FileRun:
    """A run of mcap_messages_to_file with the bytes it wrote read back
    as ``data``, so records() checks both copies alike."""

    def __init__(self, run: _nerve.McapRun, data: bytes) -> None:
        for k in ("index", "count", "missed", "first_ns", "last_ns", "next_seq", "stop", "size"):
            setattr(self, k, getattr(run, k))
        self.data = data


def copy(how: str, r: nerve.Channel, cid: int, seq: int, end: int, chunk_offset: int = 0, **kw):
    """One call of the copy ``how`` ("buffer": mcap_messages; "file":
    mcap_messages_to_file into a file whose position is past some other
    bytes, as a chunk's records are; its index offsets start there, so
    chunk_offset does not apply)."""
    if how == "buffer":
        run = _nerve.mcap_messages(r, cid, seq, end, chunk_offset=chunk_offset, **kw)
        assert run.size == len(run.data)
        return run
    fd = os.memfd_create("mcap")
    try:
        os.write(fd, b"head")
        run = _nerve.mcap_messages_to_file(r, fd, cid, seq, end, **kw)
        assert run.data == b"" and os.lseek(fd, 0, os.SEEK_CUR) == 4 + run.size
        return FileRun(run, os.pread(fd, run.size, 4))
    finally:
        os.close(fd)


HOW = pytest.mark.parametrize("how", ["buffer", "file"])


def payload(seq: int, size: int) -> bytes:
    """A message that says its sequence number in every 8 bytes."""
    return (b"%08d" % seq * (size // 8 + 1))[:size]


@HOW
def test_exact_records_and_index(name, how) -> None:
    name = name("mcap")
    sizes = [0, 1, 255, 200_000, 7, 64 << 10, 3]  # a fresh handle grows its buffer
    with nerve.create(name, slots=16, size=1 << 20) as w, nerve.open(name) as r:
        msgs = [w.put(payload(i + 1, s)) for i, s in enumerate(sizes)]
        times = [r.get(seq=s).time_ns for s in msgs]
        run = copy(how, r, 7, 1, times[-1], time_offset=1000, chunk_offset=50)
        recs = records(run, 50 if how == "buffer" else 0)
        assert [(c, s, t) for c, s, t, _, _ in recs] == [(7, s, t + 1000) for s, t in zip(msgs, times)]
        assert [p for *_, p in recs] == [payload(s, n) for s, n in zip(msgs, sizes)]
        assert (run.missed, run.first_ns, run.last_ns) == (0, times[0], times[-1])
        assert (run.next_seq, run.stop) == (8, "caught_up")


@HOW
def test_window_end_and_resume(name, how) -> None:
    name = name("mcap")
    with nerve.create(name, slots=16, size=1 << 16) as w, nerve.open(name) as r:
        for i in range(6):
            w.put(payload(i + 1, 40))
        t3 = r.get(seq=3).time_ns
        run = copy(how, r, 1, 2, t3)
        assert [s for _, s, *_ in records(run)] == [2, 3]
        # Message 4 was read but is past the end: the next call starts at it.
        assert (run.stop, run.next_seq) == ("end", 4)
        run = copy(how, r, 1, run.next_seq, 2**62)
        assert [s for _, s, *_ in records(run)] == [4, 5, 6]
        assert (run.stop, run.next_seq) == ("caught_up", 7)
        # Nothing newer yet: nothing copied, the cursor stays.
        run = copy(how, r, 1, 7, 2**62)
        assert (run.count, run.data, run.stop, run.next_seq) == (0, b"", "caught_up", 7)


@HOW
def test_chunks_of_max_bytes_concatenate_to_one_copy(name, how) -> None:
    name = name("mcap")
    with nerve.create(name, slots=64, size=1 << 16) as w, nerve.open(name) as r:
        for i in range(40):
            w.put(payload(i + 1, 10 + i))
        whole = copy(how, r, 2, 1, 2**62)
        parts, seq, calls = [], 1, 0
        while True:
            run = copy(how, r, 2, seq, 2**62, max_bytes=300)
            calls += 1
            if run.count:
                # Each call stops once it holds max_bytes: at most one
                # record more than fits.
                assert len(run.data) - len(records(run)[-1][4]) - HEAD.size < 300
            parts.append(run.data)
            seq = run.next_seq
            if run.stop != "full":
                break
        assert run.stop == "caught_up" and calls > 5
        assert b"".join(parts) == whole.data and whole.count == 40


@HOW
def test_missed_counts_overwritten_before_the_copy(name, how) -> None:
    name = name("mcap")
    with nerve.create(name, slots=8, size=1 << 16) as w, nerve.open(name) as r:
        for i in range(12):
            w.put(payload(i + 1, 16))
        # Messages 1-4 are gone: counted, or not where the caller says the
        # window's start was not held (count_first_missed=False).
        run = copy(how, r, 1, 1, 2**62)
        assert (run.count, run.missed, [s for _, s, *_ in records(run)][0]) == (8, 4, 5)
        run = copy(how, r, 1, 1, 2**62, count_first_missed=False)
        assert (run.count, run.missed) == (8, 0)
        # Copy one, let writers overwrite the rest and more: the next call
        # counts exactly those overwritten between the calls.
        run = copy(how, r, 1, 5, 2**62, max_bytes=1)
        assert (run.count, run.stop, run.next_seq) == (1, "full", 6)
        for i in range(12, 30):
            w.put(payload(i + 1, 16))
        run = copy(how, r, 1, 6, 2**62)
        seqs = [s for _, s, *_ in records(run)]
        assert seqs == list(range(23, 31)) and run.missed == 23 - 6


@HOW
def test_overwritten_during_the_copy_never_delivered_torn(name, nerve_cli, tmp_path, how) -> None:
    """A writer process (`nerve put --lines`) overwrites the ring (three
    messages of 20 KiB in 64 KiB) as fast as it can while the copies run:
    every record is whole (its payload is its sequence number's pattern)
    and every sequence number from the first asked for is either a record
    or counted missed. A call may find the writer overwrote the oldest
    message on every one of the library's attempts (nerve.Lapped, on a
    loaded host): it copied and counted nothing, and the next call reads
    on from the same place."""
    name = name("mcap")
    size, total = 20 << 10, 2000
    lines = tmp_path / "lines"
    lines.write_bytes(b"".join(payload(i, size) + b"\n" for i in range(1, total + 1)))
    with nerve.create(name, slots=8, size=1 << 16), nerve.open(name) as r:
        with open(lines, "rb") as stdin:
            writer = subprocess.Popen([nerve_cli, "put", name, "--lines"], stdin=stdin)
        seq, got, missed = 1, 0, 0
        deadline = time.monotonic() + 60
        try:
            while seq <= total and time.monotonic() < deadline:
                try:
                    run = copy(how, r, 1, seq, 2**62, max_bytes=64 << 10)
                except nerve.Lapped:
                    continue
                for _, s, _, _, p in records(run):
                    assert p == payload(s, size), f"message {s} delivered torn"
                assert run.next_seq - seq == run.count + run.missed
                got, missed, seq = got + run.count, missed + run.missed, run.next_seq
        finally:
            assert writer.wait(timeout=60) == 0
        assert seq == total + 1, "the copy did not reach the writer's last message in 60 s"
        assert got + missed == total and got > 0


@HOW
def test_uncommitted_reservation_is_not_delivered(name, how) -> None:
    name = name("mcap")
    with nerve.create(name, slots=8, size=1 << 16) as w, nerve.open(name) as r:
        w.put(b"one")
        res = w.reserve(100)
        with res as buf:
            buf[:3] = b"two"
            res.size = 3
            run = copy(how, r, 1, 1, 2**62)
            assert [p for *_, p in records(run)] == [b"one"] and run.next_seq == 2
        run = copy(how, r, 1, run.next_seq, 2**62)
        assert [p for *_, p in records(run)] == [b"two"] and run.missed == 0


@HOW
def test_read_error_after_records_returns_them_then_raises(name, how) -> None:
    name = name("mcap")
    w = nerve.create(name, slots=8, size=4096)
    r = nerve.open(name)
    for i in range(3):
        w.put(payload(i + 1, 8))
    w.grow(1 << 16)  # the reader then meets Superseded after message 3
    run = copy(how, r, 1, 1, 2**62)
    assert [s for _, s, *_ in records(run)] == [1, 2, 3]
    assert (run.stop, run.next_seq) == ("error", 4)
    with pytest.raises(nerve.Superseded):
        copy(how, r, 1, 4, 2**62)
    r.close()
    w.close()


@pytest.mark.parametrize("kwargs, text", [
    ({"channel_id": -1}, "channel_id"), ({"channel_id": 65536}, "channel_id"),
    ({"seq": 0}, "seq must be"), ({"time_offset": -1}, "time_offset"),
    ({"chunk_offset": -5}, "chunk_offset"), ({"max_bytes": 0}, "max_bytes"),
])
def test_bad_arguments(chan, kwargs, text) -> None:
    args = {"channel_id": 1, "seq": 1, "end_ns": 2**62, **kwargs}
    with pytest.raises(ValueError, match=text):
        _nerve.mcap_messages(chan, args.pop("channel_id"), args.pop("seq"), args.pop("end_ns"), **args)


def test_closed_or_not_a_channel(name) -> None:
    ch = nerve.create(name("mcap"), slots=4, size=4096)
    ch.close()
    with pytest.raises(ValueError, match="closed channel"):
        _nerve.mcap_messages(ch, 1, 1, 0)
    with pytest.raises(TypeError):
        _nerve.mcap_messages("not a channel", 1, 1, 0)


def test_to_file_write_error_raises_and_takes_nothing(name) -> None:
    """A file that cannot be written (here: read-only): nothing copied,
    the error raised as any failed write (OSError), and the next call
    starts from the same message."""
    name = name("mcap")
    with nerve.create(name, slots=8, size=1 << 16) as w, nerve.open(name, lazy=True) as r:
        w.put(payload(1, 100))
        fd = os.open("/dev/null", os.O_RDONLY)
        try:
            with pytest.raises(OSError, match="Bad file descriptor"):
                _nerve.mcap_messages_to_file(r, fd, 1, 1, 2**62)
        finally:
            os.close(fd)
        run = copy("file", r, 1, 1, 2**62)
        assert [p for *_, p in records(run)] == [payload(1, 100)] and run.missed == 0
