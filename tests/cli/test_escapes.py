"""No planted name writes into the operator's terminal (issue 28, item 3).

A type and an encoding planted in a channel file (written into the file's
metadata bytes: the library refuses them at create), a payload of escape
sequences and bytes that are not UTF-8, and a process whose command line and
name (prctl PR_SET_NAME) hold escape sequences go through every verb that
prints them for a human: ls, info, top, who, get and cat (to a terminal, a
pseudo-terminal here), echo, check, and the error lines that echo a name.
None of them may let an ESC, BEL or C1 control byte reach stdout or stderr;
the bytes must still be there in the escaped form, and the raw payload
remains available (--format raw, or text format into a pipe).

Runs in `make test-toolbox` (the tools' virtual environment on the PATH,
NERVE_CLI = the built command)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
import tty
from pathlib import Path
from typing import Iterator

import pytest

import nerve
import nerve.testing
from nerve_tools._text import escape, has_control

NERVE = os.environ.get("NERVE_CLI") or "nerve"
PREFIX = nerve.testing.PREFIX
SHM = Path("/dev/shm")
TYPE_OFFSET = 4096  # the metadata region (docs/design/0001-shm-layout.md)

# OSC 2 (window title), CSI colour, BEL, a C1 CSI (U+009B) and DEL.
EVIL_TYPE = "e/\x1b]2;PWNED\x07\x1b[31m\u009b7mZ\x7f"
EVIL_ENC = "\x1b[5mjson"
# Bytes: ESC sequences, BEL, a raw C1 byte (not UTF-8), an invalid byte.
EVIL_PAYLOAD = b"hi\x1b]2;OWNED\x07\x1b[2J\x9b\xff\nline two\tend"


def assert_clean(out: bytes, where: str) -> None:
    """No ESC, BEL, other C0 (but newline and tab), DEL or C1 control, as a
    raw byte or as a UTF-8 character."""
    text = out.decode("utf-8", errors="surrogateescape")
    bad = [c for c in text if c not in "\n\t" and (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0)]
    assert not bad, f"{where}: control characters reached the output: {bad!r} in {out[:400]!r}"
    # Bytes 0x80-0x9f are fine only as UTF-8 continuation bytes, never as C1.
    assert b"\xc2\x9b" not in out and b"\xc2\x80" not in out, where


def assert_tty_clean(out: bytes, where: str) -> None:
    """As assert_clean, for output to a terminal, where a tool may style its
    own text: bold and reset (top's header) are removed first. Every planted
    sequence (OSC, BEL, C1, colour 31, blink 5, clear 2J) still fails."""
    for own in (b"\x1b[1m", b"\x1b[0m", b"\x1b[22m"):
        out = out.replace(own, b"")
    assert_clean(out, where)


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([NERVE, *args], capture_output=True, timeout=timeout)


def run_tty(*args: str, timeout: float = 30) -> bytes:
    """Run `nerve ARGS` with stdout and stderr on a pseudo-terminal (raw
    mode: the line discipline changes no byte); return what it wrote."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    try:
        p = subprocess.Popen([NERVE, *args], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL)
        os.close(slave)
        slave = -1
        chunks = []
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the other side closed
                    break
                if not data:
                    break
                chunks.append(data)
            elif p.poll() is not None:
                break
        p.wait(timeout=10)
        return b"".join(chunks)
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)


@pytest.fixture
def planted(name) -> Iterator[str]:
    """A channel whose type and encoding hold escape sequences, written into
    its metadata bytes (the library refuses them at create), with one
    message of escape sequences."""
    n = name("evil")
    t, e = EVIL_TYPE.encode(), EVIL_ENC.encode()
    with nerve.create(n, slots=8, size=4096, type="x" * len(t), encoding="y" * len(e)) as w:
        w.put(EVIL_PAYLOAD)
    with open(SHM / f"nerve.{n}", "r+b") as f:
        f.seek(TYPE_OFFSET)
        f.write(t + b"\0" + e)
    with nerve.open(n) as r:  # it opens: valid UTF-8
        assert r.metadata.type == EVIL_TYPE
    yield n


def test_library_refuses_what_was_planted(name) -> None:
    p = run("create", name("c"), "--type", EVIL_TYPE)
    assert p.returncode == 1
    assert b"holds a control character" in p.stderr
    assert_clean(p.stdout + p.stderr, "create")
    assert escape(EVIL_TYPE).encode() in p.stderr


def test_escape_rules() -> None:
    assert escape("a\x1b]2;x\x07") == "a\\u001b]2;x\\u0007"
    assert escape("\u009b\x7f\\") == "\\u009b\\u007f\\\\"
    assert escape("tab\tnl\n") == "tab\\tnl\\n"
    assert escape("tab\tnl\n", keep_lines=True) == "tab\tnl\n"
    assert escape(b"\xff\xc3\xa9") == "\\xff\u00e9"
    assert escape('say "hi"', quote=True) == 'say \\"hi\\"'
    assert not has_control(escape("".join(map(chr, range(0x100)))))


@pytest.mark.parametrize("verb", ["ls", "info", "check", "top", "echo"])
def test_planted_metadata_is_escaped(planted, verb) -> None:
    args = {
        "ls": ["ls", planted],
        "info": ["info", planted],
        "check": ["check", planted],
        "top": ["top", "--once", "--interval", "0.05", planted],
        "echo": ["echo", planted, "--all", "--count", "1", "--header"],
    }[verb]
    p = run(*args)
    assert p.returncode == 0, p.stderr
    assert_clean(p.stdout + p.stderr, verb)
    if verb in ("ls", "info", "top"):
        # The type is shown, escaped (top may cut the column short).
        assert escape(EVIL_TYPE)[:12].encode() in p.stdout, p.stdout
    if verb == "info":
        assert escape(EVIL_ENC).encode() in p.stdout
    # And on a terminal, where it matters.
    assert_tty_clean(run_tty(*args), f"{verb} on a terminal")


def test_top_shows_markup_as_text(name) -> None:
    # rich and textual read a str as markup: a type that looks like markup
    # is shown as it is, not styled (cells are Text).
    n = name("markup")
    nerve.create(n, slots=8, size=4096, type="demo/[red]Thing[/red]").close()
    p = run("top", "--once", "--interval", "0.05", n)
    assert p.returncode == 0, p.stderr
    assert b"demo/[red]Thing[/red]" in p.stdout, p.stdout


@pytest.mark.parametrize("verb", ["get", "cat"])
def test_payload_text_to_a_terminal_is_escaped(planted, verb) -> None:
    args = ["get", planted, "--newest"] if verb == "get" else ["cat", planted, "--all", "--count", "1"]
    out = run_tty(*args)
    assert_tty_clean(out, f"{verb} on a terminal")
    # Escaped, newlines and tabs kept; the bytes that are not UTF-8 as \xHH.
    assert b"hi\\u001b]2;OWNED\\u0007" in out and b"\\x9b\\xff" in out
    assert b"\nline two\tend" in out
    # Into a pipe, text format gives the bytes as they are ...
    p = run(*args)
    assert p.returncode == 0, p.stderr
    assert EVIL_PAYLOAD in p.stdout
    # ... and --format raw gives them anywhere, a terminal too: the explicit
    # choice of whoever asked for it.
    raw = run_tty(*args, "--format", "raw")
    assert EVIL_PAYLOAD in raw


def test_error_lines_escape_names() -> None:
    bad = "x\x1b]2;PWNED\x07"
    for args in (["info", bad], ["rm", bad], ["get", bad], ["ls", "--\x1b[31m"],
                 ["get", "x", "--format", "\x1b[31m"]):
        p = run(*args)
        assert p.returncode != 0
        assert p.stderr, args
        assert_clean(p.stdout + p.stderr, " ".join(args))
    p = run("echo", bad)
    assert p.returncode == 2
    assert_clean(p.stdout + p.stderr, "echo")


WHO_PROC = r"""
import ctypes, mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
m = mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
# The process's name (comm), as top and ps show it: 15 bytes at most.
ctypes.CDLL(None).prctl(15, b"\x1b]2;PWN\x07\x1b[31m", 0, 0, 0)
print("ready", flush=True)
time.sleep(60)
"""


def test_who_escapes_command_names_and_channels(name, planted, procs) -> None:
    # A file under a channel's name that holds an escape sequence, mapped by a
    # process whose command line and comm hold them too.
    odd = SHM / f"nerve.{PREFIX}odd\x1b]2;X\x07"
    odd.write_bytes(b"\0" * 4096)
    try:
        # argv[0] first: who shows the start of a long command line.
        p = subprocess.Popen(["\x1b]2;ARGV\x07\x1b[31m", "-c", WHO_PROC, str(odd)],
                             executable=sys.executable, stdout=subprocess.PIPE)
        procs.append(p)
        q = subprocess.Popen(["\u009b", "-c", WHO_PROC, str(SHM / f"nerve.{planted}")],
                             executable=sys.executable, stdout=subprocess.PIPE)
        procs.append(q)
        for x in (p, q):
            assert x.stdout is not None and x.stdout.readline() == b"ready\n"
        r = run("who", f"{PREFIX}*")
        assert r.returncode == 0, r.stderr
        assert_clean(r.stdout + r.stderr, "who")
        assert escape("\x1b]2;ARGV\x07").encode() in r.stdout, r.stdout
        assert escape(f"{PREFIX}odd\x1b]2;X\x07").encode() in r.stdout
        assert_tty_clean(run_tty("who", f"{PREFIX}*"), "who on a terminal")
        # graph writes DOT, to a terminal too when no -o is given.
        g = run("graph", f"{PREFIX}*")
        assert g.returncode == 0, g.stderr
        assert_clean(g.stdout + g.stderr, "graph")
        assert escape(f"c:{PREFIX}odd\x1b]2;X\x07", quote=True).encode() in g.stdout
    finally:
        odd.unlink(missing_ok=True)


def test_who_render_escapes_every_field() -> None:
    # A process without a command line (a kernel thread's form) is shown by
    # its comm, "[comm]", which prctl(PR_SET_NAME) sets to anything; the
    # user, namespace and container come from /proc too.
    from nerve_tools.monitor import who

    e = "\x1b]2;X\x07"
    res = who.Scan(
        uses=[who.Use(f"c{e}", 42, "read", f"[{e}]", f"u{e}", f"pid:[{e}]", False, f"k{e}")],
        holders=[who.LockHolder(f"c{e}", 43, 43, f"cmd{e}", False)])
    text = who.render(res)
    assert_clean(text.encode(), "who.render")
    assert text.count(escape(e)) == 7, text  # 5 fields of the use, 2 of the holder
