"""nerve bridge: chosen channels of this host appear, with the same names,
types and newest-first behaviour, on other hosts, carried by Eclipse Zenoh.

    nerve bridge [--listen ENDPOINT]... [--connect ENDPOINT]... [--config ZENOH_JSON5]
                 [--domain N] [--export GLOB]... [--import GLOB]... [--scout] [--stats SEC]
    nerve bridge ls [--connect ENDPOINT]... [--config ZENOH_JSON5] [--domain N] [--json]
    (nerve ls --remote ... runs the second form)

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

from .. import _limits as limits
from .. import options
from .._text import escape
from . import registry
from .engine import BridgeOptions, HostBridge, import_grace_s
from .wire import (
    BridgeError,
    Description,
    SessionOptions,
    host_id,
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
# Longest --poll: a tenth of a second of polling per message is already
# one core busy for any channel faster than 5 Hz.
MAX_POLL_US = 100_000


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
                   help="say which data path (rust or python) a run uses, and the Zenoh underneath")
    p.add_argument("--poll", type=float, default=0.0, metavar="USEC",
                   help="exporters poll a periodic channel from USEC microseconds before its next "
                        "message is due (learnt from its rate) instead of sleeping until the writer "
                        "wakes them: one wake-up less per message for about 2 x USEC of CPU "
                        "(for a spare core; 0: off)")
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


# The data path: the Rust program nerve-bridge-rs (rust/nerve-bridge) when it
# is installed, else this package's Python engine (bridge/engine.py). The two
# speak the same protocol; --ros2 (rmw_zenoh) and --poll are Python's only.
DATA_PATH_ENV = "NERVE_BRIDGE_DATA_PATH"  # "rust", "python" or unset (auto)
RUST_BIN_ENV = "NERVE_BRIDGE_RS"  # path of nerve-bridge-rs
RUST_BIN = "nerve-bridge-rs"


def rust_binary() -> Optional[str]:
    """Path of the Rust data path's program, or None: $NERVE_BRIDGE_RS, or
    nerve-bridge-rs beside this Python, or on PATH."""
    env = os.environ.get(RUST_BIN_ENV)
    if env:
        return env if os.access(env, os.X_OK) else None
    beside = os.path.join(os.path.dirname(sys.executable), RUST_BIN)
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which(RUST_BIN)


def data_path(args: Optional[argparse.Namespace] = None) -> tuple:
    """("rust", path) or ("python", why) for a bridge run with ``args``.
    NERVE_BRIDGE_DATA_PATH=python forces Python, =rust requires Rust (a
    usage error when it is not installed); unset, Rust is used when
    installed."""
    want = os.environ.get(DATA_PATH_ENV, "").strip().lower()
    if want not in ("", "rust", "python"):
        raise BridgeError(f"bad {DATA_PATH_ENV}={want!r}: rust or python")
    if want == "python":
        return "python", f"{DATA_PATH_ENV}=python"
    if args is not None and (args.ros2 or args.poll):
        return "python", "--ros2" if args.ros2 else "--poll"
    path = rust_binary()
    if path is None:
        if want == "rust":
            raise BridgeError(f"{DATA_PATH_ENV}=rust but {RUST_BIN} is not installed "
                              f"(make rust-bridge-install, or set {RUST_BIN_ENV})")
        return "python", f"{RUST_BIN} not installed"
    return "rust", path


def _zenoh_version() -> str:
    try:
        from importlib.metadata import version
        return version("eclipse-zenoh")
    except Exception:
        return ""


def version_text() -> str:
    """What `nerve bridge --version` prints: which data path a plain run
    uses, and the Zenoh underneath."""
    try:
        from importlib.metadata import version
        tools = version("nerve-tools")
    except Exception:
        tools = "unknown"
    zpy = _zenoh_version() or "unknown"
    try:
        kind, where = data_path()
    except BridgeError as e:
        return f"nerve bridge {tools}: {e}"
    if kind == "rust":
        try:
            out = subprocess.run([where, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            out = f"{where}: {e}"
        return (f"nerve bridge {tools}: data path: rust ({where}: {out}); "
                f"--ros2 and --poll: python (eclipse-zenoh {zpy})")
    return f"nerve bridge {tools}: data path: python (eclipse-zenoh {zpy}; {where})"


def _die(msg: str, code: int = 1) -> int:
    print(f"{PROG}: {msg}", file=sys.stderr)
    return code


def run(argv: Sequence[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.domain < 0:
        p.error("--domain must be >= 0")
    if args.stats is not None and not args.stats > 0:
        p.error("--stats must be positive")
    if not 0 <= args.poll <= MAX_POLL_US:
        p.error(f"--poll must be from 0 to {MAX_POLL_US} microseconds")
    if args.poll and args.ros2:
        p.error("--poll applies to nerve's own exports, not to --ros2")
    try:
        budget = limits.ImportBudget.from_args(args)
    except limits.LimitError as e:
        p.error(str(e))
    try:
        kind, where = data_path(args)
    except BridgeError as e:
        return _die(str(e), 2)
    if kind == "rust":
        # The same arguments, checked above; the program replaces this one
        # (its signals, exit status, stdout and stderr are the bridge's).
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(where, [where, *argv])
    zversion = _zenoh_version()
    try:
        ident = host_id(args.ident)
        sopts = SessionOptions(config=args.config, listen=args.listen, connect=args.connect, scout=args.scout)
        session = open_session(sopts)
    except BridgeError as e:
        return _die(str(e), 2 if "bad " in str(e) else 1)
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.ros2:
        return _run_ros2(args, session, stop)
    try:
        bridge = HostBridge(session, BridgeOptions(domain=args.domain, ident=ident, exports=args.export,
                                               imports=args.imports, priority=args.priority,
                                               express=args.express, poll_us=args.poll,
                                               budget=budget, import_grace_s=import_grace_s()))
    except BridgeError as e:
        session.close()
        return _die(str(e), 2)

    def print_stats(st: dict) -> None:
        print(json.dumps(st, sort_keys=True), flush=True)

    try:
        bridge.start()
        what = []
        if args.export:
            what.append("exporting " + ", ".join(args.export))
        if args.imports:
            what.append("importing " + ", ".join(args.imports))
        print(f"{PROG}: ready: id {ident}, domain {args.domain}, "
              f"{'; '.join(what) or 'nothing exported or imported'}; "
              f"data path: python (eclipse-zenoh{' ' + zversion if zversion else ''}; {where})",
              file=sys.stderr, flush=True)
        if args.connect and not wait_connected(session, 3.0):
            print(f"{PROG}: warning: no peer reachable yet at {', '.join(args.connect)}; "
                  "still trying", file=sys.stderr, flush=True)
        bridge.run(stop, args.stats, print_stats)
    finally:
        final = bridge.stats()
        bridge.close()
        if args.stats:
            print_stats(final)
        session.close()
    return 0


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
            print(version_text())
            return 0
        return run(argv)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
