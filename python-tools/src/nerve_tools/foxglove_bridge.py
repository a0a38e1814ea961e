"""nerve foxglove: serve channels live to the Foxglove app.

A WebSocket server of the Foxglove protocol (the ``foxglove-sdk`` package
implements it) advertises one Foxglove channel per nerve channel, topic =
channel name, with the message encoding and schema of its metadata (see
``_common.to_mcap``: json + JSON Schema, cdr + ros2msg, ros1 + ros1msg,
protobuf, ...). In Foxglove: *Open connection* -> *Foxglove WebSocket* ->
``ws://HOST:8765``.

Every message of a channel that a client subscribed to is forwarded, in
order (next-unseen reads; a ring overrun is counted and shown at exit);
channels nobody subscribed to are not read. Channels created later are
advertised when they appear, removed ones are withdrawn. Log time is the
commit time as wall-clock time.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import nerve

from ._common import RAW, realtime_offset_ns, select, sigterm_as_interrupt, to_mcap

PROG = "nerve foxglove"
RESCAN_S = 1.0


@dataclass
class _Link:
    ch: nerve.Channel
    fox: object  # foxglove.Channel
    created: int
    forwarded: int = 0
    missed: int = 0


class Bridge:
    """Forwards channels matching ``patterns`` (all when empty) to a
    Foxglove WebSocket server on ``host``:``port`` (0: a free port)."""

    def __init__(self, patterns: Sequence[str] = (), host: str = "127.0.0.1", port: int = 8765) -> None:
        import foxglove

        self._foxglove = foxglove
        self.patterns = list(patterns)
        self.context = foxglove.Context()
        self.server = foxglove.start_server(
            name="nerve", host=host, port=port, context=self.context,
            supported_encodings=["json", "cdr", "ros1", "protobuf", "flatbuffer", "cbor"])
        self.host = host
        self.links: Dict[str, _Link] = {}
        # Channels that could not be served, by their creation time.
        self._refused: Dict[str, Optional[int]] = {}
        self._offset = realtime_offset_ns()
        self._last_scan = 0.0
        self.scan()

    @property
    def port(self) -> int:
        return int(self.server.port)

    def _advertise(self, name: str, info: nerve.ChannelInfo) -> None:
        if self._refused.get(name) == info.created:
            return  # reported once; tried again only if re-created
        try:
            self._advertise_one(name, info)
        except Exception as e:  # one strange channel must not stop the others
            self._refused[name] = info.created
            print(f"{PROG}: {name}: not served: {type(e).__name__}: {e}", file=sys.stderr)

    def _advertise_one(self, name: str, info: nerve.ChannelInfo) -> None:
        ch = nerve.open(name)
        try:
            self._link(name, info, ch)
        except BaseException:
            ch.close()
            raise

    def _link(self, name: str, info: nerve.ChannelInfo, ch: nerve.Channel) -> None:
        fg = self._foxglove
        enc = to_mcap(ch.metadata)
        if enc.schema_encoding:
            schema = fg.Schema(name=enc.schema_name, encoding=enc.schema_encoding, data=enc.schema)
        else:
            # Schemaless (raw bytes, schemaless JSON): an empty schema, as
            # the protocol advertises such channels.
            schema = fg.Schema(name=enc.schema_name, encoding="", data=b"")
        fox = fg.Channel(name, schema=schema, message_encoding=enc.message_encoding or RAW,
                         context=self.context, metadata={"nerve.type": ch.metadata.type or ""})
        ch.seek(ch.stat().head_seq)  # live: from the next message on
        self.links[name] = _Link(ch, fox, info.created)

    def _withdraw(self, name: str) -> None:
        link = self.links.pop(name)
        link.fox.close()  # type: ignore[attr-defined]
        link.ch.close()

    def scan(self) -> None:
        """Advertise new channels and withdraw removed ones."""
        self._last_scan = time.monotonic()
        infos = {i.name: i for i in nerve.list()}
        wanted = set(select(self.patterns, infos.values()))
        for name in list(self.links):
            if name not in wanted or infos[name].created != self.links[name].created:
                self._withdraw(name)
        for name in sorted(wanted - set(self.links)):
            self._advertise(name, infos[name])

    def poll(self) -> int:
        """Forward what arrived on subscribed channels; returns how many."""
        if time.monotonic() - self._last_scan >= RESCAN_S:
            self.scan()
        n = 0
        for name, link in list(self.links.items()):
            try:
                n += self._forward(link)
            except nerve.Error as e:
                # A channel that turned bad is withdrawn; the others go on.
                print(f"{PROG}: {name}: {e}; withdrawn", file=sys.stderr)
                self._refused[name] = link.created
                self._withdraw(name)
        return n

    def _forward(self, link: _Link) -> int:
        if not link.fox.has_sinks():  # type: ignore[attr-defined]
            # Nobody subscribed: skip to the newest, so that a
            # subscriber gets live data and not a backlog.
            link.ch.seek(link.ch.stat().head_seq)
            return 0
        n = 0
        while True:
            msg = link.ch.get()
            if msg is None:
                break
            link.missed += msg.missed
            link.fox.log(msg.data, log_time=msg.time + self._offset)  # type: ignore[attr-defined]
            link.forwarded += 1
            n += 1
        return n

    def wait(self, timeout: float = 0.1) -> None:
        chans = [link.ch for link in self.links.values()][: nerve.WAIT_MAX]
        if chans:
            nerve.wait_any(chans, timeout if len(self.links) <= nerve.WAIT_MAX else min(timeout, 0.01))
        else:
            time.sleep(timeout)

    def close(self) -> None:
        for name in list(self.links):
            self._withdraw(name)
        self.server.stop()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Serve channels live to the Foxglove app (Foxglove WebSocket protocol).")
    p.add_argument("patterns", nargs="*", metavar="PATTERN", help="only channels matching these globs (default: all)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; 0.0.0.0 for other hosts)")
    p.add_argument("-p", "--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument("-q", "--quiet", action="store_true")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    sigterm_as_interrupt()
    try:
        bridge = Bridge(args.patterns, host=args.host, port=args.port)
    except (RuntimeError, OSError) as e:
        print(f"{PROG}: cannot serve on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1
    # The ready line (tests read the port from it).
    print(f"{PROG}: serving {len(bridge.links)} channels on ws://{args.host}:{bridge.port}; "
          "Ctrl-C to stop", file=sys.stderr, flush=True)
    try:
        while True:
            bridge.wait(0.1)
            bridge.poll()
    except KeyboardInterrupt:
        pass
    finally:
        links: List[_Link] = list(bridge.links.values())
        fwd = sum(link.forwarded for link in links)
        missed = sum(link.missed for link in links)
        bridge.close()
    if not args.quiet:
        print(f"{PROG}: forwarded {fwd} messages, {missed} missed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
