"""ROS 1 peers on raw sockets for the hostile tests (no rospy): a
publisher (a stdlib XML-RPC slave answering requestTopic, a TCPROS server
sending the connection header and messages it is told to), a subscriber
(requestTopic, connect, header, messages) and the bridge's vital signs
(VmRSS, thread count, listening sockets) from /proc. Everything binds
127.0.0.1; every wait has a bound."""

from __future__ import annotations

import os
import socket
import struct
import threading
import xmlrpc.client
import xmlrpc.server
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

# std_msgs/String, as ROS announces it.
STRING_TYPE = "std_msgs/String"
STRING_MD5 = "992ce8a1687cec8c8bd883ec73ca41d1"
STRING_DEF = "string data\n"


def string_msg(text: str) -> bytes:
    b = text.encode()
    return struct.pack("<I", len(b)) + b


def header(fields: Dict[str, str]) -> bytes:
    body = b"".join(struct.pack("<I", len(f)) + f
                    for f in (f"{k}={v}".encode() for k, v in fields.items()))
    return struct.pack("<I", len(body)) + body


def recv_exact(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(min(n - len(out), 1 << 16))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return bytes(out)


def read_header(s: socket.socket, limit: int = 1 << 22) -> Dict[str, str]:
    (n,) = struct.unpack("<I", recv_exact(s, 4))
    assert n <= limit, f"header of {n} bytes"
    data, i, out = recv_exact(s, n), 0, {}
    while i < n:
        (flen,) = struct.unpack_from("<I", data, i)
        k, _, v = data[i + 4:i + 4 + flen].partition(b"=")
        out[k.decode()] = v.decode()
        i += 4 + flen
    return out


def proxy(uri: str, timeout: float = 5.0) -> xmlrpc.client.ServerProxy:
    class T(xmlrpc.client.Transport):
        def make_connection(self, host):  # type: ignore[no-untyped-def]
            c = super().make_connection(host)
            c.timeout = timeout
            return c

    return xmlrpc.client.ServerProxy(uri, transport=T())


class _Slave(xmlrpc.server.SimpleXMLRPCServer):
    allow_reuse_address = True


class FakePublisher:
    """Publishes ``topic`` with the connection header ``fields`` (the
    callerid is added); messages go to every subscriber connected."""

    def __init__(self, master: str, topic: str, fields: Dict[str, Optional[str]],
                 caller: str) -> None:
        self.master, self.topic, self.caller = master, topic, caller
        self.fields = {k: v for k, v in fields.items() if v is not None}
        self.fields.setdefault("callerid", caller)
        self.conns: List[socket.socket] = []
        self.raw_header: Optional[bytes] = None  # sent instead of the fields
        self.lock = threading.Lock()
        self.tcp = socket.socket()
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(16)
        self.tcp.settimeout(0.5)
        self.slave = _Slave(("127.0.0.1", 0), logRequests=False, allow_none=True)
        self.slave.timeout = 0.5
        port = self.tcp.getsockname()[1]
        self.slave.register_function(lambda c, t, p: [1, "", ["TCPROS", "127.0.0.1", port]],
                                     "requestTopic")
        self.slave.register_function(lambda *a: [1, "", 0], "publisherUpdate")
        self.slave.register_function(lambda *a: [1, "", 1], "getPid")
        self.uri = f"http://127.0.0.1:{self.slave.server_address[1]}/"
        self.stopped = threading.Event()
        self.threads = [threading.Thread(target=self._serve_xmlrpc, daemon=True),
                        threading.Thread(target=self._accept, daemon=True)]
        for t in self.threads:
            t.start()

    def _serve_xmlrpc(self) -> None:
        while not self.stopped.is_set():
            self.slave.handle_request()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                c, _ = self.tcp.accept()
            except (socket.timeout, OSError):
                continue
            try:
                c.settimeout(5)
                read_header(c)
                c.sendall(self.raw_header or header(self.fields))
            except (OSError, ConnectionError, AssertionError):
                c.close()
                continue
            with self.lock:
                self.conns.append(c)

    def register(self) -> None:
        t = self.fields.get("type") or "*"
        if not t.isprintable():
            t = "*"  # the master's XML would not carry it
        if proxy(self.master).registerPublisher(self.caller, self.topic, t, self.uri)[0] != 1:
            # The master checks the form of a type (a/b/c is refused);
            # the lie is in the connection header.
            proxy(self.master).registerPublisher(self.caller, self.topic, "*", self.uri)

    def connected(self) -> int:
        with self.lock:
            return len(self.conns)

    def send_raw(self, data: bytes) -> int:
        """Send bytes to every subscriber; how many took them."""
        ok = 0
        with self.lock:
            for c in list(self.conns):
                try:
                    c.sendall(data)
                    ok += 1
                except OSError:
                    self.conns.remove(c)
                    c.close()
        return ok

    def send(self, msg: bytes) -> int:
        return self.send_raw(struct.pack("<I", len(msg)) + msg)

    def close(self) -> None:
        try:
            proxy(self.master, 2).unregisterPublisher(self.caller, self.topic, self.uri)
        except (OSError, xmlrpc.client.Error):
            pass
        self.stopped.set()
        for t in self.threads:
            t.join(3)
        self.slave.server_close()
        self.tcp.close()
        with self.lock:
            for c in self.conns:
                c.close()
            self.conns.clear()


class FakeSubscriber:
    """Subscribes to ``topic`` at a node's slave API, as a TCPROS
    subscriber on a raw socket."""

    def __init__(self, node_uri: str, topic: str, caller: str, md5: str = "*",
                 timeout: float = 5.0) -> None:
        code, msg, proto = proxy(node_uri, timeout).requestTopic(caller, topic, [["TCPROS"]])
        assert code == 1, msg
        self.sock = socket.create_connection((proto[1], proto[2]), timeout=timeout)
        self.sock.sendall(header({"callerid": caller, "topic": topic, "md5sum": md5,
                                  "type": "*", "tcp_nodelay": "1"}))
        self.header = read_header(self.sock)

    def recv(self, timeout: float = 5.0) -> bytes:
        self.sock.settimeout(timeout)
        (n,) = struct.unpack("<I", recv_exact(self.sock, 4))
        return recv_exact(self.sock, n)

    def close(self) -> None:
        self.sock.close()


def vitals(pid: int) -> Tuple[int, int]:
    """(VmRSS in bytes, threads) of a process."""
    rss = threads = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return rss, threads


def listening(pid: int) -> Set[Tuple[str, int]]:
    """(address, port) of every TCP socket process ``pid`` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = set()
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] != "0A" or f[9] not in inodes:  # 0A: LISTEN
                continue
            addr, port = f[1].split(":")
            raw = bytes.fromhex(addr)
            if v6:
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                host = socket.inet_ntop(socket.AF_INET6, raw)
            else:
                host = socket.inet_ntop(socket.AF_INET, raw[::-1])
            out.add((host, int(port, 16)))
    return out
