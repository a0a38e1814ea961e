"""Python and C on one channel, through the `nerve` command (tools/)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
import zlib

import numpy as np
import pytest

import nerve


def cli(nerve_cli, *args, input=None, check=True):
    p = subprocess.run([nerve_cli, *args], input=input, capture_output=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"nerve {' '.join(args)} exited {p.returncode}: {p.stderr.decode()}")
    return p


def _json_payload(obj) -> bytes:
    if "base64" in obj:
        return base64.b64decode(obj["base64"])
    return obj["text"].encode()


def test_python_writer_c_reader(nerve_cli, name):
    n = name("py2c")
    rng = np.random.default_rng(7)
    payloads = [rng.integers(0, 256, size=s, dtype=np.uint8).tobytes() for s in (1, 100, 5000, 40000)]
    payloads.append(b"plain text")
    with nerve.create(n, slots=16, size=1 << 17, type="demo/Blob", encoding="raw",
                      schema="bytes blob") as w:
        seqs = [w.put(p) for p in payloads]
        # byte-exact copies out of the C reader
        for seq, p in zip(seqs, payloads):
            out = cli(nerve_cli, "get", n, "--seq", str(seq), "--format", "raw").stdout
            assert out == p, f"message {seq} differs"
        # the stream as JSON lines: sequence numbers, sizes, contents
        lines = cli(nerve_cli, "cat", n, "--all", "--count", str(len(payloads)),
                    "--format", "json").stdout.decode().splitlines()
        objs = [json.loads(line) for line in lines]
        assert [o["seq"] for o in objs] == seqs
        assert [o["size"] for o in objs] == [len(p) for p in payloads]
        assert [_json_payload(o) for o in objs] == payloads
        # metadata and counters written by Python, read by C
        info = json.loads(cli(nerve_cli, "info", n, "--json").stdout)
        assert info["type"] == "demo/Blob" and info["encoding"] == "raw"
        assert info["schema"] == "bytes blob"
        assert info["head_seq"] == len(payloads) and info["slots"] == 16
        assert info["bytes_total"] == sum(map(len, payloads))
        cli(nerve_cli, "check", n)
        listed = {c["name"]: c for c in json.loads(cli(nerve_cli, "ls", "--json").stdout)}
        assert listed[n]["head_seq"] == len(payloads)


def test_c_writer_python_reader(nerve_cli, name):
    n = name("c2py")
    cli(nerve_cli, "create", n, "--slots", "32", "--size", "64K", "--type", "demo/Lines",
        "--encoding", "text")
    with nerve.open(n) as r:
        assert r.metadata == nerve.Metadata("demo/Lines", "text", None)
        st = r.stat()
        assert st.slots == 32 and st.data_size == 65536
        lines = [b"line %d" % i for i in range(10)]
        cli(nerve_cli, "put", n, "--lines", input=b"\n".join(lines) + b"\n")
        got = [m.data for m in r.follow(timeout=0.01)]
        assert got == lines
        # binary from standard input: a numpy array written by C
        a = np.arange(1000, dtype=np.float64).reshape(10, 100)
        cli(nerve_cli, "put", n, input=a.tobytes())
        m = r.get()
        assert np.array_equal(m.array(np.float64, (10, 100)), a)
        # a waiting Python reader is woken by a C writer in another process
        result = []
        t = threading.Thread(target=lambda: result.append(r.get(wait=True, timeout=30)))
        t.start()
        cli(nerve_cli, "put", n, "wake up")
        t.join()
        assert result[0].data == b"wake up"
        # the same bytes through a zero-copy view
        blob = os.urandom(30000)
        cli(nerve_cli, "put", n, input=blob)
        with r.view() as v:
            assert zlib.crc32(v.data) == zlib.crc32(blob)
    cli(nerve_cli, "rm", n)
    with pytest.raises(nerve.ChannelNotFound):
        nerve.open(n)


def test_c_reader_sees_python_reservation(nerve_cli, name):
    n = name("resv")
    with nerve.create(n, slots=4, size=1 << 16) as w:
        with w.reserve(dtype=np.uint16, shape=(64, 64)) as img:
            img[...] = np.arange(64 * 64, dtype=np.uint16).reshape(64, 64)
        out = cli(nerve_cli, "get", n, "--newest", "--format", "raw").stdout
        assert np.array_equal(np.frombuffer(out, np.uint16).reshape(64, 64),
                              np.arange(64 * 64, dtype=np.uint16).reshape(64, 64))


def test_c_sees_python_errors_consistently(nerve_cli, name):
    """A channel Python refuses to open is refused by C as well."""
    n = name("bad")
    with open(f"/dev/shm/nerve.{n}", "wb") as f:
        f.write(b"\xff" * 8192)
    with pytest.raises(nerve.NotAChannel):
        nerve.open(n)
    p = cli(nerve_cli, "check", n, check=False)
    assert p.returncode == 1


def test_missed_has_one_meaning_in_python_and_the_command(nerve_cli, name):
    """The steps of tests/cxx/test_cxx_reader.cpp (MissedHasOneMeaningInCAndCxx)
    give the same numbers here: the history a reader finds when it opens is
    not loss (include/nerve/chan.h, beside nerve_chan_cursor)."""
    n = name("one")
    with nerve.create(n, slots=4, size=4096) as w:
        for i in range(3):
            w.put(b"m%d" % i)
        with nerve.open(n) as r:
            got = cli(nerve_cli, "get", n, "--newest", "--format", "json").stdout
            c = json.loads(got)
            m = r.get(newest=True)
            assert (m.seq, m.missed) == (3, 0)
            assert (c["seq"], c["missed"]) == (3, 0)
            for i in range(3, 6):
                w.put(b"m%d" % i)
            m = r.get(newest=True)
            assert (m.seq, m.missed) == (6, 2)
        # A new handle on a ring that has lapped (oldest present: 3).
        with nerve.open(n) as r:
            m = r.get()
            assert (m.seq, m.missed) == (3, 0)
        got = cli(nerve_cli, "get", n, "--next", "--format", "json").stdout
        c = json.loads(got)
        assert (c["seq"], c["missed"]) == (3, 0)
