"""The bridge's wire format (docs/bridge.md) without a network: headers,
batches, descriptions, endpoints and configuration."""

from __future__ import annotations

import json

import pytest

from nerve_tools.bridge.wire import (
    BridgeError,
    Description,
    SessionOptions,
    check_endpoint,
    make_config,
    pack_batch,
    pack_header,
    unpack_header,
)


def test_single_and_batch_headers_round_trip() -> None:
    assert unpack_header(pack_header(7, -5, 99), 10) == (99, [(7, -5, 0, 10)])
    entries = [(3, 100, 4), (4, 101, 0), (9, 105, 6)]
    assert unpack_header(pack_batch(entries, 42), 10) == (42, [(3, 100, 0, 4), (4, 101, 4, 0), (9, 105, 4, 6)])


@pytest.mark.parametrize("att,n", [
    (None, 1),
    (b"NV", 1),
    (pack_header(1, 0, 0)[:-1], 1),
    (b"XX" + pack_header(1, 0, 0)[2:], 1),                 # magic
    (pack_header(1, 0, 0)[:2] + b"\x02" + pack_header(1, 0, 0)[3:], 1),  # version
    (pack_header(0, 0, 0), 1),                              # seq 0
    (pack_header(1, 0, 0) + b"x", 1),                       # trailing bytes
    (pack_batch([(3, 0, 4), (4, 0, 4)], 1), 9),             # lengths != payload
    (pack_batch([(3, 0, 4), (3, 0, 4)], 1), 8),             # seq not increasing
    (pack_batch([(3, 0, 4)], 1)[:-1], 4),                   # cut table
])
def test_bad_headers_are_refused(att, n) -> None:
    with pytest.raises(ValueError):
        unpack_header(att, n)


def test_description_round_trip_and_validation() -> None:
    d = Description(host="h1", name="cam.left", slots=8, data_size=1 << 20, type="T", encoding="cdr",
                    schema=b"\x00\xffschema", epoch=5, head_seq=9, rate_hz=30.0)
    assert Description.from_json(d.to_json()) == d
    good = json.loads(d.to_json())
    for bad in ["{", "[]", json.dumps({**good, "version": 2}), json.dumps({**good, "slots": 0}),
                json.dumps({**good, "name": "../x"}), json.dumps({**good, "host": "a/b"}),
                json.dumps({**good, "schema_base64": "!!"}), json.dumps({**good, "data_size": "big"})]:
        with pytest.raises(ValueError):
            Description.from_json(bad)


def test_endpoints_and_config() -> None:
    for ok in ["tcp/192.0.2.1:7447", "udp/[2001:db8::1]:7447", "tls/host.example:7447", "unixsock-stream/x"]:
        check_endpoint(ok)
    for bad in ["foo", "tcp/", "/x", "tcp/192.0.2.1", "tcp/192.0.2.1:0", "tcp/h:65536", "quic/h:x"]:
        with pytest.raises(BridgeError):
            check_endpoint(bad)
    c = make_config(SessionOptions(listen=["tcp/192.0.2.1:7447"], connect=["tcp/192.0.2.2:7447"]))
    assert json.loads(c.get_json("scouting/multicast/enabled")) is False
    assert json.loads(c.get_json("listen/endpoints")) == ["tcp/192.0.2.1:7447"]
    assert json.loads(c.get_json("connect/endpoints")) == ["tcp/192.0.2.2:7447"]
    c = make_config(SessionOptions(scout=True))
    assert json.loads(c.get_json("scouting/multicast/enabled")) is True
    assert json.loads(c.get_json("listen/endpoints")) == []  # nothing listens unless asked


def test_config_file_then_flags(tmp_path) -> None:
    f = tmp_path / "z.json5"
    f.write_text('{ mode: "client", connect: { endpoints: ["tcp/192.0.2.9:7447"] }, '
                 'transport: { link: { tx: { lease: 1234 } } } }')
    c = make_config(SessionOptions(config=str(f)))
    assert json.loads(c.get_json("mode")) == "client"
    assert json.loads(c.get_json("transport/link/tx/lease")) == 1234
    # The bridge's own defaults fill in what the file leaves at Zenoh's.
    assert json.loads(c.get_json("listen/endpoints")) == []
    assert json.loads(c.get_json("transport/shared_memory/enabled")) is False
    c = make_config(SessionOptions(config=str(f), connect=["tcp/192.0.2.3:7447"]))
    assert json.loads(c.get_json("connect/endpoints")) == ["tcp/192.0.2.3:7447"]  # the flag wins
    f.write_text("{ mode: ")
    with pytest.raises(BridgeError, match="bad --config"):
        make_config(SessionOptions(config=str(f)))


def test_launcher_runs_the_rust_data_path_or_says_how_to_get_it(monkeypatch, capsys, tmp_path) -> None:
    """`nerve bridge` runs nerve-bridge-rs ($NERVE_BRIDGE_RS, the PATH,
    beside this Python); where there is none it exits 1 with one line
    saying how to get it, also for --version. --poll, the retired Python
    data path's, is a usage error that says so."""
    from nerve_tools.bridge import cli

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(cli.sys, "executable", str(tmp_path / "python"))
    monkeypatch.delenv("NERVE_BRIDGE_RS", raising=False)
    for argv in (["--export", "x"], ["--version"]):
        assert cli.main(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert "nerve-bridge-rs, the data path of nerve bridge, is not installed: install the Debian " \
               "package nerve-bridge, or the Python wheel nerve-bridge" in err, err
    monkeypatch.setenv("NERVE_BRIDGE_RS", str(tmp_path / "nope"))
    assert cli.main(["--export", "x"]) == 1
    assert "NERVE_BRIDGE_RS=" + str(tmp_path / "nope") + " is not an executable program" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["--poll", "50", "--export", "x"])
    assert e.value.code == 2
    assert "--poll is no longer offered" in capsys.readouterr().err
    # Found on the PATH: the version names it and its Zenoh.
    fake = tmp_path / "nerve-bridge-rs"
    fake.write_text("#!/bin/sh\necho 'nerve-bridge-rs 0.1.0 (data path: rust, zenoh 1.10.2)'\n")
    fake.chmod(0o755)
    monkeypatch.delenv("NERVE_BRIDGE_RS")
    assert cli.rust_binary() == str(fake)
    text = cli.version_text()
    assert f"data path: rust ({fake}: nerve-bridge-rs 0.1.0 (data path: rust, zenoh 1.10.2))" in text, text


def test_ls_remote_without_a_peer_says_so_at_once() -> None:
    """`nerve ls --remote` with no --connect, --config or --scout could
    reach nobody (multicast scouting is off): a usage error naming the
    options, not a 'cannot reach' after the timeout."""
    import subprocess

    from conftest import tool

    r = subprocess.run([tool("bridge"), "ls", "--timeout", "30"],
                       capture_output=True, text=True, timeout=25)
    assert r.returncode == 2, r.stderr
    assert "no peer to ask: give --connect ENDPOINT" in r.stderr, r.stderr


def test_ls_remote_escapes_what_peers_say(monkeypatch, capsys) -> None:
    """`nerve ls --remote` prints a peer's key, host, name and type escaped:
    no raw ESC reaches the terminal (issue 41, item 3)."""
    from nerve_tools.bridge import cli

    esc = "\x1b]0;owned\x07\x1b[2J"
    replies = [(f"nerve/0/meta/{esc}", "not JSON"),
               ("nerve/0/meta/h/x", Description(host="h" + esc, name="n" + esc, slots=8,
                                                 data_size=4096, type="t" + esc,
                                                 encoding="raw", schema=None))]
    monkeypatch.setattr(cli, "open_session", lambda opts: type("S", (), {"close": lambda s: None})())
    monkeypatch.setattr(cli, "wait_connected", lambda *a: True)
    monkeypatch.setattr(cli, "query_descriptions", lambda *a: replies)
    monkeypatch.setattr(cli, "SETTLE_S", 0)
    monkeypatch.setattr(cli.registry, "read_all", lambda: [])
    assert cli.ls(["--connect", "tcp/192.0.2.1:7447"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out, repr(out)
    assert out.count("\\u001b]0;owned\\u0007\\u001b[2J") == 4, out
