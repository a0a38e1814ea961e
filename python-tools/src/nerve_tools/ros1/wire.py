"""The two network protocols of a ROS 1 node, as ``nerve ros1`` speaks
them: the XML-RPC slave API (and calls to the master) and TCPROS, on
asyncio, with every size, count and wait bounded.

Written from the ROS wiki's descriptions (ROS/Master_Slave_APIs,
ROS/TCPROS, ROS/Connection Header) and the XML-RPC specification. The
bridge carries these itself instead of running rospy's network code,
because rospy's edge cannot be bounded from the outside: its XML-RPC
server reads a request body of any length into memory, starts a thread
per request and per publisher URI of a ``publisherUpdate``, reads a TCPROS
handshake inside its accept thread (one idle connection stalls every
other subscriber) and a message of the length its 4-byte field claims
before any check, and it shares one XML-RPC connection between threads.
Here one event loop owns every socket, each connection has one owner
and a deadline, and nothing is read before its length was checked.

Invariants (each checked where the bytes arrive):

- an HTTP head is at most ``MAX_HTTP_HEAD`` bytes and a request body at
  most ``MAX_XMLRPC_REQUEST`` (a response ``max_response``), read within
  one deadline per connection; bodies without a Content-Length are
  refused (requests) or read up to the bound (responses);
- an XML-RPC document with a DOCTYPE or an entity declaration is refused
  before expansion, and one nested deeper than ``MAX_XML_DEPTH`` elements
  is refused while it is parsed;
- a TCPROS connection header is at most its bound, read within
  ``IO_TIMEOUT``; its fields must each fit inside it and be ``key=value``;
- every connection is opened with a deadline and owned by one task; no
  XML-RPC connection is reused (one call, one connection, as rospy's
  server closes after each request anyway).
"""

from __future__ import annotations

import asyncio
import struct
import urllib.parse
import xml.parsers.expat
import xmlrpc.client
from typing import Any, Awaitable, Callable, Dict, Optional, Tuple

#: Longest HTTP request/status line plus headers.
MAX_HTTP_HEAD = 16 << 10
#: Largest XML-RPC request body the slave API reads (a publisherUpdate
#: listing some 10,000 publishers fits).
MAX_XMLRPC_REQUEST = 1 << 20
#: Deepest element nesting of an XML-RPC document (ROS's deepest, a
#: getTopicTypes or getSystemState answer, is about 15).
MAX_XML_DEPTH = 64
#: Longest message definition a publisher may announce.
MAX_DEFINITION = 1 << 20
#: Longest TCPROS connection header (a definition and the other fields).
MAX_HEADER = MAX_DEFINITION + (64 << 10)
#: Deadline of a connection's handshake, of an XML-RPC request or call.
IO_TIMEOUT = 5.0


class WireError(Exception):
    """A peer broke the protocol or a bound; the text says how."""


def esc(value: Any, limit: int = 120) -> str:
    """A peer-supplied value as printable text: control characters (C0,
    DEL, C1) escaped as ``\\xNN``, and anything longer than ``limit``
    characters cut, with its length said."""
    s = value if isinstance(value, str) else repr(value)
    out = []
    for ch in s[:limit]:
        o = ord(ch)
        if o < 0x20 or 0x7F <= o < 0xA0:
            out.append(f"\\x{o:02x}")
        elif ch == "\\":
            out.append("\\\\")
        else:
            out.append(ch)
    if len(s) > limit:
        out.append(f"... ({len(s)} characters)")
    return "".join(out)


# ---- XML-RPC documents ------------------------------------------------


def xml_loads(body: bytes) -> Tuple[tuple, Optional[str]]:
    """(params, method name or None) of an XML-RPC document. Raises
    WireError on a DOCTYPE, an entity declaration, nesting deeper than
    MAX_XML_DEPTH or malformed XML, and xmlrpc.client.Fault for a fault
    response."""
    if b"<!DOCTYPE" in body or b"<!ENTITY" in body:
        raise WireError("XML with a DOCTYPE or entity declaration")
    target = xmlrpc.client.Unmarshaller(use_datetime=False, use_builtin_types=True)
    target.xml(None, None)  # expat hands over str: nothing to decode
    parser = xml.parsers.expat.ParserCreate(None, None)
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    depth = 0

    def start(tag: str, attrs: Any) -> None:
        nonlocal depth
        depth += 1
        if depth > MAX_XML_DEPTH:
            raise WireError(f"XML nested deeper than {MAX_XML_DEPTH} elements")
        target.start(tag, attrs)

    def end(tag: str) -> None:
        nonlocal depth
        depth -= 1
        target.end(tag)

    def refuse(*_: Any) -> None:
        raise WireError("XML with a DOCTYPE or entity declaration")

    parser.buffer_text = True
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = target.data
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    try:
        parser.Parse(body, True)
        params = target.close()
    except WireError:
        raise
    except xmlrpc.client.Fault:
        raise
    except (xml.parsers.expat.ExpatError, xmlrpc.client.ResponseError, ValueError,
            TypeError, IndexError, KeyError, OverflowError) as e:
        raise WireError(f"malformed XML-RPC: {e}") from None
    return params, target.getmethodname()


# ---- HTTP -----------------------------------------------------------------


async def _read_http(reader: asyncio.StreamReader, max_body: int,
                     need_length: bool) -> Tuple[str, Dict[str, str], bytes]:
    """The first line, headers (lower-case names) and body of one HTTP
    message, each within its bound."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise WireError(f"HTTP head over {MAX_HTTP_HEAD} bytes") from None
    except asyncio.IncompleteReadError:
        raise WireError("connection closed in the HTTP head") from None
    lines = head.decode("latin-1").split("\r\n")
    headers: Dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        k, sep, v = line.partition(":")
        if not sep:
            raise WireError("malformed HTTP header line")
        headers[k.strip().lower()] = v.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise WireError("chunked HTTP bodies are not taken")
    length = headers.get("content-length")
    if length is None:
        if need_length:
            raise WireError("HTTP request without Content-Length")
        body = await reader.read(max_body + 1)
        while body and len(body) <= max_body:
            more = await reader.read(max_body + 1 - len(body))
            if not more:
                break
            body += more
        if len(body) > max_body:
            raise WireError(f"HTTP body over {max_body} bytes")
        return lines[0], headers, body
    if not length.isdigit() or len(length) > 12:
        raise WireError("malformed Content-Length")
    n = int(length)
    if n > max_body:
        raise WireError(f"HTTP body of {n} bytes, over {max_body}")
    try:
        body = await reader.readexactly(n)
    except asyncio.IncompleteReadError:
        raise WireError("connection closed in the HTTP body") from None
    return lines[0], headers, body


def split_uri(uri: str) -> Tuple[str, int, str]:
    """(host, port, path) of an http:// URI; WireError otherwise."""
    if not isinstance(uri, str) or len(uri) > 1024:
        raise WireError("not an http URI")
    try:
        u = urllib.parse.urlsplit(uri)
        port = u.port
    except ValueError:
        raise WireError(f"malformed URI {esc(uri)}") from None
    if u.scheme != "http" or not u.hostname or port is None:
        raise WireError(f"not an http://HOST:PORT URI: {esc(uri)}")
    return u.hostname, port, u.path or "/"


async def xmlrpc_call(uri: str, method: str, *params: Any, timeout: float = IO_TIMEOUT,
                      max_response: int = 4 << 20) -> Any:
    """Call ``method`` at ``uri`` on a connection of its own, closed after
    the call, all within ``timeout``. Returns the single result value;
    WireError, OSError or asyncio.TimeoutError otherwise."""
    host, port, path = split_uri(uri)
    body = xmlrpc.client.dumps(params, method, allow_none=False).encode()
    writer: Optional[asyncio.StreamWriter] = None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, limit=MAX_HTTP_HEAD)
            writer.write((f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                          f"User-Agent: nerve-ros1\r\nContent-Type: text/xml\r\n"
                          f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
                         + body)
            await writer.drain()
            status, _, data = await _read_http(reader, max_response, need_length=False)
    finally:
        if writer is not None:
            writer.close()
    parts = status.split(" ", 2)
    if len(parts) < 2 or parts[1] != "200":
        raise WireError(f"HTTP status {esc(status, 60)}")
    try:
        result, _ = xml_loads(data)
    except xmlrpc.client.Fault as e:
        raise WireError(f"XML-RPC fault {e.faultCode}: {esc(e.faultString)}") from None
    if len(result) != 1:
        raise WireError("XML-RPC response without one value")
    return result[0]


Handler = Callable[..., Any]


async def serve_quietly(handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
                        reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Run one connection's handler; when the server stops and cancels
    it, close the connection without the traceback asyncio would log for
    a cancelled handler."""
    try:
        await handler(reader, writer)
    except asyncio.CancelledError:
        writer.close()


class XmlRpcServer:
    """An XML-RPC server for a fixed table of methods: one request per
    connection (answered, then closed, as HTTP/1.0), at most ``max_conns``
    connections at once (more are closed at once), each read and
    answered within IO_TIMEOUT. ``methods`` maps a name to (the types of
    the parameters, the handler); a call with other parameters is
    answered with a ROS error triple (-1) and the handler is not run;
    a handler takes any further parameters (``*rest``)."""

    def __init__(self, methods: Dict[str, Tuple[Tuple[type, ...], Handler]],
                 max_conns: int = 64) -> None:
        self.methods = methods
        self.max_conns = max_conns
        self.active = 0
        self.server: Optional[asyncio.AbstractServer] = None
        self.refused = 0

    async def start(self, host: Optional[str]) -> int:
        self.server = await asyncio.start_server(self._serve, host, 0, limit=MAX_HTTP_HEAD,
                                                 reuse_address=True)
        return self.server.sockets[0].getsockname()[1]

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_quietly(self._request, reader, writer)

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.active >= self.max_conns:
            self.refused += 1
            writer.close()
            return
        self.active += 1
        try:
            async with asyncio.timeout(IO_TIMEOUT):
                try:
                    line, _, body = await _read_http(reader, MAX_XMLRPC_REQUEST, need_length=True)
                    if not line.startswith("POST "):
                        raise WireError("not a POST")
                    params, method = xml_loads(body)
                    out = self._dispatch(method or "", params)
                except (WireError, xmlrpc.client.Fault) as e:
                    out = xmlrpc.client.dumps(xmlrpc.client.Fault(-32700, str(e)),
                                              methodresponse=True)
                except (TypeError, ValueError, OverflowError) as e:  # an answer not marshallable
                    out = xmlrpc.client.dumps(xmlrpc.client.Fault(-32603, f"internal error: {e}"),
                                              methodresponse=True)
                data = out.encode()
                writer.write(b"HTTP/1.0 200 OK\r\nServer: nerve-ros1\r\n"
                             b"Content-Type: text/xml\r\nContent-Length: %d\r\n\r\n" % len(data)
                             + data)
                await writer.drain()
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            self.active -= 1
            writer.close()

    def _dispatch(self, method: str, params: tuple) -> str:
        entry = self.methods.get(method)
        if entry is None:
            return xmlrpc.client.dumps(xmlrpc.client.Fault(-32601, f"no method {esc(method, 60)}"),
                                       methodresponse=True)
        types, fn = entry
        if len(params) < len(types) or not all(isinstance(p, t) for p, t in zip(params, types)):
            value: Any = [-1, f"{method}: bad parameters", 0]
        else:
            value = fn(*params)
        return xmlrpc.client.dumps((value,), methodresponse=True, allow_none=False)


# ---- TCPROS ---------------------------------------------------------------


def encode_header(fields: Dict[str, str]) -> bytes:
    """A TCPROS connection header: a 4-byte little-endian length, then
    for each field a 4-byte length and ``key=value``."""
    parts = []
    for k, v in fields.items():
        f = f"{k}={v}".encode()
        parts.append(struct.pack("<I", len(f)) + f)
    body = b"".join(parts)
    return struct.pack("<I", len(body)) + body


def decode_header(data: bytes) -> Dict[str, str]:
    """The fields of a connection header's body; WireError if a field
    runs past the end or is not key=value."""
    fields: Dict[str, str] = {}
    i, n = 0, len(data)
    while i < n:
        if n - i < 4:
            raise WireError("connection header ends inside a field length")
        (flen,) = struct.unpack_from("<I", data, i)
        i += 4
        if flen > n - i:
            raise WireError("connection header field runs past the header")
        k, sep, v = data[i:i + flen].partition(b"=")
        i += flen
        if not sep or not k:
            raise WireError("connection header field without key=value")
        fields[k.decode("utf-8", "replace")] = v.decode("utf-8", "replace")
    return fields


async def read_header(reader: asyncio.StreamReader, max_len: int = MAX_HEADER) -> Dict[str, str]:
    """Read one connection header, refusing a length over ``max_len``
    before reading it. The caller bounds the time."""
    try:
        (n,) = struct.unpack("<I", await reader.readexactly(4))
        if n > max_len:
            raise WireError(f"connection header of {n} bytes, over {max_len}")
        return decode_header(await reader.readexactly(n))
    except asyncio.IncompleteReadError:
        raise WireError("connection closed in the connection header") from None

