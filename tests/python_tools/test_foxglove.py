"""nerve foxglove, tested with a real WebSocket client (the `websockets`
package) speaking the Foxglove WebSocket protocol: it receives the
advertisements, subscribes, and gets the messages."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

import pytest
import websockets

import nerve
from nerve_tools.codec import schemas

from conftest import start

IMU = "sensor_msgs/msg/Imu"
SUBPROTOCOL = "foxglove.sdk.v1"


async def _next_op(ws, op: str, timeout: float = 30.0) -> dict:
    """The next JSON message with this op (others are skipped)."""
    while True:
        m = await asyncio.wait_for(ws.recv(), timeout)
        if isinstance(m, str):
            obj = json.loads(m)
            if obj.get("op") == op:
                return obj


def test_foxglove_advertises_and_streams(name) -> None:
    imu_ch, js_ch, late = name("imu"), name("pose"), name("late")
    # Rings that hold every message the test may put (1000 each): a server
    # descheduled for seconds on a loaded host is never lapped, so "0
    # missed" and the unbroken runs below hold by the contract.
    nerve.create(imu_ch, slots=1024, size=1 << 20, **schemas.channel_options(IMU)).close()
    nerve.create(js_ch, slots=1024, size=1 << 20, **schemas.channel_options(
        "demo.Pose", "json", {"type": "object", "properties": {"x": {"type": "number"}}})).close()
    prefix = imu_ch.rsplit("-", 2)[0]
    proc, line = start("foxglove", f"{prefix}-*", "--port", "0", ready="serving")
    port = int(line.split("ws://127.0.0.1:")[1].split(";")[0])

    async def client() -> None:
        async with websockets.connect(f"ws://127.0.0.1:{port}", subprotocols=[SUBPROTOCOL]) as ws:
            info = await _next_op(ws, "serverInfo")
            assert "cdr" in info["supportedEncodings"]
            chans = {}
            while len(chans) < 2:
                for c in (await _next_op(ws, "advertise"))["channels"]:
                    chans[c["topic"]] = c
            ci, cj = chans[imu_ch], chans[js_ch]
            assert (ci["encoding"], ci["schemaName"], ci["schemaEncoding"]) == ("cdr", IMU, "ros2msg")
            assert ci["schema"] == schemas.ros_schema(IMU).text.decode()
            assert (cj["encoding"], cj["schemaName"], cj["schemaEncoding"]) == ("json", "demo.Pose", "jsonschema")
            assert json.loads(cj["schema"])["properties"] == {"x": {"type": "number"}}
            await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                {"id": 7, "channelId": ci["id"]}, {"id": 8, "channelId": cj["id"]}]}))
            # The subscription takes effect asynchronously: put until the
            # first message arrives, then check that everything after it
            # arrives in order.
            got = {7: [], 8: []}
            with nerve.open(imu_ch, write=True) as wi, nerve.open(js_ch, write=True) as wj:
                i = 0
                while len(got[7]) < 5 or len(got[8]) < 5:
                    if i < 1000:
                        wi.put(schemas.encode(schemas.example(IMU, seq=i), IMU))
                        wj.put(schemas.encode_json({"x": i}))
                        i += 1
                    try:
                        m = await asyncio.wait_for(ws.recv(), 0.2 if i < 1000 else 30)
                    except asyncio.TimeoutError:
                        continue
                    if isinstance(m, bytes):
                        opcode, sub, _ts = struct.unpack_from("<BIQ", m)
                        assert opcode == 1  # MessageData
                        got[sub].append(m[13:])
            stamps = [schemas.decode(d, IMU).header.stamp.sec for d in got[7]]
            xs = [json.loads(d)["x"] for d in got[8]]
            assert stamps == list(range(stamps[0], stamps[0] + len(stamps)))
            assert xs == list(range(xs[0], xs[0] + len(xs)))
            # A channel created now is advertised; a removed one withdrawn.
            nerve.create(late, slots=8, size=4096).close()
            adv = await _next_op(ws, "advertise")
            assert [c["topic"] for c in adv["channels"]] == [late]
            assert adv["channels"][0]["encoding"] == "raw"
            nerve.unlink(js_ch)
            gone = await _next_op(ws, "unadvertise")
            assert gone["channelIds"] == [cj["id"]]

    try:
        asyncio.run(client())
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "forwarded" in err and ", 0 missed" in err


def _frame(cid: int, obj: object) -> bytes:
    """A client message frame (opcode 1) of channel cid carrying obj as JSON."""
    return struct.pack("<BI", 1, cid) + json.dumps(obj).encode()


async def _publish_until_echoed(ws) -> object:
    """Publish {"speed": i} on client channel 1 until the subscription
    echoes one of those messages back, and return it decoded (None after
    60 s). Advertisement and subscription take effect asynchronously; the
    bound is for a server stalled on a loaded host."""
    end = time.monotonic() + 60
    i = 0
    while time.monotonic() < end:
        i += 1
        await ws.send(_frame(1, {"speed": i}))
        try:
            m = await asyncio.wait_for(ws.recv(), 0.1)
        except asyncio.TimeoutError:
            continue
        if isinstance(m, bytes) and m[0] == 1:
            return json.loads(m[13:])
    return None


def test_foxglove_websocket_v1_client_subscribes_and_publishes(name) -> None:
    """A client asking only for the published subprotocol name,
    foxglove.websocket.v1, is accepted; it sees client publishing
    advertised, subscribes to a channel, and publishes into two channels:
    JSON into a json channel (as is) and JSON into a cdr channel (encoded
    by the channel's schema, the rules of `nerve pub`)."""
    js_ch, imu_ch, fresh = name("js"), name("imu"), name("fresh")
    nerve.create(js_ch, slots=64, size=1 << 16, type="demo.Cmd", encoding="json").close()
    nerve.create(imu_ch, slots=64, size=1 << 16, **schemas.channel_options(IMU)).close()
    prefix = js_ch.rsplit("-", 2)[0]
    proc, line = start("foxglove", f"{prefix}-*", "--port", "0", "--publish", f"{prefix}-*", "--create",
                       ready="serving")
    port = int(line.split("ws://127.0.0.1:")[1].split(";")[0])

    async def client() -> None:
        async with websockets.connect(f"ws://127.0.0.1:{port}",
                                      subprotocols=["foxglove.websocket.v1"]) as ws:
            assert ws.subprotocol == "foxglove.websocket.v1"
            info = await _next_op(ws, "serverInfo")
            assert "clientPublish" in info["capabilities"]
            chans = {}
            while len(chans) < 2:
                for c in (await _next_op(ws, "advertise"))["channels"]:
                    chans[c["topic"]] = c
            await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                {"id": 3, "channelId": chans[js_ch]["id"]}]}))
            await ws.send(json.dumps({"op": "advertise", "channels": [
                {"id": 1, "topic": js_ch, "encoding": "json", "schemaName": "demo.Cmd"},
                {"id": 2, "topic": imu_ch, "encoding": "json", "schemaName": IMU},
                {"id": 4, "topic": fresh, "encoding": "json", "schemaName": "demo.New"}]}))
            echoed = await _publish_until_echoed(ws)
            assert echoed is not None and "speed" in echoed
            await ws.send(_frame(2, {"header": {"frame_id": "teleop"},
                                    "linear_acceleration": {"z": 1.25}}))
            await ws.send(_frame(4, {"hello": 1}))
            # The cdr channel gets a CDR Imu (decoded by rosbags).
            with nerve.open(imu_ch) as r:
                msg = None
                for _ in range(1200):  # 60 s at least
                    msg = r.get(newest=True, repeat=True)
                    if msg is not None:
                        break
                    await asyncio.sleep(0.05)
                assert msg is not None
                imu = schemas.decode(msg.data, IMU)
                assert imu.header.frame_id == "teleop" and imu.linear_acceleration.z == 1.25
            for _ in range(1200):  # 60 s at least
                try:
                    with nerve.open(fresh) as r:
                        m2 = r.get(newest=True, repeat=True)
                        if m2 is not None:
                            break
                except nerve.ChannelNotFound:
                    pass
                await asyncio.sleep(0.05)
            assert json.loads(m2.data) == {"hello": 1}
            assert nerve.open(fresh).metadata.encoding == "json"

    try:
        asyncio.run(client())
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err


# A Foxglove client run as another user (nobody): connects with the given
# Origin and token, advertises the given topics for publishing and
# publishes one JSON message on each, then prints what it saw as JSON.
CLIENT = r"""
import asyncio, json, os, ssl, struct, sys, websockets
port, origin, token, topics = sys.argv[1], sys.argv[2] or None, sys.argv[3] or None, sys.argv[4:]
subprotocol = os.environ.get("FOX_SUBPROTOCOL", "foxglove.websocket.v1")
async def main():
    tls = None
    if os.environ.get("FOX_TLS_NOVERIFY"):  # a local program that trusts any certificate
        tls = ssl.create_default_context()
        tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    url = f"{'wss' if tls else 'ws'}://127.0.0.1:{port}/" + (f"?token={token}" if token else "")
    try:
        ws = await websockets.connect(url, subprotocols=[subprotocol], origin=origin, ssl=tls,
                                      open_timeout=10)
    except websockets.exceptions.InvalidStatus as e:
        return {"refused": e.response.status_code}
    except Exception as e:  # no WebSocket at all (a TLS port spoken to in clear)
        return {"error": type(e).__name__}
    async with ws:
        info = None
        while info is None:
            m = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if m.get("op") == "serverInfo":
                info = m
        chans = [{"id": i + 1, "topic": t, "encoding": "json", "schemaName": "demo.Cmd"}
                 for i, t in enumerate(topics)]
        status = []
        if chans:
            await ws.send(json.dumps({"op": "advertise", "channels": chans}))
            for _ in range(5):  # the server takes one connection's messages in order
                for c in chans:
                    await ws.send(struct.pack("<BI", 1, c["id"]) + b'{"velocity": 9.9, "via": %s}' % port.encode())
                await asyncio.sleep(0.05)
            # Read what the server said (also so that the close handshake
            # is not stuck behind unread messages): first, up to 60 s, until
            # the status the test expects (FOX_WAIT_STATUS) came, for a
            # server stalled on a loaded host; then until it is quiet.
            want = os.environ.get("FOX_WAIT_STATUS")
            loop = asyncio.get_running_loop()
            end = loop.time() + 60
            try:
                while True:
                    waiting = want is not None and not any(want in s for s in status)
                    left = end - loop.time() if waiting else 0.5
                    m = await asyncio.wait_for(ws.recv(), max(left, 0.001))
                    if isinstance(m, str) and json.loads(m).get("op") == "status":
                        status.append(json.loads(m)["message"])
            except asyncio.TimeoutError:
                pass
        return {"capabilities": info["capabilities"], "status": sorted(set(status))}
print(json.dumps(asyncio.run(main())))
"""

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
_why_nobody = None if os.geteuid() == 0 and shutil.which("setpriv") else "needs root and setpriv"


def as_nobody(port: int, origin: str = "", token: str = "", *topics: str, subprotocol: str = "",
              tls_noverify: bool = False, wait_status: str = "") -> dict:
    env = dict(os.environ)
    if wait_status:
        env["FOX_WAIT_STATUS"] = wait_status
    if subprotocol:
        env["FOX_SUBPROTOCOL"] = subprotocol
    if tls_noverify:
        env["FOX_TLS_NOVERIFY"] = "1"
    r = subprocess.run([*NOBODY, sys.executable, "-c", CLIENT, str(port), origin, token, *topics],
                       capture_output=True, text=True, timeout=180, cwd="/", env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def listening_ports(pid: int) -> list:
    """The TCP ports process ``pid`` listens on (ss, iproute2)."""
    r = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, timeout=30)
    return sorted({int(ln.split()[3].rsplit(":", 1)[1]) for ln in r.stdout.splitlines()
                   if f"pid={pid}," in ln})


def newest(name: str):
    try:
        with nerve.open(name) as r:
            m = r.get(newest=True, repeat=True)
            return None if m is None else bytes(m.data)
    except nerve.ChannelNotFound:
        return "missing"


def stop(proc) -> str:
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


@pytest.mark.skipif(_why_nobody is not None, reason=f"foxglove access tests: {_why_nobody}")
def test_foxglove_unprivileged_client_and_foreign_origin_cannot_write(name) -> None:
    """Root serves a channel that others may only read (mode 0644). The
    user nobody, from a foreign Origin, is refused at the handshake; without
    an Origin it connects, but client publishing is not offered and what it
    publishes goes nowhere; a channel it names is not created."""
    cmd, fresh = name("cmd"), name("fresh")
    nerve.create(cmd, slots=8, size=4096, type="demo.Cmd", encoding="json", mode=0o644).close()
    prefix = cmd.rsplit("-", 2)[0]
    proc, line = start("foxglove", f"{prefix}-*", "--port", "0", ready="serving")
    assert "read-only" in line
    port = int(line.split("ws://127.0.0.1:")[1].split(";")[0])
    try:
        assert as_nobody(port, "https://evil.example", "", cmd) == {"refused": 403}
        # A sandboxed iframe of any page says Origin: null (issue 41).
        assert as_nobody(port, "null", "", cmd) == {"refused": 403}
        got = as_nobody(port, "", "", cmd, fresh,
                        wait_status="Server does not support clientPublish capability")
        assert "clientPublish" not in got["capabilities"]
        assert "Server does not support clientPublish capability" in got["status"], got
        # Foxglove's own app is an accepted origin.
        assert "capabilities" in as_nobody(port, "https://app.foxglove.dev", "")
        # A page that finds the SDK's own loopback port gets no WebSocket
        # there: it speaks TLS with a certificate no browser trusts.
        sdk = [p for p in listening_ports(proc.pid) if p != port]
        assert len(sdk) == 1, sdk
        assert "error" in as_nobody(sdk[0], "https://evil.example", "", subprotocol="foxglove.sdk.v1")
    finally:
        err = stop(proc)
    assert newest(cmd) is None and newest(fresh) == "missing"
    assert "refused a connection from Origin 'https://evil.example'" in err
    assert "refused a connection from Origin 'null'" in err


def test_foxglove_null_origin_only_when_allowed() -> None:
    """`Origin: null` is refused unless --allow-origin null adds it."""
    from nerve_tools.viz.foxglove import DEFAULT_ORIGINS, Access

    assert not Access().origin_ok("null")
    assert Access(origins=(*DEFAULT_ORIGINS, "null")).origin_ok("null")
    assert Access().origin_ok("https://app.foxglove.dev") and Access().origin_ok(None)


@pytest.mark.skipif(_why_nobody is not None, reason=f"foxglove access tests: {_why_nobody}")
def test_foxglove_publish_opt_in_create_and_token(name) -> None:
    """--publish GLOB lets clients write the existing channels it matches,
    nothing else; a local client only those its own user may write (the
    permission bits hold through the server); --create is needed to make a
    missing one; with --token a client without it is refused (401) and one
    with it is served."""
    cmd, ro, other, fresh = name("cmd"), name("ro"), name("other"), name("fresh")
    nerve.create(cmd, slots=8, size=4096, type="demo.Cmd", encoding="json", mode=0o666).close()
    for n in (ro, other):  # root's, others may only read
        nerve.create(n, slots=8, size=4096, type="demo.Cmd", encoding="json", mode=0o644).close()
    proc, line = start("foxglove", cmd, ro, other, "--port", "0", "--publish", cmd, "--publish", ro,
                       "--publish", fresh, "--token", "s3cret", ready="serving")
    port = int(line.split("ws://127.0.0.1:")[1].split(";")[0])
    try:
        assert as_nobody(port, "", "", cmd) == {"refused": 401}
        assert as_nobody(port, "", "wrong", cmd) == {"refused": 401}
        got = as_nobody(port, "", "s3cret", cmd, ro, other, fresh,
                        wait_status=f"publishing on '{ro}' refused")
        assert "clientPublish" in got["capabilities"]
        assert f"publishing on '{ro}' refused: the connecting user nobody may not write it (mode 644)" \
            in got["status"], got
        # The SDK's own server, on a loopback port of its own, found and
        # used directly (past the checks of the public port) by a local
        # program: it speaks TLS, and a client that accepts any
        # certificate connects but writes nothing.
        sdk = [p for p in listening_ports(proc.pid) if p != port]
        assert len(sdk) == 1, sdk
        assert "capabilities" in as_nobody(sdk[0], "", "", cmd, subprotocol="foxglove.sdk.v1",
                                           tls_noverify=True)
    finally:
        err = stop(proc)
    assert json.loads(newest(cmd)) == {"velocity": 9.9, "via": port}
    assert newest(ro) is None  # allowed by --publish, but nobody may not write it
    assert newest(other) is None  # not allowed by --publish
    assert newest(fresh) == "missing"  # allowed, but not without --create
    assert "not allowed by --publish" in err and "(--create makes it)" in err
    assert "refused a connection without the right token" in err
    assert f"client publishing on '{cmd}' refused: the client did not come through the server's port" in err
    # With --create the allowed missing channel is made.
    proc, line = start("foxglove", "--port", "0", "--publish", fresh, "--create", ready="serving")
    port = int(line.split("ws://127.0.0.1:")[1].split(";")[0])
    try:
        as_nobody(port, "", "", fresh)
        for _ in range(1200):  # 60 s at least
            if newest(fresh) not in (None, "missing"):
                break
            time.sleep(0.05)
    finally:
        stop(proc)
    assert json.loads(newest(fresh)) == {"velocity": 9.9, "via": port}


def test_foxglove_refuses_remote_listen_without_token_and_a_taken_port(name) -> None:
    from conftest import tool

    r = subprocess.run([tool("foxglove"), "--host", "0.0.0.0", "--port", "0"], capture_output=True,
                       text=True, timeout=60, env={k: v for k, v in os.environ.items()
                                                   if k != "NERVE_FOXGLOVE_TOKEN"})
    assert r.returncode == 2 and "beyond loopback) needs --token" in r.stderr, r.stderr
    r = subprocess.run([tool("foxglove"), "--create", "--port", "0"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "--create applies to the channels of --publish" in r.stderr
    proc, line = start("foxglove", name("none"), "--port", "0", ready="serving")
    port = int(line.split("ws://127.0.0.1:")[1].split(";")[0])
    try:
        r = subprocess.run([tool("foxglove"), "--port", str(port)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 1 and f"cannot serve on 127.0.0.1:{port}: the port is taken" in r.stderr, \
            r.stderr
    finally:
        stop(proc)
