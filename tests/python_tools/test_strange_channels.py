"""One strange entry in /dev/shm -- a FIFO or a directory under a channel's
name, a channel file whose type is not UTF-8, a channel whose schema is not
text -- must not stop a tool from serving the other channels: top lists it
with its error, record and foxglove skip or report it and go on, play
drops a target it cannot write and plays the others."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Callable, Dict, Iterator, Tuple

import pytest
import websockets

import nerve

from conftest import read_mcap, start, tool

SHM = Path("/dev/shm")
TYPE_OFFSET = 4096  # the metadata region (docs/design/0001-shm-layout.md)


@pytest.fixture
def zoo(name: Callable[[str], str]) -> Iterator[Tuple[str, Dict[str, str]]]:
    """A good channel, a channel with a binary schema, a FIFO, a directory
    and a channel file whose type bytes are Latin-1, all under one prefix.
    Returns the glob pattern and the names by kind."""
    names = {k: name(k) for k in ("good", "binschema", "fifo", "dir", "latin1")}
    nerve.create(names["good"], slots=16, size=4096, type="demo/Good", encoding="json").close()
    nerve.create(names["binschema"], slots=16, size=4096, type="demo/Bin", encoding="json",
                 schema=b"\xff\xfe\x80 not text").close()
    os.mkfifo(SHM / f"nerve.{names['fifo']}")
    os.mkdir(SHM / f"nerve.{names['dir']}")
    nerve.create(names["latin1"], slots=8, size=4096, type="cafe/X").close()
    with open(SHM / f"nerve.{names['latin1']}", "r+b") as f:
        f.seek(TYPE_OFFSET + 3)
        f.write(b"\xe9")
    prefix = names["good"].rsplit("-", 2)[0]
    yield f"{prefix}-*", names
    (SHM / f"nerve.{names['fifo']}").unlink(missing_ok=True)
    (SHM / f"nerve.{names['dir']}").rmdir()
    (SHM / f"nerve.{names['latin1']}").unlink(missing_ok=True)
    (SHM / f"nerve-bell.{names['latin1']}").unlink(missing_ok=True)


def test_top_lists_strange_entries_and_the_good_ones(zoo) -> None:
    pattern, names = zoo
    with nerve.open(names["good"], write=True) as w:
        w.put(b'{"x": 1}')
    r = subprocess.run([tool("top"), "--once", "--interval", "0.05", pattern],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = {n: next((ln for ln in r.stdout.splitlines() if n in ln), "") for n in names.values()}
    assert "demo/Good (json)" in lines[names["good"]]
    assert "demo/Bin" in lines[names["binschema"]]
    for strange in ("fifo", "dir", "latin1"):
        assert lines[names[strange]], f"{strange} not listed:\n{r.stdout}"


def test_record_skips_strange_channels(zoo, tmp_path: Path) -> None:
    pattern, names = zoo
    out = tmp_path / "zoo.mcap"
    rec, _ = start("record", pattern, "-o", str(out), "--count", "6", ready="recording")
    with nerve.open(names["good"], write=True) as g, \
            nerve.open(names["binschema"], write=True) as b:
        for i in range(3):
            g.put(json.dumps({"x": i}).encode())
            b.put(json.dumps({"y": i}).encode())
    assert rec.wait(timeout=60) == 0, rec.stderr.read() if rec.stderr else ""
    rec.communicate()
    m = read_mcap(out)
    topics = sorted({c.topic for _s, c, _m in m["messages"]})
    assert topics == sorted([names["good"], names["binschema"]])
    schema = next(s for s, c, _m in m["messages"] if c.topic == names["binschema"])
    assert schema.data == b"\xff\xfe\x80 not text"

    # Played back into a FIFO (one topic) and a fresh channel (the other):
    # the FIFO is reported and skipped, the other topic is played.
    target = f"{names['good']}-copy"
    try:
        r = subprocess.run([tool("play"), str(out), "--fast", "-q",
                            "--rename", f"{names['good']}={target}",
                            "--rename", f"{names['binschema']}={names['fifo']}"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert names["fifo"] in r.stderr and "not a nerve channel" in r.stderr
        with nerve.open(target) as ch:
            assert ch.stat().head_seq == 3
    finally:
        try:
            nerve.unlink(target)
        except nerve.ChannelNotFound:
            pass


def test_foxglove_serves_the_good_channels(zoo) -> None:
    pattern, names = zoo
    proc, line = start("foxglove", pattern, "--port", "0", ready="serving")
    try:
        assert "serving 2 channels" in line, line
        port = int(line.split("ws://127.0.0.1:")[1].split(";")[0])

        async def client() -> Dict[str, dict]:
            async with websockets.connect(f"ws://127.0.0.1:{port}",
                                          subprotocols=["foxglove.sdk.v1"]) as ws:
                chans: Dict[str, dict] = {}
                while names["good"] not in chans:
                    m = await asyncio.wait_for(ws.recv(), 30)
                    if isinstance(m, str) and json.loads(m).get("op") == "advertise":
                        for c in json.loads(m)["channels"]:
                            chans[c["topic"]] = c
                return chans

        chans = asyncio.run(client())
        assert chans[names["good"]]["schemaName"] == "demo/Good"
        assert proc.poll() is None  # still serving
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
