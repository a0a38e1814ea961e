"""nerve who: the processes that have channels open, found from /proc.

A process that opened a channel maps its file, /dev/shm/nerve.NAME; its
/proc/PID/maps line shows the mapping's permissions: ``r--s`` for a reader
(a read-only handle), ``rw-s`` for a handle that may write. Nothing is
written to any channel: readers of /proc and of the channel header only.

The holder of a channel's writer lock is read from the lock word of the
channel header (a robust priority-inheritance mutex: the word is the
owner's thread id, docs/design/0001-shm-layout.md, offset 128), as the
holder's PID namespace numbers it.

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
import stat
import struct
import sys
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

PROG = "nerve who"
SHM = "/dev/shm"
LOCK_OFFSET = 128          # the writer lock in the channel header
FUTEX_TID_MASK = 0x3FFFFFFF

_CONTAINER = re.compile(r"(?:docker|containerd|libpod|podman|crio|cri-containerd|lxc)[-/:]?"
                        r"([0-9a-f]{12,64}|[A-Za-z0-9_.-]+)")


@dataclass
class Use:
    """One process with one channel open."""

    channel: str
    pid: int
    access: str            # "write" (a writable mapping) or "read"
    command: str
    user: str
    pidns: str             # "pid:[4026531836]"
    same_pidns: bool       # in the PID namespace of `nerve who`
    container: str         # container id or name from the cgroup, "" if none
    deleted: bool = False  # the channel was removed while open


@dataclass
class LockHolder:
    channel: str
    tid: int
    pid: Optional[int]     # None: not a thread visible here (another PID namespace)
    command: str
    owner_died: bool


@dataclass
class Scan:
    uses: List[Use] = field(default_factory=list)
    holders: List[LockHolder] = field(default_factory=list)
    uninspectable: int = 0  # processes whose maps could not be read


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
    """channel -> (writable, deleted) of one process; None if unreadable."""
    text = _read(f"/proc/{pid}/maps")
    if text is None:
        return None
    out: Dict[str, Tuple[bool, bool]] = {}
    prefix = f"{SHM}/nerve."
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith(prefix):
            continue
        path = parts[5]
        deleted = path.endswith(" (deleted)")
        if deleted:
            path = path[: -len(" (deleted)")]
        name = path[len(prefix):]
        w = parts[1][1] == "w"
        pw, pd = out.get(name, (False, False))
        out[name] = (pw or w, pd or deleted)
    return out


def lock_holder(name: str) -> Optional[LockHolder]:
    """Who holds the writer lock of channel ``name`` (None: free)."""
    # Anyone may plant a FIFO or a link under a channel's name: open
    # nothing that can block or lead elsewhere, and read only regular files.
    try:
        fd = os.open(f"{SHM}/nerve.{name}",
                     os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.pread(fd, 4, LOCK_OFFSET)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) != 4:
        return None
    word = struct.unpack("<I", raw)[0]
    tid = word & FUTEX_TID_MASK
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
    return LockHolder(name, tid, pid, command, bool(word & 0x40000000))


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
            present = [e[len("nerve."):] for e in os.listdir(SHM) if e.startswith("nerve.")]
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
    lines = []
    if res.uses:
        w = max(8, max(len(u.channel) for u in res.uses))
        lines.append(f"{'CHANNEL':<{w}}  {'PID':>7}  {'ACCESS':<6}  {'USER':<10}  {'PIDNS':<18}  "
                     f"{'CONTAINER':<12}  COMMAND")
        for u in res.uses:
            ns = u.pidns.replace("pid:", "") + ("" if u.same_pidns else "*")
            name = u.channel + (" (removed)" if u.deleted else "")
            lines.append(f"{name:<{w}}  {u.pid:>7}  {u.access:<6}  {u.user:<10}  {ns:<18}  "
                         f"{u.container or '-':<12}  {_short(u.command)}")
    else:
        lines.append("no process has a matching channel open")
    for h in res.holders:
        who = f"pid {h.pid}, {_short(h.command)}" if h.pid else "not visible here (another PID namespace?)"
        died = " (its owner died: the next writer recovers it)" if h.owner_died else ""
        lines.append(f"{h.channel}: writer lock held by thread {h.tid} ({who}){died}")
    if any(not u.same_pidns for u in res.uses):
        lines.append("* a PID namespace other than this one (a container)")
    if res.uninspectable:
        lines.append(f"({res.uninspectable} process{'es' if res.uninspectable > 1 else ''} could not "
                     "be inspected: no permission to read /proc/PID/maps)")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Show the processes that have channels open (from /proc/PID/maps: read-only "
                    "or writable mappings), with pid, user, PID namespace, container and command, "
                    "and the holder of each writer lock that is held. Writes nothing.")
    p.add_argument("patterns", nargs="*", metavar="NAME",
                   help="channel names or globs (default: every channel)")
    p.add_argument("--json", action="store_true",
                   help='one JSON object: {"uses": [...], "lock_holders": [...], "uninspectable": N}')
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    res = scan(args.patterns)
    if args.json:
        print(json.dumps({"uses": [asdict(u) for u in res.uses],
                          "lock_holders": [asdict(h) for h in res.holders],
                          "uninspectable": res.uninspectable}))
    else:
        print(render(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
