"""nerve echo: print a channel's messages decoded by its encoding and
schema (json, cdr with a ROS 2 definition, ros1msg with a ROS 1 definition,
protobuf with a descriptor set; see ``codecs``), as YAML-like text (like
``ros2 topic echo``) or one JSON object per line. Bytes that do not decode
are shown in hex with the reason. Raw channels show their text, or hex."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, Sequence

import nerve

from .. import options
from .._common import sigterm_as_interrupt
from .._text import escape
from ..codec import payload as codecs
from .follow import follow, open_channel, out

PROG = "nerve echo"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Print a channel's messages decoded by its encoding and schema "
                    "(json, cdr, ros1msg, protobuf; raw channels as text or hex).",
        epilog="Follows the channel from now on until Ctrl-C, --count messages, or "
               "--timeout seconds without a message (exit 1).")
    p.add_argument("name", metavar="NAME", help="channel name")
    p.add_argument("--field", metavar="A.B.C", help="print only this field (list items by index: a.0.b)")
    p.add_argument("--newest", action="store_true",
                   help="start with the newest message present, then print only the newest at each wake-up")
    p.add_argument("--all", action="store_true", help="start with the oldest message still in the channel")
    options.add_count(p, "stop after N messages")
    options.add_timeout(p, "stop (exit 1) when no message arrives for SEC seconds")
    p.add_argument("--no-arrays", action="store_true", help="show lists as <N items>")
    options.add_json(p, "one JSON object per line: seq, time_ns, missed, value")
    p.add_argument("--header", action="store_true", help="print seq, time and missed before each message")
    return p


class FieldError(Exception):
    """--field names a field the message does not have."""


def render(codec: codecs.Codec, msg: nerve.Message, args: argparse.Namespace) -> str:
    data = bytes(msg.data)
    error = None
    if codec.raw:
        value = codecs.raw_value(data)
    else:
        try:
            value = codec.decode(data)
        except codecs.CodecError as e:
            value, error = None, str(e)
    if error is None and args.field:
        try:
            value = codecs.field(value, args.field)
        except KeyError as e:
            raise FieldError(f"--field {args.field}: {e.args[0]}") from None
    if error is None and args.no_arrays:
        value = codecs.strip_arrays(value)
    if args.json:
        obj = {"seq": msg.seq, "time_ns": msg.time_ns, "missed": msg.missed, "size": msg.size}
        if error is None:
            obj["value"] = codecs.jsonable(value)
        else:
            obj["error"] = error
            obj["hex"] = data.hex()
        return json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n"
    head = ""
    if args.header:
        head = f"# seq {msg.seq}  size {msg.size}  missed {msg.missed}  time_ns {msg.time_ns}\n"
    if error is not None:
        return f"{head}# cannot decode: {escape(error)}\n{codecs.hexdump(data)}\n---\n"
    return f"{head}{codecs.to_yaml(value)}\n---\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.count is not None and args.count <= 0:
        parser().error("--count must be positive")
    if args.timeout is not None and args.timeout <= 0:
        parser().error("--timeout must be positive")
    if args.newest and args.all:
        parser().error("give --newest or --all, not both")
    sigterm_as_interrupt()
    ch = open_channel(PROG, args.name)
    try:
        codec = codecs.Codec.for_channel(ch)
    except codecs.CodecError as e:
        print(f"{PROG}: {escape(args.name)}: {escape(str(e))}; showing hex", file=sys.stderr)
        codec = codecs.Codec(None, None, None)
        codec_error = str(e)
    else:
        codec_error = None
    start = "newest" if args.newest else ("all" if args.all else "now")
    n = 0
    try:
        for msg in follow(ch, start=start, newest=args.newest, timeout=args.timeout):
            if codec_error is not None and not args.json:
                out(f"# cannot decode: {escape(codec_error)}\n{codecs.hexdump(bytes(msg.data))}\n---\n")
            else:
                out(render(codec, msg, args))
            n += 1
            if args.count is not None and n >= args.count:
                break
    except FieldError as e:
        print(f"{PROG}: {escape(args.name)}: {escape(str(e))}", file=sys.stderr)
        return 2
    except nerve.Timeout:
        print(f"{PROG}: {escape(args.name)}: no message for {args.timeout:g} s", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        return 0
    finally:
        ch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
