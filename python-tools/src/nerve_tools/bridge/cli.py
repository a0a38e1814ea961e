"""nerve bridge: chosen channels of this host appear, with the same names,
types and newest-first behaviour, on other hosts, carried by Eclipse Zenoh.

    nerve bridge [--listen ENDPOINT]... [--connect ENDPOINT]... [--config ZENOH_JSON5]
                 [--domain N] [--export GLOB]... [--import GLOB]... [--scout] [--stats SEC]
    nerve bridge ls [--connect ENDPOINT]... [--config ZENOH_JSON5] [--domain N] [--json]
    (nerve ls --remote ... runs the second form)

The first form runs the data path, the Rust program nerve-bridge-rs, with
the same arguments (with --ros2: bridge/rmw_zenoh.py, in this process).
docs/bridge.md has the quick start, the key expressions and the metadata
format, Zenoh configuration examples and what is guaranteed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Optional, Sequence

from .. import options
from .._text import escape
from . import registry
from .wire import (
    BridgeError,
    Description,
    SessionOptions,
    open_session,
    prefix,
    query_descriptions,
    wait_connected,
)

PROG = "nerve bridge"
# How long a command that needs the network (ls) waits for a peer.
CONNECT_TIMEOUT_S = 5.0
# After connecting, how long ls lets declarations arrive before it asks.
SETTLE_S = 0.3


def _session_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--connect", action="append", default=[], metavar="ENDPOINT",
                   help="connect to a Zenoh peer or router (Zenoh syntax, e.g. tcp/192.0.2.1:7447)")
    p.add_argument("--config", metavar="ZENOH_JSON5",
                   help="a Zenoh configuration file (mode, TLS, QUIC, routers...); flags override it")
    p.add_argument("--domain", type=int, default=0, metavar="N",
                   help="separates robots sharing a network: keys live under nerve/N/ (0)")
    p.add_argument("--scout", action="store_true",
                   help="find peers by multicast scouting (off unless given)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Mirror nerve channels across hosts through Eclipse Zenoh.",
        epilog="'nerve bridge ls --help' (or 'nerve ls --remote') lists the channels exported on the network.")
    p.add_argument("--listen", action="append", default=[], metavar="ENDPOINT",
                   help="accept Zenoh connections on this endpoint (none unless given)")
    _session_args(p)
    p.add_argument("--export", action="append", default=[], metavar="GLOB",
                   help="publish local channels matching GLOB, also ones created later (nothing unless given)")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="[ORIGIN/]GLOB",
                   help="mirror remote channels matching GLOB into local channels of the same name; "
                        "ORIGIN/GLOB only from bridges whose --id matches the glob ORIGIN")
    p.add_argument("--stats", type=float, metavar="SEC",
                   help="print the counters as one JSON line on stdout every SEC seconds")
    p.add_argument("--id", dest="ident", metavar="NAME",
                   help="this bridge's name on the network (default: the host name and a tag "
                        "unique to this machine, network namespace and /dev/shm, e.g. robot-3fa9c2d1)")
    p.add_argument("--priority", default="data",
                   help="Zenoh priority of the data (real_time ... background; data)")
    p.add_argument("--express", action="store_true",
                   help="send every message at once, without batching (lower latency under load, "
                        "lower throughput of small messages)")
    p.add_argument("--version", action="store_true",
                   help="name the data path's program (nerve-bridge-rs) and its Zenoh")
    # Retired with the Python data path, which alone polled: said so, not
    # taken for an unknown option.
    p.add_argument("--poll", help=argparse.SUPPRESS)
    options.add_limits(p)
    r = p.add_argument_group("ROS 2 over rmw_zenoh (docs/ros.md); 'nerve ros2 --rmw zenoh' runs "
                             "this too, and 'nerve ros2' speaks DDS (docs/ros2.md)")
    r.add_argument("--ros2", action="store_true",
                   help="speak rmw_zenoh instead: --export/--import globs name channels = ROS 2 topics")
    r.add_argument("--ros2-domain", type=int, default=0, metavar="N", help="ROS_DOMAIN_ID (0)")
    r.add_argument("--ros2-hash", action="append", default=[], metavar="TYPE=RIHS01_HEX",
                   help="type hash of a ROS 2 type (default: computed with rosbags)")
    r.add_argument("--ros2-size", type=options.positive_size, default=1 << 20, metavar="BYTES",
                   help="largest message of an imported topic's channel (1 MiB)")
    return p


def ls_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nerve ls --remote",
                                description="List every channel exported on the Zenoh network.")
    p.add_argument("--remote", action="store_true", help=argparse.SUPPRESS)
    _session_args(p)
    options.add_json(p, "one JSON array")
    options.add_timeout(p, f"how long to wait for peers and answers ({CONNECT_TIMEOUT_S:g})",
                        default=CONNECT_TIMEOUT_S)
    return p


# The data path is the Rust program nerve-bridge-rs (rust/nerve-bridge): this
# command runs it with the arguments it was given, which the program checks.
# What stays in Python, and why:
# --ros2 (bridge/rmw_zenoh.py: rmw_zenoh's protocol needs the ROS 2 type
# hashes that rosbags computes in Python), `nerve bridge ls` / `nerve ls
# --remote` (below) and the registry readers of `nerve top`: tools that ask
# the network or read the bridges' registry files once, not data paths.
RUST_BIN_ENV = "NERVE_BRIDGE_RS"  # path of nerve-bridge-rs, where it is not found
RUST_BIN = "nerve-bridge-rs"
# What `nerve bridge` says when nerve-bridge-rs is missing: one line, how to get it.
HOW_TO_GET = ("install the Debian package nerve-bridge, or the Python wheel nerve-bridge "
              "(make package, make wheels), or build it into the venv: make rust-bridge-install "
              f"(cargo >= 1.88); {RUST_BIN_ENV}=PATH names one elsewhere")


def rust_binary() -> str:
    """Path of nerve-bridge-rs: $NERVE_BRIDGE_RS, else the first on PATH,
    else the one beside this Python (a venv that is not activated). Raises
    BridgeError, saying how to get it, when there is none."""
    env = os.environ.get(RUST_BIN_ENV)
    if env:
        if os.access(env, os.X_OK):
            return env
        raise BridgeError(f"{RUST_BIN_ENV}={env} is not an executable program: {HOW_TO_GET}")
    beside = os.path.join(os.path.dirname(sys.executable), RUST_BIN)
    found = shutil.which(RUST_BIN) or (beside if os.access(beside, os.X_OK) else None)
    if found is None:
        raise BridgeError(f"{RUST_BIN}, the data path of nerve bridge, is not installed: {HOW_TO_GET}")
    return found


def _zenoh_version() -> str:
    try:
        from importlib.metadata import version
        return version("eclipse-zenoh")
    except Exception:
        return ""


def version_text() -> str:
    """What `nerve bridge --version` prints: the data path's program and
    its version, and the Zenoh under --ros2. Raises BridgeError when the
    program is missing or does not answer."""
    try:
        from importlib.metadata import version
        tools = version("nerve-tools")
    except Exception:
        tools = "unknown"
    where = rust_binary()
    try:
        r = subprocess.run([where, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        raise BridgeError(f"{where} --version: {e}") from None
    if r.returncode != 0 or "data path: rust" not in r.stdout:
        raise BridgeError(f"{where} --version: exit {r.returncode}: {escape((r.stdout + r.stderr).strip())}")
    return (f"nerve bridge {tools}: data path: rust ({where}: {r.stdout.strip()}); "
            f"--ros2: python (eclipse-zenoh {_zenoh_version() or 'unknown'})")


def _die(msg: str, code: int = 1) -> int:
    print(f"{PROG}: {msg}", file=sys.stderr)
    return code


def run(argv: Sequence[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.poll is not None:
        p.error("--poll is no longer offered: it was the Python data path's, and the Rust one "
                "sleeps in nerve's blocking read (docs/bridge.md)")
    if not args.ros2:
        # nerve-bridge-rs checks the rest of the arguments itself and
        # replaces this process: its signals, exit status, stdout and
        # stderr are the bridge's.
        try:
            where = rust_binary()
        except BridgeError as e:
            return _die(str(e), 1)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(where, [where, *argv])
    if args.domain < 0:
        p.error("--domain must be >= 0")
    if args.stats is not None and not args.stats > 0:
        p.error("--stats must be positive")
    try:
        session = open_session(SessionOptions(config=args.config, listen=args.listen,
                                              connect=args.connect, scout=args.scout))
    except BridgeError as e:
        return _die(str(e), 2 if "bad " in str(e) else 1)
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return _run_ros2(args, session, stop)


def _run_ros2(args: argparse.Namespace, session: object, stop: threading.Event) -> int:
    from . import rmw_zenoh as r2
    try:
        if args.ros2_domain < 0:
            raise r2.Ros2Error("--ros2-domain must be >= 0")
        types = r2.Types(r2.parse_hash_overrides(args.ros2_hash))
        br = r2.Ros2Bridge(session, args.ros2_domain, args.export, args.imports, types, size=args.ros2_size)
    except r2.Ros2Error as e:
        session.close()
        return _die(str(e), 2)
    try:
        br.start()
        print(f"{PROG}: ready: ROS 2 domain {args.ros2_domain}, zid {br.zid}", file=sys.stderr, flush=True)
        br.run(stop, args.stats, lambda st: print(json.dumps(st, sort_keys=True), flush=True))
    finally:
        final = br.stats()
        br.close()
        if args.stats:
            print(json.dumps(final, sort_keys=True), flush=True)
        session.close()
    return 0


def ls(argv: Sequence[str]) -> int:
    p = ls_parser()
    args = p.parse_args(argv)
    prog = "nerve ls --remote"
    if args.domain < 0:
        p.error("--domain must be >= 0")
    if not args.connect and not args.config and not args.scout:
        # Multicast scouting is off, so nothing could answer: say so now
        # rather than after the --timeout.
        p.error("no peer to ask: give --connect ENDPOINT (e.g. tcp/192.0.2.1:7447), "
                "--config ZENOH_JSON5 or --scout")
    try:
        session = open_session(SessionOptions(config=args.config, connect=args.connect, scout=args.scout))
    except BridgeError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2 if "bad " in str(e) else 1
    try:
        if not wait_connected(session, args.timeout, max(1, len(args.connect))):
            where = ", ".join(args.connect) or "any peer (give --connect or --config)"
            print(f"{prog}: cannot reach {where} within {args.timeout:g} s", file=sys.stderr)
            return 1
        # Let the peers' declarations (and gossip) reach this session.
        time.sleep(SETTLE_S)
        try:
            replies = query_descriptions(session, f"{prefix(args.domain)}/meta/**", args.timeout)
        except BridgeError as e:
            print(f"{prog}: {e}", file=sys.stderr)
            return 1
    finally:
        session.close()
    imported = set()
    for doc in registry.read_all():
        if doc.get("domain") == args.domain:
            for name, hosts in (doc.get("imported") or {}).items():
                imported.update((h, name) for h in hosts)
    rows = []
    for key, d in replies:
        if isinstance(d, Description):
            rows.append({"host": d.host, "name": d.name, "slots": d.slots, "data_size": d.data_size,
                         "type": d.type, "encoding": d.encoding, "rate_hz": d.rate_hz,
                         "head_seq": d.head_seq, "imported": (d.host, d.name) in imported})
        else:
            rows.append({"key": key, "error": d})
    rows.sort(key=lambda r: (r.get("host", ""), r.get("name", r.get("key", ""))))
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"{'HOST':<16} {'NAME':<24} {'SLOTS':>7} {'SIZE':>9} {'RATE':>8}  {'IMPORTED':<8} TYPE")
    # Keys, hosts, names and types come from peers: escaped (_text.escape).
    for r in rows:
        if "error" in r:
            print(f"{escape(r['key'])}: bad description: {escape(str(r['error']))}")
            continue
        t = r["type"] or "-"
        if r["encoding"]:
            t += f" ({r['encoding']})"
        print(f"{escape(r['host']):<16} {escape(r['name']):<24} {r['slots']:>7} {r['data_size']:>9} "
              f"{r['rate_hz']:>7.1f}  {'yes' if r['imported'] else 'no':<8} {escape(t)}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "ls":
            return ls(argv[1:])
        if "--version" in argv:
            try:
                print(version_text())
            except BridgeError as e:
                return _die(str(e), 1)
            return 0
        return run(argv)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
