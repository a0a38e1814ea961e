"""nerve foxglove, tested with a real WebSocket client (the `websockets`
package) speaking the Foxglove WebSocket protocol: it receives the
advertisements, subscribes, and gets the messages."""

from __future__ import annotations

import asyncio
import json
import signal
import struct

import websockets

import nerve
from nerve_tools import schemas

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
    nerve.create(imu_ch, slots=64, size=1 << 16, **schemas.channel_options(IMU)).close()
    nerve.create(js_ch, slots=64, size=1 << 16, **schemas.channel_options(
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
    proc, line = start("foxglove", f"{prefix}-*", "--port", "0", ready="serving")
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

            def frame(cid: int, obj: object) -> bytes:
                return struct.pack("<BI", 1, cid) + json.dumps(obj).encode()

            # Publish until the subscription echoes one of our messages back
            # (advertisement and subscription take effect asynchronously).
            echoed = None
            for i in range(200):
                await ws.send(frame(1, {"speed": i}))
                try:
                    m = await asyncio.wait_for(ws.recv(), 0.1)
                except asyncio.TimeoutError:
                    continue
                if isinstance(m, bytes) and m[0] == 1:
                    echoed = json.loads(m[13:])
                    break
            assert echoed is not None and "speed" in echoed
            await ws.send(frame(2, {"header": {"frame_id": "teleop"},
                                    "linear_acceleration": {"z": 1.25}}))
            await ws.send(frame(4, {"hello": 1}))
            # The cdr channel gets a CDR Imu (decoded by rosbags).
            with nerve.open(imu_ch) as r:
                msg = None
                for _ in range(300):
                    msg = r.get(newest=True, repeat=True)
                    if msg is not None:
                        break
                    await asyncio.sleep(0.05)
                assert msg is not None
                imu = schemas.decode(msg.data, IMU)
                assert imu.header.frame_id == "teleop" and imu.linear_acceleration.z == 1.25
            for _ in range(300):
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
