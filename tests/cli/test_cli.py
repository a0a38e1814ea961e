#!/usr/bin/env python3
"""Tests of the `nerve` command: every verb, every error path, the JSON
outputs (against golden files with the volatile fields normalised) and the
external-verb lookup.

usage: test_cli.py PATH/TO/nerve

Exit 0 pass, 1 fail, 77 skip. Channel names start with "nt-<pid>-" so that
the shm_clean fixture sees leftovers; every channel made here is removed.
Standard library only."""

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

NERVE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = "nt-%d-" % os.getpid()
FAILURES = []
MADE = set()


def name(tag):
    n = PREFIX + tag
    MADE.add(n)
    return n


def run(*args, input=None, env=None, timeout=30, exe=None):
    p = subprocess.run([exe or NERVE] + [str(a) for a in args],
                       input=input, capture_output=True, env=env,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, file=sys.stderr)


def expect(args, rc, out_has=None, err_has=None, input=None, env=None):
    got_rc, out, err = run(*args, input=input, env=env)
    what = "nerve %s" % " ".join(str(a) for a in args)
    check(got_rc == rc, "%s: exit %d, want %d (stderr: %s)"
          % (what, got_rc, rc, err.strip()))
    if out_has is not None:
        check(out_has.encode() in out if isinstance(out_has, str)
              else out_has in out,
              "%s: stdout lacks %r: %r" % (what, out_has, out[:300]))
    if err_has is not None:
        check(err_has in err, "%s: stderr lacks %r: %r" % (what, err_has, err))
    return out, err


def normalise(obj, volatile):
    """Replace volatile fields by a marker saying only whether they were
    null, so golden files pin names, types and stable values."""
    out = {}
    for k, v in obj.items():
        if k in volatile:
            out[k] = "<null>" if v is None else "<%s>" % type(v).__name__
        else:
            out[k] = v
    return out


def golden(tag, obj):
    path = os.path.join(HERE, "golden", tag + ".json")
    if os.environ.get("NERVE_UPDATE_GOLDEN"):
        with open(path, "w") as f:
            json.dump(obj, f, indent=2, sort_keys=True)
            f.write("\n")
    with open(path) as f:
        want = json.load(f)
    check(obj == want, "golden %s differs:\n got  %s\n want %s"
          % (tag, json.dumps(obj, sort_keys=True),
             json.dumps(want, sort_keys=True)))


INFO_VOLATILE = {"name", "created", "created_ns", "newest_time",
                 "newest_time_ns", "newest_age_ns", "uid", "gid",
                 "creator_version"}


def test_help():
    out, _ = expect(["help"], 0, out_has="verbs:")
    for verb in ["create", "rm", "ls", "info", "put", "get", "cat", "chmod",
                 "check", "bench", "help"]:
        check(("  %s " % verb).encode() in out, "help lists " + verb)
        o, _ = expect([verb, "--help"], 0, out_has="usage: nerve " + verb)
        o2, _ = expect(["help", verb], 0)
        check(o == o2, "help %s equals %s --help" % (verb, verb))
    expect([], 2, err_has="usage: nerve VERB")
    expect(["no-such-verb-xyz"], 2, err_has="not a nerve verb")
    expect(["help", "no-such-verb-xyz"], 2, err_has="not a nerve verb")
    expect(["--bogus"], 2)
    expect(["get", "--help"], 0, out_has="-1.5s")  # --at forms documented


def test_external_verbs():
    tmp = tempfile.mkdtemp(prefix="nerve-cli-")
    try:
        beside = os.path.join(tmp, "bin")
        onpath = os.path.join(tmp, "path")
        os.mkdir(beside)
        os.mkdir(onpath)
        copy = os.path.join(beside, "nerve")
        shutil.copy2(NERVE, copy)

        def script(d, verb, body):
            p = os.path.join(d, "nerve-" + verb)
            with open(p, "w") as f:
                f.write("#!/bin/sh\n" + body + "\n")
            os.chmod(p, 0o755)

        script(onpath, "hello", 'echo "hello $#:$*"; exit 3')
        script(onpath, "which", "echo path")
        script(beside, "which", "echo beside")
        env = dict(os.environ, PATH=onpath + ":" + os.environ.get("PATH", ""))
        rc, out, _ = run("hello", "a", "b c", env=env)
        check(rc == 3 and out == b"hello 2:a b c\n",
              "external verb runs with its arguments and exit code: %d %r"
              % (rc, out))
        rc, out, _ = run("which", env=env, exe=copy)
        check(rc == 0 and out == b"beside\n",
              "nerve-VERB beside the executable wins over PATH: %r" % out)
        rc, out, _ = run("which", env=env)
        check(out == b"path\n", "nerve-VERB found on PATH: %r" % out)
        rc, out, _ = run("help", env=env, exe=copy)
        check(rc == 0 and b"external verbs" in out and b"  hello\n" in out
              and b"  which\n" in out, "help lists external verbs: %r" % out)
    finally:
        shutil.rmtree(tmp)


def test_create_rm():
    a = name("a")
    expect(["create", a], 0)
    check(os.path.exists("/dev/shm/nerve." + a), "create makes the file")
    expect(["create", a], 1, err_has="EEXIST")
    expect(["create", a, "--exist-ok"], 0)
    expect(["create", a, "--exist-ok", "--slots", "8"], 1, err_has="EMISMATCH")
    expect(["create", "bad/name"], 2, err_has="EINVAL")
    expect(["create", ".hidden"], 2, err_has="EINVAL")
    expect(["create", "x" * 300], 2, err_has="ENAMETOOLONG")
    expect(["create", name("m"), "--mode", "9z"], 2, err_has="bad --mode")
    expect(["create", name("m"), "--mode", "77777"], 2)
    expect(["create", name("m"), "--slots", "-1"], 2)
    expect(["create", name("m"), "--size", "lots"], 2)
    expect(["create", name("m"), "--frob"], 2, err_has="unknown option")
    expect(["create"], 2, err_has="missing NAME")
    expect(["create", name("m"), "extra"], 2)
    expect(["create", name("m"), "--schema", "/nonexistent/schema"], 1)
    expect(["rm", a], 0)
    check(not os.path.exists("/dev/shm/nerve." + a), "rm removes the file")
    check(not os.path.exists("/dev/shm/nerve-bell." + a), "rm removes bell")
    expect(["rm", a], 1, err_has="ENOENT")
    b = name("b")
    expect(["create", b], 0)
    expect(["rm", name("missing"), b], 1, err_has="ENOENT")
    check(not os.path.exists("/dev/shm/nerve." + b),
          "rm goes on after a failure")
    expect(["rm"], 2)
    expect(["rm", "bad/name"], 2, err_has="EINVAL")
    # A plain --size is bytes: "8" (meant as 8 MB) is warned about.
    _, err = expect(["create", name("tiny"), "--size", "8"], 0,
                    err_has="warning: --size 8 has no unit, so it is 8 bytes")
    check("8M for MiB" in err, "the warning gives the unit: %r" % err)
    _, err = expect(["create", name("page"), "--size", "4096"], 0)
    check("warning" not in err, "no warning at a page: %r" % err)
    _, err = expect(["create", name("kib"), "--size", "1K"], 0)
    check("warning" not in err, "no warning with a unit: %r" % err)


def test_rm_not_owner():
    """Only the owner (or root) may remove a file from the sticky /dev/shm:
    rm says that, not the 'nerve chmod' hint, which cannot help."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        print("SKIP test_rm_not_owner: needs root and setpriv to run "
              "'nerve rm' as nobody")
        return
    c = name("rootowned")
    expect(["create", c, "--mode", "0666"], 0)
    p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup",
                        "--clear-groups", NERVE, "rm", c],
                       capture_output=True, timeout=30)
    err = p.stderr.decode(errors="replace")
    check(p.returncode == 1, "rm as nobody: exit %d: %s" % (p.returncode, err))
    check("only the file's owner (uid 0) or root may remove it from "
          "/dev/shm" in err, "rm as nobody says who may: %r" % err)
    check("chmod" not in err, "rm as nobody does not suggest chmod: %r" % err)
    check(os.path.exists("/dev/shm/nerve." + c), "the channel is still there")
    expect(["rm", c], 0)


def test_ls_columns_hold_long_names():
    """Names longer than the usual column (an rmw_nerve service channel,
    ros2-d0.NAMESPACE.SERVICE-req) widen it: every column keeps its place."""
    short = name("s")
    long_ = name("ros2-d0.some_namespace.some_node.describe_parameters-req")
    expect(["create", short, "--slots", "8"], 0)
    expect(["create", long_, "--slots", "16"], 0)
    out, _ = expect(["ls", short, long_], 0)
    lines = out.decode().splitlines()
    check(len(lines) == 3, "ls: a header and two rows: %r" % lines)
    end = lines[0].index("SLOTS") + len("SLOTS")
    slots = {short: "8", long_: "16"}
    for ln in lines[1:]:
        want = slots.pop(ln.split()[0], "?")
        check(ln[end - len(want):end] == want and ln[end] == " ",
              "ls: SLOTS column ends at %d in %r" % (end, ln))
    check(not slots and lines[0].split()[:2] == ["NAME", "SLOTS"],
          "ls rows: %r" % lines)
    expect(["rm", short, long_], 0)


def test_info_ls():
    c = name("info")
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write("float64 x\nfloat64 y\n")
        schema = f.name
    try:
        expect(["create", c, "--slots", "16", "--size", "64K", "--mode",
                "0640", "--type", "geometry/Point", "--encoding", "ros1msg",
                "--schema", schema], 0)
    finally:
        os.unlink(schema)
    out, _ = expect(["info", c, "--json"], 0)
    info = json.loads(out)
    check(info["name"] == c, "info name")
    check(info["created"].endswith("Z") and info["newest_time"] is None,
          "info times: %r" % info)
    golden("info_empty", normalise(info, INFO_VOLATILE))
    expect(["put", c, "hello"], 0)
    expect(["put", c, "world!"], 0)
    info = json.loads(expect(["info", c, "--json"], 0)[0])
    check(info["newest_time_ns"] > 0 and info["newest_age_ns"] >= 0,
          "info newest after put")
    golden("info_two", normalise(info, INFO_VOLATILE))
    out, _ = expect(["info", c], 0, out_has="geometry/Point")
    check(b"float64 x" in out and b"0640" in out, "info text: %r" % out)
    ls = json.loads(expect(["ls", "--json"], 0)[0])
    check(isinstance(ls, list), "ls --json is an array")
    mine = [e for e in ls if e["name"] == c]
    check(len(mine) == 1, "ls --json lists the channel")
    if mine:
        golden("ls_entry", normalise(mine[0], {"name", "newest_age_ns"}))
    out, _ = expect(["ls"], 0, out_has=c)
    check(out.startswith(b"NAME"), "ls header")
    # A file that is not a channel is listed with its error.
    bad = name("notchan")
    with open("/dev/shm/nerve." + bad, "wb") as f:
        f.write(b"not a channel at all" * 10)
    ls = json.loads(expect(["ls", "--json"], 0)[0])
    ent = [e for e in ls if e["name"] == bad]
    check(len(ent) == 1 and ent[0].get("error") == "ENOTCHAN",
          "ls lists a foreign file with its error: %r" % ent)
    expect(["info", bad], 1, err_has="ENOTCHAN")
    os.unlink("/dev/shm/nerve." + bad)
    expect(["info", name("missing")], 1, err_has="ENOENT: no such channel")
    expect(["info", "bad/name"], 2, err_has="EINVAL")
    expect(["info"], 2)
    expect(["ls", "--bogus"], 2)
    out, _ = expect(["ls", PREFIX + "no-such-*"], 0)  # a pattern matching none
    check(out.count(b"\n") == 1, "ls PATTERN lists only matches: %r" % out)
    expect(["rm", c], 0)


def test_put_get():
    c = name("pg")
    expect(["create", c, "--slots", "8", "--size", "4K"], 0)
    expect(["get", c], 1, err_has="EAGAIN")
    expect(["get", c, "--wait", "--timeout", "0.05"], 1, err_has="ETIMEDOUT")
    expect(["put", c, "first"], 0)
    expect(["put", c], 0, input=b"from stdin\n")
    out, _ = expect(["put", c, "--lines", "--json"], 0, input=b"l1\nl2\nl3\n")
    seqs = [json.loads(line)["seq"] for line in out.splitlines()]
    check(seqs == [3, 4, 5], "put --lines --json seqs: %r" % seqs)
    expect(["put", c, "\xff"], 0)  # text in the shell, UTF-8 here
    binary = bytes(range(256))
    expect(["put", c], 0, input=binary)

    out, _ = expect(["get", c], 0)
    check(out == binary + b"\n", "get default: newest as text")
    out, _ = expect(["get", c, "--format", "raw"], 0)
    check(out == binary, "get raw")
    m = json.loads(expect(["get", c, "--format", "json"], 0)[0])
    check(base64.b64decode(m["base64"]) == binary and "text" not in m,
          "binary payload as base64: %r" % m)
    check(m["seq"] == 7 and m["size"] == 256, "get json seq/size")
    check(m["time"].endswith("Z") and "T" in m["time"], "iso time")
    golden("get_binary", normalise(m, {"time", "time_ns"}))
    m = json.loads(expect(["get", c, "--next", "--format", "json"], 0)[0])
    check(m["seq"] == 1 and m["text"] == "first" and m["missed"] == 0,
          "get --next: oldest present: %r" % m)
    golden("get_text", normalise(m, {"time", "time_ns"}))
    m = json.loads(expect(["get", c, "--seq", "2", "--format", "json"], 0)[0])
    check(m["text"] == "from stdin\n", "stdin message kept whole: %r" % m)
    m = json.loads(expect(["get", c, "--seq", "6", "--format", "json"], 0)[0])
    check(m["text"] == "\xff", "UTF-8 payload as text: %r" % m)
    out, _ = expect(["get", c, "--seq", "1", "--format", "hex"], 0)
    check(b"seq 1" in out and b"66 69 72 73 74" in out and b"|first|" in out,
          "hex dump: %r" % out)
    out, _ = expect(["get", c, "--seq", "3", "--format", "text"], 0)
    check(out == b"l1\n", "get --seq text")
    # --at: absolute nanoseconds and relative forms
    t3 = json.loads(expect(["get", c, "--seq", "3", "--format", "json"],
                           0)[0])["time_ns"]
    m = json.loads(expect(["get", c, "--at", str(t3), "--format", "json"],
                          0)[0])
    check(m["seq"] >= 3 and m["time_ns"] <= t3, "--at absolute: %r" % m)
    m = json.loads(expect(["get", c, "--at", "+0s", "--format", "json"], 0)[0])
    check(m["seq"] == 7, "--at now gives the newest: %r" % m)
    expect(["get", c, "--at", "1"], 1, err_has="EAGAIN")
    expect(["get", c, "--at", "-1.5x"], 2, err_has="bad --at")
    expect(["get", c, "--at", "-1s", "--wait"], 2)
    expect(["get", c, "--seq", "99"], 1, err_has="EAGAIN")
    expect(["get", c, "--seq", "99", "--wait", "--timeout", "0.05"], 1,
           err_has="ETIMEDOUT")
    expect(["get", c, "--seq", "0"], 2)
    expect(["get", c, "--newest", "--next"], 2)
    expect(["get", c, "--format", "yaml"], 2, err_has="unknown format")
    expect(["get", c, "--timeout", "1"], 2, err_has="needs --wait")
    expect(["get", name("missing")], 1, err_has="ENOENT")
    expect(["get"], 2)
    # Overwritten messages
    for i in range(20):
        expect(["put", c, "m%d" % i], 0)
    expect(["get", c, "--seq", "1"], 1, err_has="EOVERWRITTEN")
    m = json.loads(expect(["get", c, "--next", "--format", "json"], 0)[0])
    # A new reader missed nothing: the history before it was never its to
    # read (docs/cli.md, "missed").
    check(m["seq"] > 1 and m["missed"] == 0,
          "--next after overwrite: the oldest present, missed 0: %r" % m)
    expect(["put", c], 1, input=b"x" * 8192, err_has="EMSGSIZE")
    expect(["put", name("missing"), "x"], 1, err_has="ENOENT")
    expect(["put"], 2)
    expect(["put", c, "a", "b"], 2)
    expect(["put", c, "x", "--timeout", "soon"], 2)
    expect(["rm", c], 0)


def wait_for_waiter(c, proc):
    """Poll the channel's waiter count (a condition, not a sleep) until the
    reader has announced itself."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        rc, out, _ = run("info", c, "--json")
        if rc == 0 and json.loads(out)["waiters"] >= 1:
            return True
        time.sleep(0.01)
    return False


def test_cat():
    c = name("cat")
    expect(["create", c, "--slots", "64"], 0)
    for i in range(5):
        expect(["put", c, "old%d" % i], 0)
    out, _ = expect(["cat", c, "--all", "--count", "3", "--format", "json"], 0)
    msgs = [json.loads(line) for line in out.splitlines()]
    check([m["text"] for m in msgs] == ["old0", "old1", "old2"],
          "cat --all --count: %r" % msgs)
    check(all(set(m) == {"seq", "time", "time_ns", "size", "missed", "text"}
              for m in msgs), "cat json fields")
    expect(["cat", c, "--timeout", "0.05"], 1, err_has="ETIMEDOUT")
    # Following: only messages published after cat started.
    p = subprocess.Popen([NERVE, "cat", c, "--count", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ok = wait_for_waiter(c, p)
        check(ok, "cat waits on the channel")
        expect(["put", c, "new1"], 0)
        expect(["put", c, "new2"], 0)
        out, err = p.communicate(timeout=20)
        check(p.returncode == 0 and out == b"new1\nnew2\n",
              "cat follows new messages: %d %r %r" % (p.returncode, out, err))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # --newest and Ctrl-C
    p = subprocess.Popen([NERVE, "cat", c, "--newest", "--format", "json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        check(wait_for_waiter(c, p), "cat --newest waits")
        expect(["put", c, "n1"], 0)
        line = p.stdout.readline()
        check(json.loads(line)["text"] == "n1", "cat --newest: %r" % line)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=20)
        check(p.returncode == 0, "cat ends with exit 0 on SIGINT: %d"
              % p.returncode)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    expect(["cat", c, "--count", "0"], 2)
    expect(["cat", name("missing")], 1, err_has="ENOENT")
    expect(["cat"], 2)
    expect(["rm", c], 0)


def test_chmod():
    c = name("mode")
    expect(["create", c], 0)
    expect(["chmod", "0600", c], 0)
    info = json.loads(expect(["info", c, "--json"], 0)[0])
    check(info["mode"] == "0600", "chmod shows in info: %r" % info["mode"])
    st = os.stat("/dev/shm/nerve." + c)
    check(stat.S_IMODE(st.st_mode) == 0o600, "chmod sets the file mode")
    expect(["chmod", "640", c], 0)
    check(stat.S_IMODE(os.stat("/dev/shm/nerve." + c).st_mode) == 0o640,
          "chmod without leading zero")
    bell = stat.S_IMODE(os.stat("/dev/shm/nerve-bell." + c).st_mode)
    check(bell == 0o640, "bell keeps the channel's mode: %o" % bell)
    expect(["chmod", "8", c], 2, err_has="bad mode")
    expect(["chmod", "rw", c], 2)
    expect(["chmod", "17777", c], 2)
    expect(["chmod", "0644"], 2)
    expect(["chmod", "0644", name("missing")], 1, err_has="ENOENT")
    expect(["chmod", "0644", "bad/name"], 2, err_has="EINVAL")
    expect(["rm", c], 0)


def test_check():
    c = name("chk")
    expect(["create", c, "--slots", "8", "--size", "4K"], 0)
    expect(["check", c], 0, out_has=c + ": ok")
    for i in range(12):
        expect(["put", c, "message %d" % i], 0)
    expect(["check", c], 0, out_has="writer lock: free")
    # A lock word naming a thread that does not exist (issue 11): check
    # reports it, --repair resets it, --force needs --repair.
    with open("/dev/shm/nerve." + c, "r+b") as f:
        f.seek(128)
        f.write((0x3FFFFFF0).to_bytes(4, "little"))
    expect(["check", c], 0, out_has="does not exist")
    expect(["check", "--force", c], 2)
    expect(["check", "--repair", c], 0, out_has="reset")
    expect(["check", c], 0, out_has="owner died")
    expect(["put", c, "after repair"], 0)
    expect(["check", "--repair", c], 0, out_has="nothing to reset")
    src = "/dev/shm/nerve." + c
    size = os.path.getsize(src)
    # Garbage over the header: not a channel any more.
    bad = name("bad-magic")
    shutil.copyfile(src, "/dev/shm/nerve." + bad)
    with open("/dev/shm/nerve." + bad, "r+b") as f:
        f.write(b"\xde\xad\xbe\xef" * 16)
    expect(["check", bad], 1, err_has="ENOTCHAN")
    os.unlink("/dev/shm/nerve." + bad)
    # Garbage after the magic: the header or the index no longer adds up.
    bad = name("bad-body")
    shutil.copyfile(src, "/dev/shm/nerve." + bad)
    with open("/dev/shm/nerve." + bad, "r+b") as f:
        f.seek(64)
        f.write(bytes((i * 37 + 11) & 0xff for i in range(size - 64)))
    rc, _, err = run("check", bad)
    check(rc == 1 and ("ECORRUPT" in err or "ETRUNC" in err
                       or "EVERSION" in err or "EABI" in err),
          "check finds garbage: %d %r" % (rc, err))
    os.unlink("/dev/shm/nerve." + bad)
    # Truncated file.
    bad = name("short")
    shutil.copyfile(src, "/dev/shm/nerve." + bad)
    os.truncate("/dev/shm/nerve." + bad, size // 2)
    rc, _, err = run("check", bad)
    check(rc == 1 and ("ETRUNC" in err or "ECORRUPT" in err),
          "check finds a truncated file: %r" % err)
    os.unlink("/dev/shm/nerve." + bad)
    expect(["check", name("missing")], 1, err_has="ENOENT")
    # A bell left without its channel (a create or rm killed between its
    # two steps; made here by removing the channel file alone): check
    # reports it, rm removes it and says so (issue 28, item 6).
    orphan = name("orphan")
    expect(["create", orphan, "--slots", "8", "--size", "4K"], 0)
    os.unlink("/dev/shm/nerve." + orphan)
    expect(["check", orphan], 1, err_has="orphaned bell /dev/shm/nerve-bell." + orphan)
    expect(["rm", orphan], 0, err_has="removed its orphaned bell")
    check(not os.path.exists("/dev/shm/nerve-bell." + orphan), "rm left the orphaned bell")
    expect(["rm", orphan], 1, err_has="ENOENT")
    expect(["check", "bad/name"], 2, err_has="EINVAL")
    expect(["check"], 2)
    expect(["rm", c], 0)


def test_pid_namespaces():
    """Writers in containers that share /dev/shm but not their PID
    namespace (issue 27, item 1), with the real `unshare --pid --fork`: a
    container's writer that exited, and its restart in a fresh namespace,
    both write; the host takes over after them; while a descriptor holds
    the channel's claim byte (what every open writer handle does) a writer
    from another namespace is refused with EXDEV and exit 1."""
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run(
            [unshare, "--pid", "--fork", "true"],
            capture_output=True, timeout=30).returncode != 0:
        print("test_pid_namespaces: skipped: `unshare --pid --fork` is not "
              "permitted here (needs root / CAP_SYS_ADMIN)")
        return
    if not hasattr(fcntl, "F_OFD_SETLK"):
        print("test_pid_namespaces: skipped: no F_OFD_SETLK in this Python")
        return
    c = name("pidns")
    expect(["create", c, "--slots", "8", "--size", "4K"], 0)

    def in_new_ns(*args):
        p = subprocess.run([unshare, "--pid", "--fork", NERVE]
                           + [str(a) for a in args],
                           capture_output=True, timeout=30)
        return p.returncode, p.stderr.decode(errors="replace")

    for msg in ("first container", "restarted container"):
        rc, err = in_new_ns("put", c, msg)
        check(rc == 0, "put from a new PID namespace: exit %d (%s)"
              % (rc, err.strip()))
    expect(["put", c, "host"], 0)
    out, _ = expect(["get", c, "--seq", "2"], 0)
    check(out.startswith(b"restarted container"), "seq 2: %r" % out)
    # struct flock: l_type, l_whence, l_start, l_len, l_pid (Linux, LP64).
    lock = struct.pack("hh4xqqi4x", fcntl.F_RDLCK, os.SEEK_SET, 200, 1, 0)
    fd = os.open("/dev/shm/nerve." + c, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, lock)
        rc, err = in_new_ns("put", c, "refused")
        check(rc == 1 and "EXDEV" in err,
              "put from another namespace while the claim byte is held: "
              "exit %d, %r" % (rc, err))
        expect(["put", c, "same namespace"], 0)
    finally:
        os.close(fd)
    rc, err = in_new_ns("put", c, "after")
    check(rc == 0, "put from a new namespace once the byte is free: exit %d "
          "(%s)" % (rc, err.strip()))
    expect(["rm", c], 0)


def test_strange_files():
    """Anything a user can place in /dev/shm: every verb answers ENOTCHAN
    for a FIFO or a directory at a channel's name (never hangs, never
    'invalid argument'), ls lists it beside the good channels, and check
    says when a channel's bell is not used."""
    good, fifo, dirn = name("good"), name("fifo"), name("dir")
    expect(["create", good, "--slots", "8", "--size", "4K"], 0)
    os.mkfifo("/dev/shm/nerve." + fifo)
    os.mkdir("/dev/shm/nerve." + dirn)
    try:
        for n in (fifo, dirn):
            for verb in (["info", n], ["check", n], ["get", n], ["put", n, "x"],
                         ["rm", n], ["chmod", "0600", n]):
                expect(verb, 1, err_has="ENOTCHAN")
        expect(["rm", dirn], 1,
               err_has="nerve rm: %s: ENOTCHAN: file is not a nerve channel" % dirn)
        expect(["create", fifo], 1, err_has="EEXIST")
        check(os.path.isdir("/dev/shm/nerve." + dirn), "rm left the directory")
        out, _ = expect(["ls"], 0)
        lines = out.decode().splitlines()
        for n in (fifo, dirn):
            line = next((ln for ln in lines if ln.startswith(n + " ")), "")
            check("ENOTCHAN" in line, "ls shows %s as not a channel: %r" % (n, line))
        check(any(ln.startswith(good + " ") and " 8 " in ln for ln in lines),
              "ls still shows the good channel: %r" % lines)
        listed = {e["name"]: e for e in json.loads(expect(["ls", "--json"], 0)[0])}
        check(listed[fifo].get("error") == "ENOTCHAN", "ls --json: %r" % listed[fifo])
        check(listed[good].get("slots") == 8, "ls --json good: %r" % listed[good])
        # A bell that is not the creator's is not used, and check says so.
        os.chmod("/dev/shm/nerve-bell." + good, 0o666)
        expect(["check", good], 0,
               out_has="; bell not used (bell mode 0666 differs")
    finally:
        os.unlink("/dev/shm/nerve." + fifo)
        os.rmdir("/dev/shm/nerve." + dirn)
    expect(["rm", good], 0)
    check(not os.path.exists("/dev/shm/nerve-bell." + good), "rm removed the bell")


def test_review_regressions():
    """Bad input found in review: each is a usage error or a clean failure,
    and JSON stays valid whatever bytes the metadata holds."""
    c = name("rev")
    # Type and encoding are UTF-8 text: anything else is refused at create.
    expect(["create", c, "--type", os.fsdecode(b"\xff\xfeimu")], 1,
           err_has="--type is not valid UTF-8")
    expect(["create", c, "--encoding", os.fsdecode(b"caf\xe9")], 1,
           err_has="--encoding is not valid UTF-8")
    expect(["create", c, "--type", "caf\u00e9/Imu"], 0)
    info = json.loads(expect(["info", c, "--json"], 0)[0])  # valid JSON
    check(info["type"] == "caf\u00e9/Imu", "UTF-8 type: %r" % info["type"])
    listed = json.loads(expect(["ls", "--json"], 0)[0])
    check(any(e["name"] == c for e in listed), "ls --json lists the channel")
    expect(["put", c, "x"], 0)
    expect(["get", c, "--seq", " -18446744073709551615"], 2)
    expect(["create", name("rev2"), "--slots", " -1"], 2)
    expect(["chmod", "4755", c], 2)
    expect(["create", name("rev3"), "--mode", "07777"], 2)
    expect(["bench", "--rate", "1e-12", "--duration", "0.3"], 2)
    expect(["bench", "--rate", "1e6", "--duration", "3600"], 2)
    expect(["help", "d/../x"], 2)
    if os.path.exists("/dev/full"):
        with open("/dev/full", "wb") as full:
            p = subprocess.run([NERVE, "ls"], stdout=full,
                               stderr=subprocess.PIPE, timeout=30)
        check(p.returncode == 1, "nerve ls > /dev/full: exit %d, want 1"
              % p.returncode)
    expect(["rm", c], 0)


def hold(n, write):
    """A process that maps channel n as a handle does (rw-s for a writer,
    r--s for a reader) and holds it until killed; returns it once mapped."""
    code = ("import mmap, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR if sys.argv[2] == 'w' else os.O_RDONLY)\n"
            "prot = mmap.PROT_READ | (mmap.PROT_WRITE if sys.argv[2] == 'w' else 0)\n"
            "m = mmap.mmap(fd, 4096, mmap.MAP_SHARED, prot)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code, "/dev/shm/nerve." + n,
                          "w" if write else "r"], stdout=subprocess.PIPE)
    p.stdout.readline()
    return p


def test_rm_in_use():
    """rm names the processes that still have a channel open, and refuses
    (exit 1) while a writer has it, unless --force."""
    n = name("rmuse")
    expect(["create", n], 0)
    reader = hold(n, write=False)
    writer = hold(n, write=True)
    try:
        _, err = expect(["rm", n], 1, err_has="still open in 2 processes")
        check("pid %d" % writer.pid in err and "may write" in err,
              "rm: the writer is not named: %r" % err)
        check("pid %d" % reader.pid in err and "reads" in err,
              "rm: the reader is not named: %r" % err)
        check("--force" in err, "rm: --force is not offered: %r" % err)
        check(os.path.exists("/dev/shm/nerve." + n),
              "rm removed a channel that a writer has open")
        writer.kill()
        writer.wait()
        # Readers only: removed, and they are named.
        _, err = expect(["rm", n], 0, err_has="pid %d" % reader.pid)
        check(not os.path.exists("/dev/shm/nerve." + n),
              "rm with only a reader left did not remove the channel")
        expect(["create", n], 0)
        writer = hold(n, write=True)
        expect(["rm", "--force", n], 0, err_has="pid %d" % writer.pid)
        check(not os.path.exists("/dev/shm/nerve." + n),
              "rm --force did not remove the channel")
    finally:
        for p in (reader, writer):
            p.kill()
            p.wait()


def test_first_commands():
    """What a new user types first: external verbs have a line each in
    help; a near-miss verb gets a suggestion; nerve ach works from the
    build tree; put at a terminal says it reads standard input."""
    out, _ = expect(["help"], 0, out_has="external verbs")
    for verb, words in (("hz", "message rate"), ("top", "live monitor"),
                        ("who", "which processes"), ("cyclic", "jitter"),
                        ("ros2", "ROS 2 topics; 'ros2 exec' runs"),
                        ("ros2-dds", "DDS data path"),
                        ("ros2-exec", "rmw_nerve_cpp")):
        line = [ln for ln in out.decode().splitlines()
                if ln.startswith("  %s " % verb)]
        check(line and words in line[0],
              "help gives %s a line with its summary: %r" % (verb, line))
    expect(["gett"], 2, err_has="did you mean 'get'?")
    # Typos in the external verbs nerve ships get a suggestion too; one of
    # them that is not installed says how to install it.
    env = dict(os.environ, PATH="/usr/bin:/bin")
    expect(["ros2-exce"], 2, err_has="did you mean 'ros2-exec'?", env=env)
    expect(["recrod"], 2, err_has="did you mean 'record'?", env=env)
    _, _, err = run("ros2", env=env)
    check("'ros2' is a verb of nerve's that is not installed here" in err
          and "pip install ./python-tools" in err,
          "an uninstalled shipped verb says how to install it: %r" % err)
    one = name("one-slot")
    expect(["create", one, "--slots", "1"], 0, out_has="%s: 1 slot, " % one)
    expect(["rm", one], 0)
    expect(["crate", "x"], 2, err_has="did you mean 'create'?")
    ach = os.path.join(os.path.dirname(NERVE), "nerve-ach")
    if os.access(ach, os.X_OK):
        expect(["ach", "-V"], 0)
    else:
        print("test_first_commands: no nerve-ach built beside nerve: "
              "'nerve ach' not tried")
    import pty
    n = name("tty")
    expect(["create", n], 0)
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(NERVE, [NERVE, "put", n])
    said = b""
    status = None
    try:
        deadline = time.monotonic() + 20
        while b"standard input" not in said and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.5)[0]:
                try:
                    said += os.read(fd, 1024)
                except OSError:
                    break
        os.write(fd, b"typed\n")
        # End of input: Ctrl-D at the start of a line, again until put
        # has taken it (the terminal may deliver the first with the line).
        while status is None and time.monotonic() < deadline:
            os.write(fd, b"\x04")
            select.select([fd], [], [], 0.1)
            done, st = os.waitpid(pid, os.WNOHANG)
            status = st if done else None
    finally:
        if status is None:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        os.close(fd)
    check(b"reading the message for %s from standard input" % n.encode()
          in said and b"Ctrl-D" in said,
          "put at a terminal does not say it reads stdin: %r" % said)
    check(os.WEXITSTATUS(status) == 0, "put from a terminal failed: %r" % said)
    out, _ = expect(["get", n, "--format", "raw"], 0)
    check(out == b"typed\n", "put from a terminal put %r" % out)
    expect(["rm", n], 0)


def test_words_a_user_can_follow():
    """User-visible text cites papers by title, not by the project's
    internal names for them ("seed 003", "issue 16"): every verb's --help,
    nerve cyclic's, the README and docs/ (design records excepted)."""
    import re
    bad = re.compile(r"\bseeds? 0\d\d\b|\bissue \d+\b", re.I)
    texts = {}
    for verb in ["create", "rm", "ls", "info", "put", "get", "cat", "chmod",
                 "check", "bench", "help"]:
        texts["nerve %s --help" % verb] = run(verb, "--help")[1].decode()
    cyclic = os.path.join(os.path.dirname(NERVE), "nerve-cyclic")
    if os.access(cyclic, os.X_OK):
        texts["nerve cyclic --help"] = run("cyclic", "--help")[1].decode()
    root = os.path.dirname(os.path.dirname(HERE))
    docs = [os.path.join(root, "README.md")] + [
        os.path.join(root, "docs", f)
        for f in sorted(os.listdir(os.path.join(root, "docs")))
        if f.endswith(".md")]
    for path in docs:
        with open(path, encoding="utf-8") as f:
            texts[os.path.relpath(path, root)] = f.read()
    for where, text in texts.items():
        for m in bad.finditer(text):
            check(False, "%s says %r: cite the paper or document by title"
                  % (where, text[max(0, m.start() - 30):m.end() + 10]))


def test_reader_starts_first():
    """get --wait and cat with a timeout wait for a missing channel to be
    created (readers often start first) and read what comes; without a
    timeout they say how to wait."""
    for verb in (["get", "--wait", "--next"], ["cat", "--count", "2", "--format",
                                     "text"]):
        n = name("first-" + verb[0])
        p = subprocess.Popen([NERVE, verb[0], n] + verb[1:] +
                             ["--timeout", "30"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        try:
            line = p.stderr.readline().decode()
            check("waiting up to 30 s for it to be created" in line,
                  "%s on a missing channel: %r" % (verb[0], line))
            expect(["create", n], 0)
            expect(["put", n, "one"], 0)
            expect(["put", n, "two"], 0)
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        want = b"one" if verb[0] == "get" else b"one\ntwo"
        check(p.returncode == 0 and out.strip() == want,
              "%s started before the channel: exit %s, %r, %r"
              % (verb[0], p.returncode, out, err))
        expect(["rm", n], 0)
    n = name("never")
    expect(["cat", n], 1, err_has="give --timeout SEC to wait")
    expect(["get", n, "--wait", "--timeout", "0.05"], 1,
           err_has="no channel of that name was created within 0.05 s")


def test_errors_one_voice():
    """The five mistakes of every binding's error test (tests/unit
    test_chan_basic.c, tests/cxx test_cxx_api.cpp, tests/python
    test_api.py): 'nerve VERB: NAME: CODE: detail', the library's detail;
    and a size the option grammar refuses names the grammar."""
    n, gone = name("voice"), name("voice-gone")
    expect(["create", n, "--slots", "8", "--size", "4096", "--type",
            "demo/A"], 0)
    expect(["put", n], 1, input=b"x" * 5000,
           err_has="nerve put: %s: EMSGSIZE: a message of 5000 bytes does "
                   "not fit: the channel's data ring is 4096 bytes (the "
                   "largest message); 'nerve create --size' sets the data "
                   "ring" % n)
    expect(["get", "bad name"], 2,
           err_has="nerve get: 'bad name': EINVAL: a space is not allowed "
                   "in a channel name (names use A-Z a-z 0-9 _ . -")
    expect(["get", gone], 1,
           err_has="nerve get: %s: ENOENT: no such channel; "
                   "'nerve ls' lists channels" % gone)
    expect(["create", n], 1,
           err_has="nerve create: %s: EEXIST: a channel of this name exists"
                   " (open it" % n)
    expect(["create", n, "--slots", "8", "--size", "4096", "--type",
            "demo/B", "--exist-ok"], 1,
           err_has="nerve create: %s: EMISMATCH: the channel exists with "
                   "type 'demo/A'" % n)
    expect(["create", name("voice-t"), "--size", "1P"], 2,
           err_has="bad --size '1P' (bytes of the data ring, the largest "
                   "message: a number with an optional K, M, G or T suffix")
    expect(["rm", n], 0)


def test_one_size_grammar():
    """Every spelling the one size grammar promises (docs/cli.md, tools/
    cli_size.c) gives the same bytes; what it refuses is a usage error
    naming the grammar, and create's exact file size is what it took."""
    page = os.sysconf("SC_PAGE_SIZE")
    for text, want in (("8192", 8192), ("8K", 8192), ("8k", 8192),
                       ("8KiB", 8192), ("8kb", 8192), ("8KB", 8192),
                       ("1M", 1 << 20), ("1MiB", 1 << 20), ("16B", 16)):
        n = name("size")
        expect(["create", n, "--slots", "4", "--size", text], 0,
               out_has="/dev/shm/nerve." + n)
        rc, out, _ = run("info", n, "--json")
        info = json.loads(out) if rc == 0 else {}
        round_up = (want + page - 1) // page * page
        check(info.get("data_size") == round_up,
              "--size %s: data ring %r, want %d" % (text, info.get("data_size"),
                                                   round_up))
        check(os.path.getsize("/dev/shm/nerve." + n) == info.get("file_size"),
              "--size %s: the file is as large as info says" % text)
        expect(["rm", n], 0)
    for bad in ("64i", "-1", "+1", " 8K", "8.5K", "1P", "K", "8KiBB",
                "18446744073709551616", "20000000T"):
        expect(["create", name("size-bad"), "--size", bad], 2,
               err_has="bad --size '%s' (bytes of the data ring, the largest "
                       "message: a number with an optional K, M, G or T "
                       "suffix" % bad)


def main():
    if NERVE is None or not os.access(NERVE, os.X_OK):
        print("usage: test_cli.py PATH/TO/nerve", file=sys.stderr)
        return 1
    if not os.path.isdir("/dev/shm"):
        print("SKIP: no /dev/shm")
        return 77
    tests = [test_help, test_external_verbs, test_create_rm, test_info_ls,
             test_ls_columns_hold_long_names,
             test_put_get, test_cat, test_chmod, test_check,
             test_pid_namespaces, test_strange_files, test_review_regressions,
             test_rm_in_use, test_rm_not_owner, test_first_commands, test_words_a_user_can_follow,
             test_reader_starts_first, test_errors_one_voice,
             test_one_size_grammar]
    try:
        for t in tests:
            n = len(FAILURES)
            t()
            print("%s: %s" % (t.__name__, "ok" if len(FAILURES) == n
                                          else "FAILED"))
    finally:
        for n in MADE:
            for p in ("/dev/shm/nerve." + n, "/dev/shm/nerve-bell." + n):
                if os.path.exists(p):
                    os.unlink(p)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
