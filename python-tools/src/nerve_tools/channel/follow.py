"""What the reading verbs (echo, hz, bw, delay) share: opening a channel by
name with usage errors that say what is wrong, and following it."""

from __future__ import annotations

import sys
import time
from typing import Iterator, Optional

import nerve

from .._common import chan_error, die


def open_channel(prog: str, name: str, write: bool = False) -> nerve.Channel:
    """Open a channel or exit: 2 for a bad name, 1 for a failed open. The
    message is the C verbs' (``nerve VERB: NAME: CODE: detail``, the name
    quoted when it is not a channel name), the detail the library's."""
    try:
        return nerve.open(name, write=write)
    except (nerve.InvalidArgument, nerve.NameTooLong) as e:
        die(prog, f"{name!r}: {e.code_name}: {e.detail}", 2)
    except nerve.Error as e:
        die(prog, chan_error(name, e))


def follow(ch: nerve.Channel, *, start: str = "now", newest: bool = False,
           timeout: Optional[float] = None) -> Iterator[nerve.Message]:
    """Messages as they arrive. ``start``: "now" (messages committed from
    now on), "all" (from the oldest still present), "newest" (the newest
    present first). ``newest``: only the newest at each wake-up. Ends (by
    raising nerve.Timeout) after ``timeout`` seconds without a message.
    A channel that a writer grows is followed to its successor, in order
    (nerve.Superseded)."""
    head = ch.stat().head_seq
    if start == "now":
        ch.seek(head)
    elif start == "newest" and head:
        msg = ch.get(newest=True, repeat=True)
        if msg is not None:
            yield msg
    while True:
        try:
            msg = ch.get(newest=newest, wait=True, timeout=timeout)
        except nerve.Superseded:
            ch.follow_successor()
            continue
        if msg is not None:
            yield msg


def interval_due(last: float, every: float) -> bool:
    return time.monotonic() - last >= every


def out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
