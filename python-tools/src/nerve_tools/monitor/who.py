"""nerve who: the processes that have channels open, found from /proc.

A process that opened a channel maps its file, /dev/shm/nerve.NAME, and
keeps a descriptor of it open. It is listed as a **writer** only where it
could really write the channel: a shared writable mapping (``rw-s`` in
/proc/PID/maps) or a descriptor opened for writing (O_WRONLY or O_RDWR in
/proc/PID/fdinfo/FD). A read-only handle (``r--s``, O_RDONLY) is a reader,
and so is a private writable mapping (``rw-p``): its writes go to the
process's own copy, never to the channel, and any user who may read a
channel can make one. Nothing is written to any channel: readers of /proc
and of the channel header only.

The holder of a channel's writer lock is what the library reports of it
(``nerve.stat(name).lock_owner_tid``, a thread id as the holder's PID
namespace numbers it, and ``lock_flags``), read only from a file the
library validates as a channel (magic, layout version, ABI, geometry):
anyone may plant a file under a channel's name. Where channel files live
is the library's word too (``nerve.path``).

Every name, command line and container id is printed escaped
(``_text.escape``): a process or file name cannot write into the terminal.

Processes of other users can be inspected only with the permission to read
their /proc/PID/maps (root, or CAP_SYS_PTRACE); those that cannot be
inspected are counted and the count printed."""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import pwd
import re
import sys
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import nerve

from .._text import escape

PROG = "nerve who"
#: The path of every channel file begins with PREFIX (the library's
#: nerve_chan_path): "/dev/shm/nerve."; the rest is the channel's name.
PREFIX = nerve.path()
SHM = os.path.dirname(PREFIX)

_CONTAINER = re.compile(r"(?:docker|containerd|libpod|podman|crio|cri-containerd|lxc)[-/:]?"
                        r"([0-9a-f]{12,64}|[A-Za-z0-9_.-]+)")


# Tuples and a plain class, not dataclasses: a recorder armed for days
# (nerve blackbox) scans with this module, and dataclasses imports inspect
# (about 1 MB of its memory).
class Use(NamedTuple):
    """One process with one channel open."""

    channel: str
    pid: int
    access: str            # "write" (a shared writable mapping or a descriptor
                           # open for writing) or "read"
    command: str
    user: str
    pidns: str             # "pid:[4026531836]"
    same_pidns: bool       # in the PID namespace of `nerve who`
    container: str         # container id or name from the cgroup, "" if none
    deleted: bool = False  # the channel was removed while open


class LockHolder(NamedTuple):
    channel: str
    tid: int
    pid: Optional[int]     # None: not a thread visible here (another PID namespace)
    command: str
    owner_died: bool


class Scan:
    """What a scan found (a plain class: dataclasses would import inspect,
    which the armed recorder does not want in its memory)."""

    def __init__(self, uses: Optional[List[Use]] = None,
                 holders: Optional[List[LockHolder]] = None,
                 uninspectable: int = 0) -> None:
        self.uses: List[Use] = uses if uses is not None else []
        self.holders: List[LockHolder] = holders if holders is not None else []
        self.uninspectable = uninspectable  # processes whose maps could not be read


def _read(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return None


def _proc_facts(pid: int, ours: str) -> Tuple[str, str, str, bool, str]:
    comm = (_read(f"/proc/{pid}/comm") or "?").strip()
    cmdline = " ".join((_read(f"/proc/{pid}/cmdline") or "").replace("\0", " ").split())
    command = cmdline or f"[{comm}]"
    status = _read(f"/proc/{pid}/status") or ""
    m = re.search(r"^Uid:\s+(\d+)", status, re.M)
    user = "?"
    if m:
        uid = int(m.group(1))
        try:
            user = pwd.getpwuid(uid).pw_name
        except KeyError:
            user = str(uid)
    try:
        ns = os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        ns = "?"
    cg = _read(f"/proc/{pid}/cgroup") or ""
    cm = _CONTAINER.search(cg)
    container = cm.group(1)[:12] if cm else ""
    return command, user, ns, ns == ours, container


def _maps_channels(pid: int) -> Optional[Dict[str, Tuple[bool, bool]]]:
    """channel -> (writable, deleted) of one process, from its mappings and
    its descriptors; None if its maps are unreadable."""
    text = _read(f"/proc/{pid}/maps")
    if text is None:
        return None
    out: Dict[str, Tuple[bool, bool]] = {}
    prefix = PREFIX

    def note(path: str, writable: bool) -> None:
        deleted = path.endswith(" (deleted)")
        if deleted:
            path = path[: -len(" (deleted)")]
        name = path[len(prefix):]
        pw, pd = out.get(name, (False, False))
        out[name] = (pw or writable, pd or deleted)

    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith(prefix):
            continue
        perms = parts[1]
        # rw-s: a shared writable mapping writes the channel; rw-p is a
        # private copy-on-write one, which any reader may make.
        note(parts[5], len(perms) == 4 and perms[1] == "w" and perms[3] == "s")
    for fd, path in _fds(pid):
        if not path.startswith(prefix):
            continue
        known = out.get(path[len(prefix):].removesuffix(" (deleted)"))
        # A channel already known writable needs no more descriptors read.
        note(path, bool(known and known[0]) or _fd_writable(pid, fd))
    return out


def _fds(pid: int) -> List[Tuple[str, str]]:
    """(fd, target) of the process's descriptors that are files in /dev/shm
    (a process exiting meanwhile has none). Raw os calls: a process may
    hold thousands (a handle each)."""
    base = f"/proc/{pid}/fd/"
    try:
        fds = os.listdir(base)
    except OSError:
        return []
    res = []
    shm = SHM + "/"
    for fd in fds:
        try:
            target = os.readlink(base + fd)
        except OSError:
            continue
        if target.startswith(shm):
            res.append((fd, target))
    return res


def _fd_writable(pid: int, fd: str) -> bool:
    """Whether descriptor ``fd`` was opened for writing (its access mode in
    /proc/PID/fdinfo/FD ``flags``, octal: O_WRONLY 1 or O_RDWR 2)."""
    try:
        f = os.open(f"/proc/{pid}/fdinfo/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        text = os.read(f, 256)
    except OSError:
        return False
    finally:
        os.close(f)
    i = text.find(b"flags:")
    if i < 0:
        return False
    digits = text[i + 6:].split(None, 1)
    try:
        return bool(digits) and (int(digits[0], 8) & 3) in (1, 2)
    except ValueError:
        return False


def lock_holder(name: str) -> Optional[LockHolder]:
    """Who holds the writer lock of channel ``name`` (None: free, or the
    file is not a channel)."""
    try:
        info = nerve.stat(name)
    except (nerve.Error, ValueError, TypeError):
        return None
    tid = info.lock_owner_tid
    if tid == 0:
        return None
    status = _read(f"/proc/{tid}/status")
    pid = None
    command = "?"
    if status is not None:
        m = re.search(r"^Tgid:\s+(\d+)", status, re.M)
        if m:
            pid = int(m.group(1))
            command = " ".join((_read(f"/proc/{pid}/cmdline") or "").replace("\0", " ").split()) or "?"
    return LockHolder(name, tid, pid, command, bool(info.lock_flags & nerve.LOCK_OWNER_DIED))


def scan(patterns: Sequence[str] = ()) -> Scan:
    """Every process with a channel matching ``patterns`` (all: empty) open,
    and the writer-lock holders of those channels."""
    try:
        ours = os.readlink("/proc/self/ns/pid")
    except OSError:
        ours = "?"
    me = os.getpid()
    res = Scan()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        chans = _maps_channels(pid)
        if chans is None:
            if os.path.exists(f"/proc/{pid}"):
                res.uninspectable += 1
            continue
        chans = {n: v for n, v in chans.items()
                 if not patterns or any(fnmatch.fnmatchcase(n, p) for p in patterns)}
        if not chans:
            continue
        command, user, ns, same, container = _proc_facts(pid, ours)
        for name, (w, deleted) in sorted(chans.items()):
            res.uses.append(Use(name, pid, "write" if w else "read", command, user, ns,
                                same, container, deleted))
    res.uses.sort(key=lambda u: (u.channel, u.access != "write", u.pid))
    names = sorted({u.channel for u in res.uses if not u.deleted})
    if patterns:
        try:
            base = os.path.basename(PREFIX)
            present = [e[len(base):] for e in os.listdir(SHM) if e.startswith(base)]
        except OSError:
            present = []
        names = sorted(set(names) | {n for n in present
                                     if any(fnmatch.fnmatchcase(n, p) for p in patterns)})
    for n in names:
        h = lock_holder(n)
        if h is not None:
            res.holders.append(h)
    return res


def summary(res: Scan) -> Dict[str, Tuple[int, int]]:
    """channel -> (writers, readers) with it open."""
    out: Dict[str, Tuple[int, int]] = {}
    for u in res.uses:
        w, r = out.get(u.channel, (0, 0))
        out[u.channel] = (w + 1, r) if u.access == "write" else (w, r + 1)
    return out


def _short(cmd: str, n: int = 48) -> str:
    return cmd if len(cmd) <= n else cmd[: n - 3] + "..."


def render(res: Scan) -> str:
    """The scan as text. Every name, user, container and command is escaped
    (``_text.escape``): none of them can write into the terminal."""
    lines = []
    if res.uses:
        w = max(8, max(len(escape(u.channel)) for u in res.uses))
        lines.append(f"{'CHANNEL':<{w}}  {'PID':>7}  {'ACCESS':<6}  {'USER':<10}  {'PIDNS':<18}  "
                     f"{'CONTAINER':<12}  COMMAND")
        for u in res.uses:
            ns = u.pidns.replace("pid:", "") + ("" if u.same_pidns else "*")
            name = escape(u.channel) + (" (removed)" if u.deleted else "")
            lines.append(f"{name:<{w}}  {u.pid:>7}  {u.access:<6}  {escape(u.user):<10}  {escape(ns):<18}  "
                         f"{escape(u.container) or '-':<12}  {_short(escape(u.command))}")
    else:
        lines.append("no process has a matching channel open")
    for h in res.holders:
        who = f"pid {h.pid}, {_short(escape(h.command))}" if h.pid else "not visible here (another PID namespace?)"
        died = " (its owner died: the next writer recovers it)" if h.owner_died else ""
        lines.append(f"{escape(h.channel)}: writer lock held by thread {h.tid} ({who}){died}")
    if any(not u.same_pidns for u in res.uses):
        lines.append("* a PID namespace other than this one (a container)")
    if res.uninspectable:
        lines.append(f"({res.uninspectable} process{'es' if res.uninspectable > 1 else ''} could not "
                     "be inspected: no permission to read /proc/PID/maps)")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    # Here, not at the top: `nerve blackbox` imports this module for scan()
    # and keeps it while armed; options brings the bridge kernel's module.
    from .. import options

    p = argparse.ArgumentParser(
        prog=PROG,
        description="Show the processes that have channels open (from /proc/PID/maps: read-only "
                    "or writable mappings), with pid, user, PID namespace, container and command, "
                    "and the holder of each writer lock that is held. Writes nothing.")
    options.add_patterns(p, "every channel")
    options.add_json(p, 'one JSON object: {"uses": [...], "lock_holders": [...], "uninspectable": N}')
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    res = scan(args.patterns)
    if args.json:
        print(json.dumps({"uses": [u._asdict() for u in res.uses],
                          "lock_holders": [h._asdict() for h in res.holders],
                          "uninspectable": res.uninspectable}))
    else:
        print(render(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
