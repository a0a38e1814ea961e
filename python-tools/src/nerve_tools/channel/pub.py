"""nerve pub: encode a JSON or YAML value by a channel's encoding and schema
(see ``codecs``) and publish it, once or at a rate. Raw channels get the
bytes as given. Fields left out of a typed value take their defaults, and a
ROS time field may be "now" (so ``'{header: {stamp: now}}'`` stamps it)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Callable, Optional, Sequence, Tuple

import nerve

from .. import options
from .._common import sigterm_as_interrupt
from ..codec import payload as codecs
from ..codec.schemas import _ros2_name
from .follow import open_channel

PROG = "nerve pub"
#: A ROS message type as `ros2 topic pub` takes it: pkg/msg/Name or pkg/Name.
_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*/(?:msg/)?[A-Za-z][A-Za-z0-9_]*$")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        usage="%(prog)s NAME [TYPE] [VALUE] [options]",
        description="Publish a JSON or YAML value, encoded by the channel's encoding and "
                    "schema (json, cdr, ros1msg, protobuf); raw channels get the bytes as given.",
        epilog="examples: nerve pub cmd '{linear: {x: 0.5}}' --rate 10;  "
               "nerve pub imu '{header: {stamp: now}}' --count 5 --rate 100;  "
               "nerve pub robot.imu sensor_msgs/msg/Imu '{}' (ros2 topic pub's order);  "
               "nerve pub cam --file frame.bin")
    p.add_argument("name", metavar="NAME", help="channel name")
    p.add_argument("value", metavar="VALUE", nargs="?",
                   help="the message: JSON or YAML for typed channels, the bytes for raw ones")
    # `ros2 topic pub TOPIC TYPE VALUE`'s order: TYPE is checked against
    # the channel's type, which is what encodes the value.
    p.add_argument("after_type", nargs="?", help=argparse.SUPPRESS)
    p.add_argument("-f", "--file", metavar="F", help="read VALUE from file F ('-': standard input)")
    p.add_argument("-r", "--rate", type=float, metavar="HZ",
                   help="publish repeatedly at HZ until Ctrl-C (or --count)")
    options.add_count(p, "publish N messages (at --rate, else back to back)")
    options.add_timeout(p, "longest wait for the writer lock")
    p.add_argument("--example", action="store_true",
                   help="print the all-default value of the channel's type (as JSON) and exit")
    options.add_json(p, 'print {"seq": N, "size": S} per message')
    options.add_quiet(p, "print nothing")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    args.type = None
    if args.after_type is not None:
        args.type, args.value = args.value, args.after_type
    elif args.value is not None and args.file is not None and _TYPE.match(args.value):
        args.type, args.value = args.value, None
    if args.rate is not None and not args.rate > 0:
        ap.error("--rate must be positive")
    if args.count is not None and args.count <= 0:
        ap.error("--count must be positive")
    if not args.example and (args.value is None) == (args.file is None):
        ap.error("give VALUE or --file F (one of them)")
    sigterm_as_interrupt()
    ch = open_channel(PROG, args.name, write=not args.example)
    try:
        return _run(args, ch)
    finally:
        ch.close()


def _run(args: argparse.Namespace, ch: nerve.Channel) -> int:
    try:
        codec = codecs.Codec.for_channel(ch)
    except codecs.CodecError as e:
        print(f"{PROG}: {args.name}: {e}", file=sys.stderr)
        return 1
    mismatch = _type_mismatch(args, ch.metadata.type, codec)
    if mismatch:
        print(f"{PROG}: {args.name}: {mismatch}", file=sys.stderr)
        return 2
    if args.example:
        print(json.dumps(codecs.jsonable(codecs.example_value(codec))))
        return 0
    if args.file is not None:
        try:
            if args.file == "-":
                raw = sys.stdin.buffer.read()
            else:
                with open(args.file, "rb") as f:
                    raw = f.read()
        except OSError as e:
            print(f"{PROG}: --file {args.file}: {e.strerror}", file=sys.stderr)
            return 1
    else:
        raw = args.value.encode()
    try:
        payload, again = _encode(codec, raw)
    except codecs.CodecError as e:
        print(f"{PROG}: {args.name}: {e}", file=sys.stderr)
        return 2
    return _publish(args, ch, payload, again)


def _type_mismatch(args: argparse.Namespace, have: Optional[str],
                   codec: codecs.Codec) -> Optional[str]:
    """Why TYPE (or a VALUE that is a type name) does not go with the
    channel, which carries `have`; None when it does."""
    if args.type is not None:
        if not _TYPE.match(args.type):
            return f"{args.type!r} is not a message type (pkg/msg/Name); give NAME [TYPE] VALUE"
        if not have or _ros2_name(args.type) != _ros2_name(have):
            return (f"the channel carries {have or 'untyped (raw) data'}, not {args.type}; "
                    "the channel's own type encodes the value")
    elif (args.value is not None and codec.kind in ("ros", "protobuf")
          and _TYPE.match(args.value.strip())):
        # `nerve pub NAME TYPE` with the value left out: a type is never a
        # message of these encodings (a json channel may take the string).
        return (f"{args.value.strip()!r} is a message type, not a value (the channel carries "
                f"{have}); give the value after it (NAME [TYPE] VALUE), or '{{}}' for all defaults")
    return None


def _encode(codec: codecs.Codec, raw: bytes) -> Tuple[bytes, Optional[Callable[[], bytes]]]:
    """The first message's bytes, and what encodes each later one afresh
    (None: they are the same bytes). A value with "now" in it is encoded
    again per message, so that its stamps advance. Raises CodecError."""
    if codec.raw:
        return codec.encode(raw), None
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise codecs.CodecError(f"the value of a {codec.encoding} channel is JSON or YAML "
                                "text, and this is not UTF-8") from None
    value = codecs.parse_value(text)
    payload = codec.encode(value)
    return payload, (lambda: codec.encode(value)) if "now" in text else None


def _publish(args: argparse.Namespace, ch: nerve.Channel, payload: bytes,
             again: Optional[Callable[[], bytes]]) -> int:
    """Put the message --count times (once by default, until Ctrl-C with
    --rate alone) at --rate, printing what --json and --quiet ask for."""
    count = args.count if args.count is not None else (None if args.rate else 1)
    period = 1.0 / args.rate if args.rate else 0.0
    next_t = time.monotonic()
    n = 0
    try:
        while count is None or n < count:
            if n and again is not None:
                payload = again()
            try:
                seq = ch.put(payload, timeout=args.timeout)
            except nerve.MessageTooLarge:
                print(f"{PROG}: {args.name}: EMSGSIZE: a message of {len(payload)} bytes does "
                      f"not fit: the channel's data ring is {ch.stat().data_size} bytes "
                      "(the largest message)", file=sys.stderr)
                return 1
            except nerve.Timeout:
                print(f"{PROG}: {args.name}: the writer lock was not free within "
                      f"{args.timeout:g} s (another writer holds it; see 'nerve who {args.name}')",
                      file=sys.stderr)
                return 1
            n += 1
            if args.json:
                print(json.dumps({"seq": seq, "size": len(payload)}), flush=True)
            elif not args.quiet and period:
                print(f"published seq {seq} ({len(payload)} bytes)", flush=True)
            if period and (count is None or n < count):
                next_t += period
                delay = next_t - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                else:
                    next_t = time.monotonic()
    except KeyboardInterrupt:
        pass
    if not args.quiet and not args.json and not period:
        print(f"published {n} message{'s' if n != 1 else ''} ({len(payload)} bytes) on {args.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
