"""Several Python processes write and read one channel at once; every
message a reader gets is whole (its checksum holds), in order per writer,
and what it did not get is accounted for by `missed`."""

from __future__ import annotations

import multiprocessing as mp
import struct
import zlib

import pytest

import nerve

WRITERS = 3
READERS = 2
PER_WRITER = 3000
HDR = struct.Struct("<IIQ")  # writer id, crc32 of the body, counter


def _payload(wid: int, i: int) -> bytes:
    size = 16 + (i * 37 + wid * 11) % 3000  # varied sizes, wrapping the ring
    body = bytes([(wid * 31 + i) & 0xFF]) * size
    return HDR.pack(wid, zlib.crc32(body), i) + body


def _check(data) -> tuple:
    wid, crc, i = HDR.unpack_from(data)
    body = data[HDR.size:]
    if zlib.crc32(body) != crc:
        raise AssertionError(f"bad checksum in message {i} of writer {wid}")
    return wid, i


def _writer(name: str, wid: int, start) -> None:
    with nerve.open(name, write=True) as w:
        start.wait()
        for i in range(PER_WRITER):
            w.put(_payload(wid, i))


def _reader(name: str, total: int, use_view: bool, start, out) -> None:
    got = missed = stale = 0
    last = {}
    with nerve.open(name) as r:
        start.wait()
        while r.cursor < total:
            if use_view:
                # Copy inside the block, trust only after it: the view is
                # validated when the block ends, and a copy a writer tore
                # meanwhile must be discarded, not checked.
                try:
                    with r.view(wait=True, timeout=30) as m:
                        data = bytes(m.data)
                        m_missed = m.missed
                except nerve.StaleView:
                    # overwritten while read: discarded, counted, and the
                    # messages skipped before it still count as missed
                    stale += 1
                    missed += m_missed
                    continue
                wid, i = _check(data)
            else:
                m = r.get(wait=True, timeout=30)
                wid, i = _check(m.data)
                m_missed = m.missed
            if i <= last.get(wid, -1):
                raise AssertionError(f"writer {wid}: {i} after {last[wid]}")
            last[wid] = i
            got += 1
            missed += m_missed
    out.put((got, missed, stale))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("slots,size", [(8192, 16 << 20), (64, 32768)], ids=["roomy", "lapping"])
def test_concurrent_writers_and_readers(name, slots, size):
    n = name("mp")
    total = WRITERS * PER_WRITER
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(WRITERS + READERS)
    out = ctx.Queue()
    with nerve.create(n, slots=slots, size=size) as ch:
        procs = [ctx.Process(target=_writer, args=(n, w, start)) for w in range(WRITERS)]
        procs += [ctx.Process(target=_reader, args=(n, total, k % 2 == 1, start, out))
                  for k in range(READERS)]
        for p in procs:
            p.start()
        results = [out.get(timeout=240) for _ in range(READERS)]
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0] * len(procs)
        st = ch.stat()
        assert st.head_seq == total
        ch.check()
    for got, missed, stale in results:
        # every message was read, reported missed, or seen stale in a view
        assert got + missed + stale == total
        assert got > 0
    if slots == 8192:
        print(f"roomy ring: readers got {[r[0] for r in results]} of {total}")
