"""What the tools share: encoding names, channel selection, formatting."""

from __future__ import annotations

import fnmatch
import re
import signal
import sys
import time
from typing import Dict, Iterable, List, NamedTuple, NoReturn, Optional, Sequence, Tuple

import nerve

from ._text import escape

# nerve's metadata encoding -> (MCAP message encoding, MCAP schema encoding).
# The MCAP names are the well-known ones of the MCAP format registry
# (https://mcap.dev/spec/registry), which Foxglove decodes. An encoding not
# listed keeps its name for messages and for the schema (a custom encoding).
_TO_MCAP: Dict[str, Tuple[str, str]] = {
    "json": ("json", "jsonschema"),
    "cdr": ("cdr", "ros2msg"),
    "ros2msg": ("cdr", "ros2msg"),
    "ros2idl": ("cdr", "ros2idl"),
    "ros1msg": ("ros1", "ros1msg"),
    "ros1": ("ros1", "ros1msg"),
    "protobuf": ("protobuf", "protobuf"),
    "flatbuffer": ("flatbuffer", "flatbuffer"),
    "cbor": ("cbor", ""),
}

# MCAP message encoding -> nerve encoding, for files nerve did not write.
_FROM_MCAP: Dict[str, str] = {"ros1": "ros1msg", "cdr": "cdr"}

#: MCAP message encoding of a channel without an encoding (its bytes are
#: opaque). Not a registered name; Foxglove shows such channels but cannot
#: decode them.
RAW = "raw"

# Channel metadata keys nerve-record writes on every MCAP channel, so that
# nerve-play recreates the channel exactly.
META_NAME = "nerve.name"
META_TYPE = "nerve.type"
META_ENCODING = "nerve.encoding"
META_SLOTS = "nerve.slots"
META_DATA_SIZE = "nerve.data_size"


class McapEncoding(NamedTuple):
    """How a nerve channel appears in MCAP (and in Foxglove)."""

    message_encoding: str
    schema_name: str
    schema_encoding: str  # "" when there is no schema
    schema: bytes


def to_mcap(meta: nerve.Metadata) -> McapEncoding:
    """The MCAP encoding names and schema of a channel's metadata."""
    enc = meta.encoding or ""
    schema = meta.schema or b""
    msg_enc, schema_enc = _TO_MCAP.get(enc, (enc or RAW, enc))
    if enc == "cdr" and schema.lstrip().startswith(b"module "):
        schema_enc = "ros2idl"  # an IDL text rather than a .msg definition
    if not schema or not schema_enc:
        return McapEncoding(msg_enc, meta.type or "", "", b"")
    return McapEncoding(msg_enc, meta.type or "", schema_enc, schema)


def from_mcap(message_encoding: str) -> Optional[str]:
    """The nerve encoding of an MCAP message encoding (None for raw)."""
    if not message_encoding or message_encoding == RAW:
        return None
    return _FROM_MCAP.get(message_encoding, message_encoding)


_NAME_BAD = re.compile(r"[^A-Za-z0-9_.-]")


def channel_name(topic: str) -> str:
    """A valid nerve channel name for an MCAP topic: "/robot/imu" becomes
    "robot.imu" (names use [A-Za-z0-9_.-] and do not start with '.')."""
    name = _NAME_BAD.sub("_", topic.strip("/").replace("/", "."))
    name = name.lstrip(".") or "topic"
    return name[: nerve.NAME_MAX]


def is_pattern(arg: str) -> bool:
    return any(c in arg for c in "*?[")


def select(patterns: Sequence[str], infos: Iterable[nerve.ChannelInfo]) -> List[str]:
    """Names of the readable channels matching any glob pattern (all of them
    for no pattern), sorted."""
    out = []
    for info in infos:
        if info.error is not None:
            continue
        if not patterns or any(fnmatch.fnmatchcase(info.name, p) for p in patterns):
            out.append(info.name)
    return sorted(out)


def human_bytes(n: float) -> str:
    """1536 -> "1.5 KiB"."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def plural(n: int, one: str, many: Optional[str] = None) -> str:
    """plural(1, "channel") -> "1 channel"; plural(2, "channel") -> "2 channels"."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def human_age(ns: Optional[int]) -> str:
    """Age in nanoseconds as "850 ms", "12.0 s", "3.5 min"; "-" for none."""
    if ns is None:
        return "-"
    s = ns / 1e9
    if s < 1:
        return f"{s * 1e3:.0f} ms"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def realtime_offset_ns() -> int:
    """CLOCK_REALTIME minus CLOCK_MONOTONIC now: added to a message's commit
    time (monotonic) it gives wall-clock time. Taken once per recording, so
    that the relative timing of messages is kept exactly. Of a few
    brackets (monotonic, wall, monotonic) the narrowest is kept: a process
    preempted inside one (for seconds, on a loaded host) would skew the
    offset by as much."""
    best, best_width = 0, None
    for _ in range(4):
        before = nerve.now_ns()
        wall = time.time_ns()
        after = nerve.now_ns()
        if best_width is None or after - before < best_width:
            best, best_width = wall - (before + after) // 2, after - before
        if best_width < 100_000:  # narrow enough for a Python call
            break
    return best


#: What to do about a code with the nerve command: the library describes
#: the problem, the command adds these hints (the C verbs' table is
#: cli_hint() in tools/cli_err.c; the two say the same).
HINTS = {
    "ENOENT": "'nerve ls' lists channels, 'nerve create' makes one",
    "EEXIST": "'nerve rm NAME' removes it",
    "EMISMATCH": "'nerve rm NAME' removes it",
    "EMSGSIZE": "'nerve create --size' sets the data ring",
    "EACCES": "its owner may change it with 'nerve chmod'",
}


def chan_error(name: str, e: Exception) -> str:
    """``NAME: CODE: detail[; hint]`` for a failure on channel NAME, as the
    C verbs print it (a nerve.Error names its channel itself), else
    ``NAME: e``."""
    if isinstance(e, nerve.Error) and e.channel == name:
        hint = HINTS.get(e.code_name)
        return f"{e}; {hint}" if hint else str(e)
    return f"{name}: {e}"


def die(prog: str, msg: str, code: int = 1) -> NoReturn:
    # The message may quote a name or a peer's words: escaped (_text).
    print(f"{prog}: {escape(msg, keep_lines=True)}", file=sys.stderr)
    raise SystemExit(code)


def sigterm_as_interrupt() -> None:
    """Let SIGTERM stop a tool as Ctrl-C does (finishing its output)."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
