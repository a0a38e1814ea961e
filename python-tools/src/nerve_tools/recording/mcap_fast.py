"""A minimal, fast MCAP writer for `nerve blackbox` dumps.

The ``mcap`` package's Writer builds every record through several Python
calls (about 12 us a message on the development VM: a dump of 80,000
small messages took 1 s of it alone). A dump needs only a few record
kinds, so this writer serialises them itself, following the MCAP
specification (https://mcap.dev/spec):

- each message is one ``struct.pack`` of its 31-byte record header plus
  its payload, appended to the open chunk's list of parts (no copy of the
  payload until the file write, no per-message Python object besides the
  header bytes); a dump's records come ready made from nerve's native
  ``_nerve.mcap_messages`` (:meth:`Writer.add_records`), one buffer per
  chunk;
- the chunk's message index is an ``array('Q')`` of (log time, offset)
  pairs per channel, written as Message Index records after the chunk;
- a chunk is written with ``writelines`` once it holds ``chunk_size``
  bytes, its CRC computed over the parts (zlib.crc32, incremental);
  chunks are uncompressed unless ``compression`` names zstd or lz4;
- the summary repeats schemas and channels and holds the statistics, the
  chunk indexes, the metadata indexes and summary offsets, so readers
  (``mcap``'s Python reader, Foxglove, ``nerve play``) seek as in any
  indexed file.

The files are checked by reading them back with ``mcap==1.6.0``'s reader,
CRCs validated (tests/python_tools/test_blackbox.py)."""

from __future__ import annotations

import os
import struct
import sys
import zlib
from array import array
from typing import IO, Any, Callable, Dict, List, Tuple

MAGIC = b"\x89MCAP0\r\n"
OP_HEADER, OP_FOOTER, OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK = 1, 2, 3, 4, 5, 6
OP_MESSAGE_INDEX, OP_CHUNK_INDEX, OP_STATISTICS, OP_METADATA = 7, 8, 11, 12
OP_METADATA_INDEX, OP_SUMMARY_OFFSET, OP_DATA_END = 13, 14, 15
#: A message record's header: opcode, record length, channel id, sequence,
#: log time, publish time (the payload follows).
MESSAGE = struct.Struct("<BQHIQQ")
MESSAGE_FIXED = MESSAGE.size - 9  # of the record length: all but the payload
_U64 = struct.Struct("<Q")
#: An uncompressed chunk's record up to its records: opcode, length, start
#: and end time, records size, CRC, compression "" (its length), records
#: length.
CHUNK_HEAD = 1 + 8 + 8 + 8 + 8 + 4 + 4 + 8
_BIG_ENDIAN = sys.byteorder == "big"


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<I", len(b)) + b


def _map(m: Dict[str, str]) -> bytes:
    body = b"".join(_str(k) + _str(v) for k, v in sorted(m.items()))
    return struct.pack("<I", len(body)) + body


def _record(op: int, body: bytes) -> bytes:
    return struct.pack("<BQ", op, len(body)) + body


class Writer:
    """An indexed MCAP file on a binary stream. Messages are appended with
    :meth:`add` (any channel, any order); :meth:`finish` writes the summary
    and the footer."""

    def __init__(self, stream: IO[bytes], library: str, compression: str = "none",
                 chunk_size: int = 1 << 20) -> None:
        if compression not in ("none", "zstd", "lz4"):
            raise ValueError(f"unknown compression {compression!r}")
        self.stream = stream
        self.compression = "" if compression == "none" else compression
        self.chunk_size = chunk_size
        self.pos = 0
        self.schemas: List[bytes] = []
        self.channels: List[bytes] = []
        self.metadata: List[Tuple[int, int, str]] = []
        self.chunk_indexes: List[bytes] = []
        self.counts: Dict[int, int] = {}
        self.message_count = 0
        self.start_ns = 0
        self.end_ns = 0
        self._new_chunk()
        self._write(MAGIC + _record(OP_HEADER, _str("") + _str(library)))

    def _write(self, b: bytes) -> None:
        self.stream.write(b)
        self.pos += len(b)

    def _new_chunk(self) -> None:
        self.parts: List[bytes] = []
        self.size = 0  # bytes of records in the open chunk
        self.index: Dict[int, "array[int]"] = {}
        self.chunk_start = 2**64  # the open chunk's least and greatest log time
        self.chunk_end = 0

    def register_schema(self, name: str, encoding: str, data: bytes) -> int:
        sid = len(self.schemas) + 1
        rec = _record(OP_SCHEMA, struct.pack("<H", sid) + _str(name) + _str(encoding)
                      + struct.pack("<I", len(data)) + data)
        self.schemas.append(rec)
        self._write(rec)
        return sid

    def register_channel(self, topic: str, message_encoding: str, schema_id: int,
                         metadata: Dict[str, str]) -> int:
        cid = len(self.channels) + 1
        rec = _record(OP_CHANNEL, struct.pack("<HH", cid, schema_id) + _str(topic)
                      + _str(message_encoding) + _map(metadata))
        self.channels.append(rec)
        self.counts[cid] = 0
        self._write(rec)
        return cid

    def add(self, cid: int, seq: int, t: int, data: bytes) -> None:
        """One message (log and publish time ``t``); the payload is kept
        by reference until its chunk is written. The counts are taken from
        the index at flush."""
        idx = self.index.get(cid)
        if idx is None:
            idx = self.index[cid] = array("Q")
        idx.append(t)
        if t < self.chunk_start:
            self.chunk_start = t
        if t > self.chunk_end:
            self.chunk_end = t
        size = self.size
        idx.append(size)
        n = len(data)
        self.parts += (MESSAGE.pack(OP_MESSAGE, MESSAGE_FIXED + n, cid, seq & 0xFFFFFFFF, t, t), data)
        self.size = size = size + MESSAGE.size + n
        if size >= self.chunk_size:
            self.flush()

    def add_records(self, cid: int, records: bytes, index: bytes) -> None:
        """Message records of channel cid made elsewhere (a dump's copy,
        nerve's ``_nerve.mcap_messages``): ``records`` back to back, whose
        offsets in the open chunk start at its size so far, and their
        (log time, offset) pairs as native u64 in ``index``; the chunk is
        written once it holds chunk_size bytes. The records' log times do
        not decrease (a channel's commit times), so index's first and last
        entries are their bounds."""
        if not records:
            return
        idx = self.index.get(cid)
        if idx is None:
            idx = self.index[cid] = array("Q")
        first = len(idx)
        idx.frombytes(index)
        if idx[first] < self.chunk_start:
            self.chunk_start = idx[first]
        if idx[-2] > self.chunk_end:
            self.chunk_end = idx[-2]
        self.parts.append(records)
        self.size += len(records)
        if self.size >= self.chunk_size:
            self.flush()

    def flush(self) -> None:
        """Write the open chunk (if it holds a message) and its indexes."""
        if not self.parts:
            return
        records: List[bytes] = self.parts
        if len(records) > 64:  # small messages: one join, one CRC
            records = [b"".join(records)]
        crc = 0
        for p in records:
            crc = zlib.crc32(p, crc)
        stored = self.size
        if self.compression:
            raw = b"".join(records)
            if self.compression == "zstd":
                import zstandard

                records = [zstandard.ZstdCompressor().compress(raw)]
            else:
                import lz4.frame

                records = [lz4.frame.compress(raw)]
            stored = len(records[0])
        head = self._chunk_head(crc, stored)
        start = self.pos
        self._write(struct.pack("<BQ", OP_CHUNK, len(head) + stored) + head)
        self.stream.writelines(records)
        self.pos += stored
        self._indexes(start, stored)

    def _chunk_head(self, crc: int, stored: int) -> bytes:
        """The open chunk's Chunk record after its opcode and length."""
        return (_U64.pack(self.chunk_start) + _U64.pack(self.chunk_end) + _U64.pack(self.size)
                + struct.pack("<I", crc) + _str(self.compression) + _U64.pack(stored))

    def add_file_records(self, cid: int, fill: Callable[[int], Any]) -> Any:
        """One chunk of channel cid's Message records written straight to
        the file by ``fill(fd)`` (nerve's ``_nerve.mcap_messages_to_file``:
        the kernel copies each payload from the channel's file) at the
        file descriptor's position, where the chunk's records begin; fill
        returns what it wrote (``size``, ``count``, ``index`` as for
        :meth:`add_records`, offsets from the records' start). The chunk's
        head is written after, once its length is known. Its CRC is 0,
        which MCAP defines as "not computed": the records never pass
        through this process. Uncompressed files only. Returns fill's
        result."""
        if self.compression:
            raise ValueError("records written to the file cannot be compressed")
        self.flush()
        self.stream.flush()
        fd = self.stream.fileno()
        start = self.pos
        os.lseek(fd, start + CHUNK_HEAD, os.SEEK_SET)
        try:
            run = fill(fd)
        finally:
            self.stream.seek(start)
        if not run.count:
            return run
        idx = self.index[cid] = array("Q")
        idx.frombytes(run.index)
        self.chunk_start, self.chunk_end, self.size = idx[0], idx[-2], run.size
        head = self._chunk_head(0, run.size)
        os.pwrite(fd, struct.pack("<BQ", OP_CHUNK, len(head) + run.size) + head, start)
        self.pos = start + CHUNK_HEAD + run.size
        self.stream.seek(self.pos)
        self._indexes(start, run.size)
        return run

    def _indexes(self, start: int, stored: int) -> None:
        """After the open chunk (written from ``start``, ``stored`` bytes of
        records): its Message Index records; its Chunk Index is kept for
        the summary. Then a new chunk opens."""
        start_ns, end_ns = self.chunk_start, self.chunk_end
        chunk_len = self.pos - start
        offsets = []
        for cid, idx in sorted(self.index.items()):
            self.counts[cid] += len(idx) // 2
            self.message_count += len(idx) // 2
            if _BIG_ENDIAN:
                idx.byteswap()
            entries = idx.tobytes()
            offsets.append(struct.pack("<HQ", cid, self.pos))
            self._write(_record(OP_MESSAGE_INDEX, struct.pack("<HI", cid, len(entries)) + entries))
        if not self.chunk_indexes or start_ns < self.start_ns:
            self.start_ns = start_ns
        self.end_ns = max(self.end_ns, end_ns)
        off = b"".join(offsets)
        self.chunk_indexes.append(_record(OP_CHUNK_INDEX, _U64.pack(start_ns) + _U64.pack(end_ns)
                                          + _U64.pack(start) + _U64.pack(chunk_len)
                                          + struct.pack("<I", len(off)) + off
                                          + _U64.pack(self.pos - start - chunk_len)
                                          + _str(self.compression) + _U64.pack(stored)
                                          + _U64.pack(self.size)))
        self._new_chunk()

    def add_metadata(self, name: str, metadata: Dict[str, str]) -> None:
        self.flush()
        rec = _record(OP_METADATA, _str(name) + _map(metadata))
        self.metadata.append((self.pos, len(rec), name))
        self._write(rec)

    def finish(self) -> None:
        """The rest of the data section, the summary and the footer."""
        self.flush()
        self._write(_record(OP_DATA_END, struct.pack("<I", 0)))
        summary_start = self.pos
        groups: List[Tuple[int, List[bytes]]] = [
            (OP_SCHEMA, self.schemas), (OP_CHANNEL, self.channels)]
        counts = b"".join(struct.pack("<HQ", c, n) for c, n in sorted(self.counts.items()))
        groups.append((OP_STATISTICS, [_record(OP_STATISTICS, struct.pack(
            "<QHIIII", self.message_count, len(self.schemas), len(self.channels), 0,
            len(self.metadata), len(self.chunk_indexes))
            + _U64.pack(self.start_ns) + _U64.pack(self.end_ns)
            + struct.pack("<I", len(counts)) + counts)]))
        groups.append((OP_CHUNK_INDEX, self.chunk_indexes))
        groups.append((OP_METADATA_INDEX, [_record(OP_METADATA_INDEX, _U64.pack(o) + _U64.pack(n) + _str(name))
                                           for o, n, name in self.metadata]))
        summary = []
        offsets = []
        at = summary_start
        for op, recs in groups:
            if not recs:
                continue
            body = b"".join(recs)
            offsets.append(_record(OP_SUMMARY_OFFSET, struct.pack("<BQQ", op, at, len(body))))
            summary.append(body)
            at += len(body)
        offsets_start = at
        tail = b"".join(summary) + b"".join(offsets)
        footer = struct.pack("<BQQQ", OP_FOOTER, 20, summary_start, offsets_start)
        crc = zlib.crc32(footer, zlib.crc32(tail))
        self._write(tail + footer + struct.pack("<I", crc) + MAGIC)
        # Records taken back (add_file_records) may have left bytes past
        # the end: the footer must be the file's last bytes.
        self.stream.truncate()
