"""nerve foxglove: serve channels live to the Foxglove app.

A WebSocket server of the Foxglove protocol (the ``foxglove-sdk`` package
implements it) advertises one Foxglove channel per nerve channel, topic =
channel name, with the message encoding and schema of its metadata (see
``_common.to_mcap``: json + JSON Schema, cdr + ros2msg, ros1 + ros1msg,
protobuf, ...). In Foxglove: *Open connection* -> *Foxglove WebSocket* ->
``ws://HOST:8765``.

Clients may speak the published ``foxglove.websocket.v1`` subprotocol or the
SDK's ``foxglove.sdk.v1``: the port accepts both and relays each connection
to the SDK's server, which listens on a loopback port of its own.

Client publishing is advertised: a Foxglove panel (Publish, Teleop) that
advertises a topic writes into the channel of that name, created from the
client's encoding and schema when it does not exist. The encoding rules are
``nerve pub``'s: a message in the channel's own encoding is written as it
is; a ``json`` message to a typed channel (cdr, ros1msg, protobuf) is
encoded by the channel's schema; raw channels get the bytes as given.
Messages that do not fit are dropped with a log line.

Every message of a channel that a client subscribed to is forwarded, in
order (next-unseen reads; a ring overrun is counted and shown at exit);
channels nobody subscribed to are not read. Channels created later are
advertised when they appear, removed ones are withdrawn. Log time is the
commit time as wall-clock time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import nerve

from . import codecs
from ._common import RAW, chan_error, from_mcap, plural, realtime_offset_ns, select, sigterm_as_interrupt, to_mcap

#: The subprotocols a client may ask for: the published protocol's name and
#: the SDK's (the SDK's server accepts only the latter).
SUBPROTOCOLS = ("foxglove.websocket.v1", "foxglove.sdk.v1")

PROG = "nerve foxglove"
RESCAN_S = 1.0


@dataclass
class _Link:
    ch: nerve.Channel
    fox: object  # foxglove.Channel
    created: int
    forwarded: int = 0
    missed: int = 0


@dataclass
class _Pub:
    """One channel a client advertised for publishing."""

    name: str
    ch: Optional[nerve.Channel]
    codec: Optional[codecs.Codec]
    client_encoding: str
    channel_encoding: str
    written: int = 0
    dropped: int = 0


class _Listener:
    """The SDK server's callbacks for client publishing (called on the
    SDK's threads; one lock serialises them)."""

    def __init__(self, bridge: "Bridge") -> None:
        self.bridge = bridge
        self.lock = threading.Lock()
        self.pubs: Dict[Tuple[int, int], _Pub] = {}

    def _log(self, msg: str) -> None:
        if not self.bridge.quiet:
            print(f"{PROG}: {msg}", file=sys.stderr, flush=True)

    def on_client_advertise(self, client: Any, channel: Any) -> None:
        with self.lock:
            self.pubs[(client.id, channel.id)] = self._open(channel)

    def _open(self, c: Any) -> _Pub:
        name = c.topic.lstrip("/")
        enc = c.encoding or ""
        try:
            try:
                ch = nerve.open(name, write=True)
            except nerve.ChannelNotFound:
                schema = c.schema if isinstance(c.schema, (bytes, bytearray)) else (c.schema or "").encode()
                nerve.create(name, type=c.schema_name or None, encoding=from_mcap(enc),
                             schema=bytes(schema) or None, exist_ok=True).close()
                ch = nerve.open(name, write=True)
            codec = codecs.Codec.for_channel(ch)
        except (nerve.Error, codecs.CodecError) as e:
            self._log(f"client publishing on {c.topic!r} refused: {e}")
            return _Pub(name, None, None, enc, "")
        own = to_mcap(ch.metadata).message_encoding
        self._log(f"a client publishes {enc or 'raw'} on {name}")
        return _Pub(name, ch, codec, enc, own)

    def on_client_unadvertise(self, client: Any, client_channel_id: int) -> None:
        with self.lock:
            p = self.pubs.pop((client.id, client_channel_id), None)
            if p is not None and p.ch is not None:
                p.ch.close()

    def on_message_data(self, client: Any, client_channel_id: int, data: bytes) -> None:
        with self.lock:
            p = self.pubs.get((client.id, client_channel_id))
            if p is None or p.ch is None or p.codec is None:
                return
            try:
                payload = encode_client_message(p.codec, p.client_encoding, p.channel_encoding, data)
                p.ch.put(payload, timeout=1.0)
                p.written += 1
            except (codecs.CodecError, nerve.Error) as e:
                p.dropped += 1
                self._log(f"{p.name}: a client message was dropped: {e}")

    def close(self) -> None:
        with self.lock:
            for p in self.pubs.values():
                if p.ch is not None:
                    p.ch.close()
            self.pubs.clear()


def encode_client_message(codec: codecs.Codec, client_encoding: str, channel_encoding: str,
                          data: bytes) -> bytes:
    """The bytes to put for a client's message, by ``nerve pub``'s rules."""
    if codec.raw or client_encoding == channel_encoding:
        return bytes(data)
    if client_encoding == "json":
        try:
            value = json.loads(bytes(data))
        except ValueError as e:
            raise codecs.CodecError(f"not JSON: {e}") from None
        return codec.encode(value)
    raise codecs.CodecError(f"the client sends {client_encoding!r}; the channel takes "
                            f"{channel_encoding!r} or json")


class _Relay:
    """The public port: accepts both subprotocols and relays each
    connection, frame by frame, to the SDK's server on a loopback port."""

    def __init__(self, host: str, port: int, upstream_port: int) -> None:
        self.upstream = f"ws://127.0.0.1:{upstream_port}"
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: Optional[BaseException] = None
        self.port = 0
        self.thread = threading.Thread(target=self._run, args=(host, port), daemon=True,
                                       name="nerve-foxglove-relay")
        self.thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise OSError(str(self._error))
        if not self._ready.is_set():
            raise OSError("the WebSocket relay did not start")

    def _run(self, host: str, port: int) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._start(host, port))
        except BaseException as e:  # reported to the constructor
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()

    async def _start(self, host: str, port: int) -> None:
        from websockets.asyncio.server import serve

        self.server = await serve(self._handle, host, port, subprotocols=list(SUBPROTOCOLS),
                                  max_size=None, compression=None, ping_interval=None)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _handle(self, client: Any) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        try:
            async with connect(self.upstream, subprotocols=["foxglove.sdk.v1"], max_size=None,
                               compression=None, ping_interval=None) as up:
                async def pipe(a: Any, b: Any) -> None:
                    try:
                        async for m in a:
                            await b.send(m)
                    except ConnectionClosed:
                        pass
                    finally:
                        await b.close()

                await asyncio.gather(pipe(client, up), pipe(up, client))
        except (OSError, ConnectionClosed):
            await client.close()

    def close(self) -> None:
        async def stop() -> None:
            self.server.close()
            await self.server.wait_closed()

        if self.loop.is_running():
            asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class Bridge:
    """Forwards channels matching ``patterns`` (all when empty) to a
    Foxglove WebSocket server on ``host``:``port`` (0: a free port)."""

    def __init__(self, patterns: Sequence[str] = (), host: str = "127.0.0.1", port: int = 8765,
                 quiet: bool = False) -> None:
        import foxglove
        from foxglove.websocket import Capability

        self._foxglove = foxglove
        self.patterns = list(patterns)
        self.quiet = quiet
        self.context = foxglove.Context()
        self.listener = _Listener(self)
        self.server = foxglove.start_server(
            name="nerve", host="127.0.0.1", port=0, context=self.context,
            capabilities=[Capability.ClientPublish], server_listener=self.listener,
            supported_encodings=["json", "cdr", "ros1", "protobuf", "flatbuffer", "cbor"])
        try:
            self.relay = _Relay(host, port, int(self.server.port))
        except OSError:
            self.server.stop()
            raise
        self.host = host
        self.links: Dict[str, _Link] = {}
        # Channels that could not be served, by their creation time.
        self._refused: Dict[str, Optional[int]] = {}
        self._offset = realtime_offset_ns()
        self._last_scan = 0.0
        self.scan()

    @property
    def port(self) -> int:
        return int(self.relay.port)

    def _advertise(self, name: str, info: nerve.ChannelInfo) -> None:
        if self._refused.get(name) == info.created_ns:
            return  # reported once; tried again only if re-created
        try:
            self._advertise_one(name, info)
        except Exception as e:  # one strange channel must not stop the others
            self._refused[name] = info.created_ns
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
        self.links[name] = _Link(ch, fox, info.created_ns)

    def _withdraw(self, name: str) -> None:
        link = self.links.pop(name)
        link.fox.close()  # type: ignore[attr-defined]
        link.ch.close()

    def scan(self) -> None:
        """Advertise new channels and withdraw removed ones."""
        self._last_scan = time.monotonic()
        infos = {i.name: i for i in nerve.list_channels()}
        wanted = set(select(self.patterns, infos.values()))
        for name in list(self.links):
            if name not in wanted or infos[name].created_ns != self.links[name].created:
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
                print(f"{PROG}: {chan_error(name, e)}; withdrawn", file=sys.stderr)
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
            link.fox.log(msg.data, log_time=msg.time_ns + self._offset)  # type: ignore[attr-defined]
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
        self.relay.close()
        self.server.stop()
        self.listener.close()


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
        bridge = Bridge(args.patterns, host=args.host, port=args.port, quiet=args.quiet)
    except (RuntimeError, OSError) as e:
        print(f"{PROG}: cannot serve on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1
    # The ready line (tests read the port from it).
    print(f"{PROG}: serving {plural(len(bridge.links), 'channel')} on ws://{args.host}:{bridge.port}; "
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
        print(f"{PROG}: forwarded {plural(fwd, 'message')}, {missed} missed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
