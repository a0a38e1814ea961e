"""nerve foxglove: serve channels live to the Foxglove app.

A WebSocket server of the Foxglove protocol (the ``foxglove-sdk`` package
implements it) advertises one Foxglove channel per nerve channel, topic =
channel name, with the message encoding and schema of its metadata (see
``_common.to_mcap``: json + JSON Schema, cdr + ros2msg, ros1 + ros1msg,
protobuf, ...). In Foxglove: *Open connection* -> *Foxglove WebSocket* ->
``ws://HOST:8765``.

Clients may speak the published ``foxglove.websocket.v1`` subprotocol or the
SDK's ``foxglove.sdk.v1``: the port accepts both and relays each connection
to the SDK's server, which listens on a loopback port of its own. That port
speaks TLS with a certificate made for the run that only the relay trusts
(no browser page can open a WebSocket there), and only connections that
introduce themselves with the process's secret (the relay's) may publish.

Who may connect, and what a client may do (docs/tools.md, "nerve
foxglove"):

- The server listens on 127.0.0.1 unless ``--host`` says otherwise; a
  listen address beyond loopback needs ``--token`` (or
  ``$NERVE_FOXGLOVE_TOKEN``), which every client must then present (in the
  URL, ``ws://HOST:PORT/?token=T``, or as ``Authorization: Bearer T``).
  ``--tls-cert``/``--tls-key`` serve ``wss://`` instead.
- A browser says which page opened the WebSocket in its ``Origin`` header;
  only Foxglove's own app origins and ``file://`` are accepted, plus those
  given with ``--allow-origin`` (``*``: any), so a web page in the
  operator's browser cannot reach the robot. ``null`` is refused unless
  ``--allow-origin null`` is given: browsers send it for a local file, but
  also for any page's sandboxed iframe. Clients that send no Origin (not
  browsers) are accepted.
- Client publishing is off unless ``--publish GLOB``: then a Foxglove panel
  (Publish, Teleop) that advertises a topic matching GLOB writes into the
  existing channel of that name; a channel that does not exist is created
  (from the client's encoding and schema) only with ``--create``. The
  encoding rules are ``nerve pub``'s: a message in the channel's own
  encoding is written as it is; a ``json`` message to a typed channel
  (cdr, ros1msg, protobuf) is encoded by the channel's schema; raw
  channels get the bytes as given. Messages that do not fit, and topics
  not allowed, are dropped with a log line.
- A client on this host (a loopback connection) publishes only into the
  channels its own user may write by their permission bits (its uid is
  that of its socket in /proc/net/tcp), so the server never lends its
  rights to another local user. Clients from other hosts are known only by
  the token and write the --publish channels with the server's rights.

Every message of a channel that a client subscribed to is forwarded, in
order (next-unseen reads; a ring overrun is counted and shown at exit);
channels nobody subscribed to are not read. Channels created later are
advertised when they appear, removed ones are withdrawn. Log time is the
commit time as wall-clock time.
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import hmac
import ipaddress
import json
import os
import secrets
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import nerve

from .. import options
from .._common import RAW, chan_error, from_mcap, plural, realtime_offset_ns, select, sigterm_as_interrupt, to_mcap
from ..codec import payload as codecs

#: The subprotocols a client may ask for: the published protocol's name and
#: the SDK's (the SDK's server accepts only the latter).
SUBPROTOCOLS = ("foxglove.websocket.v1", "foxglove.sdk.v1")

PROG = "nerve foxglove"
RESCAN_S = 1.0
#: The topic by which the relay's connections make themselves known to the
#: SDK's server (followed by a secret of this process), and the client
#: channel id it uses (taken out of clients' own advertisements).
RELAY_TOPIC = "/__nerve_relay__/"
RELAY_CHANNEL_ID = 0xFFFFFFFF
#: The environment variable that may hold the token (kept out of `ps`).
ENV_TOKEN = "NERVE_FOXGLOVE_TOKEN"
#: Origins a browser may open the WebSocket from by default: Foxglove's web
#: app and file:// (the desktop app). Not "null": a browser sends it for a
#: file:// page, but any web page can send it from a sandboxed iframe.
DEFAULT_ORIGINS = ("https://app.foxglove.dev", "https://studio.foxglove.dev", "file://")


@dataclass
class Access:
    """Who may connect and what a client may write (see the module doc)."""

    publish: Sequence[str] = ()
    create: bool = False
    origins: Sequence[str] = DEFAULT_ORIGINS
    token: Optional[str] = None

    def origin_ok(self, origin: Optional[str]) -> bool:
        if origin is None:
            return True  # not a browser: nothing to check (the token is)
        return "*" in self.origins or origin in self.origins

    def token_ok(self, presented: Optional[str]) -> bool:
        if self.token is None:
            return True
        return presented is not None and hmac.compare_digest(presented.encode(), self.token.encode())

    def may_publish(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, g) for g in self.publish)


def loopback_cert() -> Tuple[bytes, bytes]:
    """A self-signed certificate for 127.0.0.1 and its key (PEM), made for
    this run with openssl in a private temporary directory."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        try:
            r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                "ec_paramgen_curve:prime256v1", "-nodes", "-days", "3650",
                                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                                "-keyout", f"{d}/key.pem", "-out", f"{d}/cert.pem"],
                               capture_output=True, text=True, timeout=60)
        except OSError as e:
            raise RuntimeError(f"openssl is needed (Debian: openssl): {e}") from None
        if r.returncode != 0:
            raise RuntimeError(f"openssl could not make the loopback certificate: {r.stderr.strip()}")
        with open(f"{d}/cert.pem", "rb") as c, open(f"{d}/key.pem", "rb") as k:
            return c.read(), k.read()


def _proc_addr(addr: Any) -> str:
    """(ip, port, ...) as /proc/net/tcp{,6} writes it: the address as
    native-endian 32-bit words in hex, a colon, the port in hex."""
    import socket
    import struct

    ip, port = str(addr[0]), int(addr[1])
    if ":" in ip:
        raw = socket.inet_pton(socket.AF_INET6, ip)
    else:
        raw = socket.inet_aton(ip)
    words = struct.unpack(f"={len(raw) // 4}I", raw)
    return "".join(f"{w:08X}" for w in words) + f":{port:04X}"


def loopback_peer_uid(server: Any, client: Any) -> Optional[int]:
    """The user of the process at the other end of a loopback TCP
    connection: the uid of the client's socket in /proc/net/tcp (or tcp6),
    found by its address (the client's) and remote address (ours). None
    when it cannot be found."""
    want = (_proc_addr(client), _proc_addr(server))
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f, None)
                for line in f:
                    cols = line.split()
                    if len(cols) > 7 and (cols[1], cols[2]) == want:
                        return int(cols[7])
        except (OSError, ValueError):
            continue
    return None


def user_may_write(uid: int, name: str) -> Optional[str]:
    """Why user ``uid`` may not write channel ``name`` by its permission
    bits (owner, group -- the user's groups -- or others), or None. A
    channel that does not exist may be made by anyone (/dev/shm is for
    all); --create decides."""
    import pwd
    import stat as st_

    try:
        st = os.stat(nerve.path(name))
    except (FileNotFoundError, nerve.Error):
        return None  # none yet, or a bad name (opening it says why)
    except OSError as e:
        return f"cannot stat the channel: {e}"
    if uid == 0:
        return None
    if st.st_uid == uid:
        ok = bool(st.st_mode & st_.S_IWUSR)
    else:
        try:
            pw = pwd.getpwuid(uid)
            groups = set(os.getgrouplist(pw.pw_name, pw.pw_gid))
        except KeyError:
            groups = set()
        ok = bool(st.st_mode & (st_.S_IWGRP if st.st_gid in groups else st_.S_IWOTH))
    if ok:
        return None
    try:
        who = pwd.getpwuid(uid).pw_name
    except KeyError:
        who = f"uid {uid}"
    return f"the connecting user {who} may not write it (mode {st.st_mode & 0o777:o})"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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

    def __init__(self, bridge: "FoxgloveBridge") -> None:
        self.bridge = bridge
        self.lock = threading.Lock()
        self.pubs: Dict[Tuple[int, int], _Pub] = {}
        # The SDK's server listens on a loopback port of its own, which any
        # local process could find and use directly, past the relay's
        # checks. The relay opens each of its connections by advertising
        # RELAY_TOPIC/<secret>; only clients that did may publish.
        self.secret = secrets.token_hex(16)
        self.relayed: set = set()

    def _log(self, msg: str) -> None:
        if not self.bridge.quiet:
            print(f"{PROG}: {msg}", file=sys.stderr, flush=True)

    def on_client_advertise(self, client: Any, channel: Any) -> None:
        with self.lock:
            if channel.topic.startswith(RELAY_TOPIC):
                if hmac.compare_digest(channel.topic.encode(), f"{RELAY_TOPIC}{self.secret}".encode()):
                    self.relayed.add(client.id)
                return
            if client.id not in self.relayed:
                self.bridge.refused += 1
                self._log(f"client publishing on {channel.topic!r} refused: the client did not come "
                          "through the server's port")
                return
            self.pubs[(client.id, channel.id)] = self._open(channel)

    def _open(self, c: Any) -> _Pub:
        name = c.topic.lstrip("/")
        enc = c.encoding or ""
        access = self.bridge.access
        if not access.may_publish(name):
            self.bridge.refused += 1
            self._log(f"client publishing on {c.topic!r} refused: not allowed by --publish")
            return _Pub(name, None, None, enc, "")
        try:
            try:
                ch = nerve.open(name, write=True)
            except nerve.ChannelNotFound:
                if not access.create:
                    self.bridge.refused += 1
                    self._log(f"client publishing on {c.topic!r} refused: no such channel "
                              "(--create makes it)")
                    return _Pub(name, None, None, enc, "")
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

    def __init__(self, host: str, port: int, upstream_port: int, access: Access,
                 tls: Optional[ssl.SSLContext] = None, log: Any = None, refused: Any = None,
                 secret: str = "", upstream_cert: bytes = b"") -> None:
        self.upstream = f"wss://127.0.0.1:{upstream_port}"
        # Trusts exactly the SDK server's certificate of this run.
        self.upstream_tls = ssl.create_default_context(cadata=upstream_cert.decode())
        self.secret = secret
        self.access = access
        self.tls = tls
        self.log = log or (lambda msg: None)
        self.refused = refused or (lambda: None)
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
                                  max_size=None, compression=None, ping_interval=None,
                                  process_request=self._check, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]

    def _check(self, conn: Any, request: Any) -> Any:
        """Refuse, before the WebSocket handshake, a browser page of another
        origin and a client without the token."""
        from http import HTTPStatus
        from urllib.parse import parse_qs, urlsplit

        origin = request.headers.get("Origin")
        if not self.access.origin_ok(origin):
            self.log(f"refused a connection from Origin {origin!r} (see --allow-origin)")
            return conn.respond(HTTPStatus.FORBIDDEN, f"Origin {origin} is not allowed\n")
        token = (parse_qs(urlsplit(request.path).query).get("token") or [None])[0]
        auth = request.headers.get("Authorization") or ""
        if token is None and auth.startswith("Bearer "):
            token = auth[len("Bearer "):]
        if not self.access.token_ok(token):
            self.log("refused a connection without the right token")
            return conn.respond(HTTPStatus.UNAUTHORIZED, "a token is needed: ws://HOST:PORT/?token=...\n")
        return None

    async def _handle(self, client: Any) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        # A client on this host is a user of this host: it may publish only
        # into channels that user could write itself (the channels'
        # permission bits hold through the server). Others (beyond
        # loopback, admitted by the token) publish with the server's rights
        # on the --publish channels.
        uid: Optional[int] = None
        local = is_loopback(str(client.remote_address[0]))
        if local:
            uid = loopback_peer_uid(client.local_address, client.remote_address)
        denied: set = set()

        async def filtered(m: Any) -> Optional[Any]:
            """The client's frame as it goes to the server: advertisements of
            channels this client may not write are taken out (and the client
            told), their messages dropped."""
            if isinstance(m, (bytes, bytearray)):
                if len(m) >= 5 and m[0] == 1 and int.from_bytes(m[1:5], "little") in denied:
                    return None
                return m
            try:
                obj = json.loads(m)
            except ValueError:
                return m
            if not isinstance(obj, dict) or obj.get("op") != "advertise" or not isinstance(obj.get("channels"), list):
                return m
            keep = []
            for c in obj["channels"]:
                topic = str(c.get("topic", "")) if isinstance(c, dict) else ""
                why = None
                if isinstance(c, dict) and c.get("id") == RELAY_CHANNEL_ID:
                    why = f"client channel id {RELAY_CHANNEL_ID} is reserved"
                elif not self.access.may_publish(topic.lstrip("/")):
                    why = "not allowed by --publish"
                elif local:
                    why = ("cannot tell which user connected" if uid is None
                           else user_may_write(uid, topic.lstrip("/")))
                if why is None:
                    keep.append(c)
                    continue
                if isinstance(c, dict):
                    denied.add(c.get("id"))
                self.refused()
                self.log(f"client publishing on {topic!r} refused: {why}")
                await client.send(json.dumps({"op": "status", "level": 2,
                                              "message": f"publishing on {topic!r} refused: {why}"}))
            if not keep:
                return None
            obj["channels"] = keep
            return json.dumps(obj)

        try:
            async with connect(self.upstream, subprotocols=["foxglove.sdk.v1"], max_size=None, ssl=self.upstream_tls,
                               compression=None, ping_interval=None) as up:
                if self.access.publish:
                    # Known to the listener as a checked connection (the SDK
                    # handles one connection's messages in order).
                    hello = {"id": RELAY_CHANNEL_ID, "topic": f"{RELAY_TOPIC}{self.secret}",
                             "encoding": "json", "schemaName": ""}
                    await up.send(json.dumps({"op": "advertise", "channels": [hello]}))
                    await up.send(json.dumps({"op": "unadvertise", "channelIds": [RELAY_CHANNEL_ID]}))
                async def pipe(a: Any, b: Any, check: bool) -> None:
                    try:
                        async for m in a:
                            if check:
                                m = await filtered(m)
                                if m is None:
                                    continue
                            await b.send(m)
                    except ConnectionClosed:
                        pass
                    finally:
                        await b.close()

                await asyncio.gather(pipe(client, up, bool(self.access.publish)), pipe(up, client, False))
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


class FoxgloveBridge:
    """Forwards channels matching ``patterns`` (all when empty) to a
    Foxglove WebSocket server on ``host``:``port`` (0: a free port)."""

    def __init__(self, patterns: Sequence[str] = (), host: str = "127.0.0.1", port: int = 8765,
                 quiet: bool = False, access: Optional[Access] = None,
                 tls: Optional[ssl.SSLContext] = None) -> None:
        import foxglove
        from foxglove.websocket import Capability

        self._foxglove = foxglove
        self.patterns = list(patterns)
        self.quiet = quiet
        self.access = access or Access()
        self.refused = 0  # client channels refused (not allowed, or not there)
        self.context = foxglove.Context()
        self.listener = _Listener(self)
        # Client publishing is offered only when some channel may be written.
        caps = [Capability.ClientPublish] if self.access.publish else []
        # The SDK's own port speaks TLS with a certificate made for this run
        # and known only to the relay: a web page that finds the port cannot
        # open a WebSocket to it (the browser refuses the certificate).
        up_cert, up_key = loopback_cert()
        self.server = foxglove.start_server(
            name="nerve", host="127.0.0.1", port=0, context=self.context,
            capabilities=caps, server_listener=self.listener,
            supported_encodings=["json", "cdr", "ros1", "protobuf", "flatbuffer", "cbor"],
            tls_cert=up_cert, tls_key=up_key)
        try:
            self.relay = _Relay(host, port, int(self.server.port), self.access, tls,
                                log=self.listener._log, refused=self._count_refused,
                                secret=self.listener.secret, upstream_cert=up_cert)
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

    def _count_refused(self) -> None:
        with self.listener.lock:
            self.refused += 1

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
    options.add_patterns(p, "all")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; another one needs --token)")
    p.add_argument("-p", "--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    p.add_argument("--publish", action="append", default=[], metavar="GLOB",
                   help="let clients write the existing channels matching GLOB (none unless given)")
    p.add_argument("--create", action="store_true",
                   help="let clients create the channels matching --publish that do not exist")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="also accept browser pages of this Origin (e.g. http://localhost:8080; "
                        "'*': any; 'null': a local file's page, which any site's sandboxed "
                        "iframe can also claim); Foxglove's app and file:// are accepted")
    p.add_argument("--token", default=None,
                   help=f"clients must present this token (ws://HOST:PORT/?token=T or "
                        f"'Authorization: Bearer T'); default ${ENV_TOKEN}")
    p.add_argument("--tls-cert", metavar="PEM", help="serve wss:// with this certificate (chain)")
    p.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    options.add_quiet(p, "no client log lines and no summary")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    token = args.token if args.token is not None else (os.environ.get(ENV_TOKEN) or None)
    if token is not None and not token:
        p.error("--token must not be empty")
    if not is_loopback(args.host) and token is None:
        p.error(f"listening on {args.host} (beyond loopback) needs --token or ${ENV_TOKEN}")
    if args.create and not args.publish:
        p.error("--create applies to the channels of --publish")
    if bool(args.tls_cert) != bool(args.tls_key):
        p.error("--tls-cert and --tls-key go together")
    tls = None
    if args.tls_cert:
        try:
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.load_cert_chain(args.tls_cert, args.tls_key)
        except (OSError, ssl.SSLError) as e:
            print(f"{PROG}: cannot use --tls-cert/--tls-key: {e}", file=sys.stderr)
            return 2
    access = Access(publish=args.publish, create=args.create,
                    origins=(*DEFAULT_ORIGINS, *args.allow_origin), token=token)
    sigterm_as_interrupt()
    try:
        bridge = FoxgloveBridge(args.patterns, host=args.host, port=args.port, quiet=args.quiet,
                        access=access, tls=tls)
    except (RuntimeError, OSError) as e:
        why = str(e)
        if "address already in use" in why.lower():
            why = "the port is taken (another nerve foxglove?); choose another with --port"
        print(f"{PROG}: cannot serve on {args.host}:{args.port}: {why}", file=sys.stderr)
        return 1
    # The ready line (tests read the port from it).
    scheme = "wss" if tls else "ws"
    what = f"clients may write {', '.join(args.publish)}" if args.publish else "read-only"
    print(f"{PROG}: serving {plural(len(bridge.links), 'channel')} on {scheme}://{args.host}:{bridge.port}; "
          f"{what}; Ctrl-C to stop", file=sys.stderr, flush=True)
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
        print(f"{PROG}: forwarded {plural(fwd, 'message')}, {missed} missed; {bridge.refused} client "
              "channels refused", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
