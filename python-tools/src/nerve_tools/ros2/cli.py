"""nerve ros2: nerve channels as ROS 2 topics, over DDS or rmw_zenoh.

    nerve ros2 [--domain N] [--to-ros GLOB[:TOPIC]]... [--from-ros TOPIC[:CHANNEL]]...
               [--qos default|sensor_data] [--latch] [--dds-config FILE] [--node NAME]
               [--rmw dds|zenoh]

DDS (the default, what rmw_fastrtps_cpp and rmw_cyclonedds_cpp speak). This
module only does the set-up: it checks the arguments, turns the topic and
channel names into their final form, and hands a catalog of the ROS 2
message types rosbags knows, and of those in the schemas of the channels
to publish -- each one's definition (MCAP ``ros2msg`` form) and RIHS01
type hash (REP 2011) -- to ``nerve-ros2-dds``, the native
program (tools/ros2/ros2_dds.c, on Cyclone DDS) that it then becomes
(exec). That program does the rest: discovery, channel scans, the data
path both ways, the ROS graph. Why split so: the data path must not
allocate per message or pay an interpreter per sample, while the message
definitions and hashes live in rosbags, a Python package already pinned
for nerve record; computing 160 of them takes about 0.1 s at start.

Zenoh (``--rmw zenoh``): runs ``nerve bridge --ros2`` (ROS 2 over
rmw_zenoh, docs/ros.md) with the same channels: ``--to-ros GLOB`` becomes
``--export GLOB`` and ``--from-ros TOPIC`` an ``--import`` of the topic's
channel; ``--zenoh-connect``/``--zenoh-listen``/``--zenoh-config`` reach the
Zenoh router.

See docs/ros2.md for the mapping (names, types, QoS, time) and what was
tested against what. Exit status: 0 after Ctrl-C/SIGTERM, 1 on a fatal
error, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import _limits as limits
from .. import options, ros2gen
from .._common import is_pattern
from . import ddsconfig

PROG = "nerve ros2"
NATIVE = "nerve-ros2-dds"
# ROS 2 topic names after expansion: '/' then tokens of [A-Za-z0-9_] that
# do not start with a digit, no "//", no trailing '/' (ROS 2 design
# article "Topic and Service name mapping to DDS").
_TOPIC = re.compile(r"^(/[A-Za-z_][A-Za-z0-9_]*)+$")
_NODE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _char_as_uint8(node: Any) -> Any:
    """A rosbags field definition with ``char`` made ``uint8``."""
    if isinstance(node, tuple):
        if node and node[0] == "char":
            return ("uint8", *node[1:])
        return tuple(_char_as_uint8(x) for x in node)
    if isinstance(node, list):
        return [_char_as_uint8(x) for x in node]
    return node


# rmw_dds_common's messages as ROS 2 Jazzy and Kilted have them (rosbags'
# store has an older Gid); ros_discovery_info carries ParticipantEntitiesInfo.
RMW_DDS_COMMON = {
    "rmw_dds_common/msg/Gid": "char[16] data\n",
    "rmw_dds_common/msg/NodeEntitiesInfo": "string<=256 node_namespace\nstring<=256 node_name\n"
                                           "Gid[] reader_gid_seq\nGid[] writer_gid_seq\n",
    "rmw_dds_common/msg/ParticipantEntitiesInfo": "Gid gid\nNodeEntitiesInfo[] node_entities_info_seq\n",
}


SCHEMA_SEP = "\n" + "=" * 80 + "\n"


def schema_types(type_name: str, schema: str) -> Dict[str, Any]:
    """rosbags' definitions of the types in a channel's ``ros2msg`` schema
    (the .msg text, then per dependency a line of 80 '=' and ``MSG:
    pkg/Name`` and its text). ValueError when it is not in that form."""
    from rosbags.typesys import get_types_from_msg

    parts = schema.split(SCHEMA_SEP)
    types = dict(get_types_from_msg(parts[0], type_name))
    for part in parts[1:]:
        head, _, text = part.partition("\n")
        if not head.startswith("MSG: "):
            raise ValueError(f"a dependency without 'MSG: pkg/Name': {head[:60]!r}")
        name = head[5:].strip()
        if "/msg/" not in name:
            pkg, _, short = name.partition("/")
            name = f"{pkg}/msg/{short}"
        types.update(get_types_from_msg(text, name))
    return types


def channel_types(specs: Sequence[str], known: Sequence[str]) -> Dict[str, Any]:
    """Definitions of the message types of channels that --to-ros would
    publish now and that rosbags does not know, from their schemas, so that
    custom messages get a type hash too. A schema that does not parse is
    reported and skipped (the channel is published without a hash)."""
    import nerve
    import nerve.bridge as kernel

    out: Dict[str, Any] = {}
    globs = [options.split_spec(s)[0] for s in specs]
    for info in nerve.list_channels():
        if info.error is not None or not any(
                kernel.glob_match(g, info.name) if is_pattern(g) else info.name == g for g in globs):
            continue
        try:
            ch = nerve.open(info.name)
            meta = ch.metadata
            ch.close()
        except nerve.Error:
            continue
        if meta.encoding != "cdr" or not meta.type or "/msg/" not in meta.type \
                or meta.type in known or meta.type in out or not meta.schema:
            continue
        try:
            out.update(schema_types(meta.type, bytes(meta.schema).decode()))
        except Exception as e:  # noqa: BLE001 - rosbags raises its own parse errors
            print(f"{PROG}: warning: {info.name}: schema of {meta.type} not understood ({e}); "
                  f"published without a type hash", file=sys.stderr)
    return out


def _msg_names(node: Any) -> List[str]:
    """The pkg/msg/Name types a rosbags field definition refers to."""
    if isinstance(node, str):
        return [node] if "/msg/" in node else []
    if isinstance(node, (tuple, list)):
        return [n for x in node for n in _msg_names(x)]
    return []


def action_types(prefixes: Sequence[str]) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """The actions of the .action files under PREFIX/share/<pkg>/action/
    (AMENT_PREFIX_PATH's prefixes): rosbags' definitions of each one's
    ``pkg/action/Name_Feedback`` and ``Name_FeedbackMessage`` (the feedback
    topic's type: ``unique_identifier_msgs/UUID goal_id``, then the
    feedback), and the latter's ros2msg schema text. rosbags hashes these
    as rosidl does (REP 2011 names the action types ``pkg/action/...``) but
    does not render them, so the schema is put together here: the message,
    then its dependencies as ``MSG:`` parts. A file that does not parse is
    skipped with one line; an action whose feedback uses a message rosbags
    does not know is left out (the bridge refuses its feedback publisher
    with one line when it meets one)."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    defs: Dict[str, Any] = {}
    texts: Dict[str, str] = {}
    for prefix in prefixes:
        share = os.path.join(prefix, "share")
        for pkg in sorted(os.listdir(share)) if os.path.isdir(share) else []:
            adir = os.path.join(share, pkg, "action")
            for f in sorted(os.listdir(adir)) if os.path.isdir(adir) else []:
                name = f"{pkg}/action/{f[:-7]}"
                if not f.endswith(".action") or name + "_FeedbackMessage" in defs:
                    continue
                try:
                    with open(os.path.join(adir, f), encoding="utf-8") as fh:
                        parts = re.split(r"^---\s*$", fh.read(), flags=re.M)
                    if len(parts) != 3:
                        raise ValueError("not goal --- result --- feedback")
                    fb = get_types_from_msg(parts[2], name + "_Feedback")
                    fm = get_types_from_msg(f"unique_identifier_msgs/UUID goal_id\n"
                                            f"{name}_Feedback feedback\n",
                                            name + "_FeedbackMessage")
                    needed = ["unique_identifier_msgs/msg/UUID", *_msg_names(list(fb.values()))]
                    if any(dep not in store.fielddefs for dep in needed):
                        continue  # a message rosbags lacks: refused when met
                    deps: Dict[str, str] = {}  # "pkg/Name" -> its "MSG:" part
                    for dep in needed:
                        short = dep.replace("/msg/", "/")
                        if short in deps:
                            continue
                        for part in store.generate_msgdef(dep, ros_version=2)[0].split(SCHEMA_SEP):
                            if not part.startswith("MSG: "):
                                part = f"MSG: {short}\n{part}"
                            deps.setdefault(part.partition("\n")[0][5:].strip(), part)
                except Exception as e:  # noqa: BLE001 - rosbags raises its own parse errors
                    print(f"{PROG}: warning: {os.path.join(adir, f)}: not understood ({e}); "
                          f"its feedback is not bridged", file=sys.stderr)
                    continue
                defs.update(fb)
                defs.update(fm)
                texts[name + "_FeedbackMessage"] = SCHEMA_SEP.join(
                    [f"unique_identifier_msgs/UUID goal_id\n{name}_Feedback feedback",
                     f"MSG: {name}_Feedback\n{parts[2].strip()}",
                     *(d.rstrip("\n") for d in deps.values())]) + "\n"
    return defs, texts


def catalog(extra: Optional[Dict[str, Any]] = None,
            actions: Optional[Tuple[Dict[str, Any], Dict[str, str]]] = None) -> bytes:
    """Every message type of rosbags' ROS 2 Jazzy type store, and those of
    `extra` (from channel_types) and `actions` (from action_types), as records
    ``T <type> <RIHS01 hash or -> <length>\\n<definition>\\n``.

    The hashes are rosbags' ``hash_rihs01`` computed on a copy of the store
    in which ``char`` fields are ``uint8``: the .msg ``char`` is an alias of
    uint8 in rosidl, and the type descriptions ROS 2 hashes say uint8
    (rosbags 0.11 hashes it as char; checked against Jazzy's own hashes in
    tests/ros2)."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_JAZZY)
    fixed = {}
    for name, text in RMW_DDS_COMMON.items():
        fixed.update(get_types_from_msg(text, name))
    store.register(fixed)
    if extra:
        store.register({n: d for n, d in extra.items() if n not in store.fielddefs})
    texts = actions[1] if actions else {}
    if actions:
        store.register({n: d for n, d in actions[0].items() if n not in store.fielddefs})
    hashing = get_typestore(Stores.EMPTY)
    hashing.register({n: _char_as_uint8(d) for n, d in store.fielddefs.items()})
    out: List[bytes] = []
    for name in sorted(store.fielddefs):
        if "/msg/" not in name and name not in texts:
            continue  # an action's Feedback: only inside its FeedbackMessage
        try:
            text = texts[name].encode() if name in texts else ros2gen.with_store_defaults(
                store.generate_msgdef(name, ros_version=2)[0], name).encode()
        except Exception:  # noqa: BLE001 - a type rosbags cannot render: no schema
            continue
        try:
            h = hashing.hash_rihs01(name)
        except Exception:  # noqa: BLE001 - no hash for this one: published without
            h = "-"
        out.append(b"T %s %s %d\n%s\n" % (name.encode(), h.encode(), len(text), text))
    return b"".join(out)


def find_native() -> Optional[str]:
    """nerve-ros2-dds: $NERVE_ROS2_DDS, beside the nerve command, on the PATH."""
    env = os.environ.get("NERVE_ROS2_DDS")
    if env:
        return env
    nerve = shutil.which("nerve")
    if nerve:
        cand = os.path.join(os.path.dirname(os.path.realpath(nerve)), NATIVE)
        if os.access(cand, os.X_OK):
            return cand
    return shutil.which(NATIVE)


#: The subcommands of `nerve ros2`, with their lines in --help.
SUBCOMMANDS = {
    "exec": "run a ROS 2 program on rmw_nerve_cpp, its topics as nerve channels "
            "(docs/ros2.md#rmw_nerve; 'nerve ros2 exec --help')",
    "config": "list the shipped DDS configurations (loopback, large data), or print "
              "the path of one: 'nerve ros2 config fastdds-loopback-jazzy'",
}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        usage="%(prog)s [--to-ros GLOB[:TOPIC]] [--from-ros TOPIC[:CHANNEL]] [options]\n"
              "       %(prog)s exec [--lib PATH] [--rcl PATH] [--print] -- CMD [ARGS]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Bridge nerve channels (encoding cdr, type pkg/msg/Name) and ROS 2 topics, "
                    "both ways, as CDR bytes passed through unchanged.\n\nsubcommands:\n"
                    + "".join(f"  {k:<6} {v}\n" for k, v in SUBCOMMANDS.items()))
    p.add_argument("--domain", type=int, default=None, metavar="N",
                   help="ROS 2 domain (default: $ROS_DOMAIN_ID or 0)")
    p.add_argument("--qos", choices=("default", "sensor_data"), default="default",
                   help="default: reliable, keep last 10; sensor_data: best effort "
                        "subscriptions, keep last 5 (published topics stay reliable, which "
                        "matches both kinds of subscriber)")
    options.add_ros_channels(p, "ROS 2", "cdr", "publish transient local: a late subscriber gets "
                                                "the newest message")
    p.add_argument("--services", action="append", default=[], metavar="GLOB",
                   help="offer to DDS clients the services of rmw_nerve's nodes of this "
                        "domain whose ROS name matches GLOB ('/talker/*': talker's parameter "
                        "services; '*': all); needs a build with Fast DDS")
    p.add_argument("--services-from-ros", action="append", default=[], metavar="GLOB",
                   help="serve to rmw_nerve's clients of this domain the services served on "
                        "DDS whose ROS name matches GLOB (an action: '/fib/_action/*'); needs "
                        "a build with Fast DDS")
    p.add_argument("--dds-config", metavar="FILE",
                   help="Cyclone DDS configuration (XML), as CYCLONEDDS_URI=file://FILE; "
                        "or a shipped one by name (loopback, large-data: 'nerve ros2 config')")
    p.add_argument("--node", default="nerve_ros2", help="ROS 2 node name (nerve_ros2)")
    p.add_argument("--rmw", choices=("dds", "zenoh"), default="dds",
                   help="dds (Fast DDS / Cyclone DDS nodes; default) or zenoh (rmw_zenoh, "
                        "through nerve bridge --ros2)")
    options.add_limits(p)
    z = p.add_argument_group("--rmw zenoh")
    z.add_argument("--zenoh-connect", action="append", default=[], metavar="ENDPOINT",
                   help="the Zenoh router of the ROS 2 system (e.g. tcp/127.0.0.1:7447)")
    z.add_argument("--zenoh-listen", action="append", default=[], metavar="ENDPOINT",
                   help="accept Zenoh connections on this endpoint")
    z.add_argument("--zenoh-config", metavar="ZENOH_JSON5", help="a Zenoh configuration file")
    return p


def resolve(p: argparse.ArgumentParser, args: argparse.Namespace) -> Tuple[List[str], List[str]]:
    """The --to and --from arguments of nerve-ros2-dds, checked."""
    import nerve
    import nerve.bridge as kernel

    to: List[str] = []
    for spec in args.to_ros:
        glob, topic = options.split_spec(spec)
        if not glob:
            p.error(f"--to-ros {spec!r}: no channel name or glob")
        try:  # one that no channel name could match is an error
            kernel.glob_check(glob)
        except nerve.Error as e:
            p.error(f"--to-ros {spec!r}: {e}")
        if topic and not _TOPIC.match(topic.rstrip("/") or "/x"):
            p.error(f"--to-ros {spec!r}: {topic!r} is not a valid ROS 2 topic name")
        to.append(f"{glob}={topic}")
    frm: List[str] = []
    for spec in args.from_ros:
        topic, chan = options.split_spec(spec)
        if not topic.startswith("/"):
            topic = "/" + topic
        if not _TOPIC.match(topic):
            p.error(f"--from-ros {spec!r}: {topic!r} is not a valid ROS 2 topic name")
        try:  # the bridge kernel's rule, as every bridge maps a topic
            chan = chan or kernel.channel_of_topic(topic)
            nerve._nerve.name_check(chan)
        except nerve.Error as e:
            p.error(f"--from-ros {spec!r}: bad channel name {chan!r}: {e}")
        frm.append(f"{topic}={chan}")
    return to, frm


def run_zenoh(p: argparse.ArgumentParser, args: argparse.Namespace, domain: int) -> int:
    if any(options.split_spec(s)[1] for s in args.to_ros) or any(options.split_spec(s)[1] for s in args.from_ros):
        p.error("--rmw zenoh keeps the names (topic /a/b is channel a.b): no :TOPIC or :CHANNEL")
    if args.latch or args.qos != "default" or args.dds_config or args.services \
            or args.services_from_ros:
        p.error("--latch, --qos, --dds-config, --services and --services-from-ros apply to "
                "--rmw dds")
    import nerve.bridge as kernel

    from ..bridge import cli as bridge

    argv = ["--ros2", "--ros2-domain", str(domain)]
    for ep in args.zenoh_connect:
        argv += ["--connect", ep]
    for ep in args.zenoh_listen:
        argv += ["--listen", ep]
    if args.zenoh_config:
        argv += ["--config", args.zenoh_config]
    for g in args.to_ros:
        argv += ["--export", g]
    for t in args.from_ros:
        # A glob stays a glob of channel names ("/robot/*" -> "robot.*").
        argv += ["--import", t.strip("/").replace("/", ".") if is_pattern(t) else kernel.channel_of_topic(t)]
    return bridge.run(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["exec"]:
        # `nerve ros2 exec -- CMD`: run CMD on rmw_nerve_cpp (ros2/exec.py).
        from .exec import main as exec_main

        return exec_main(argv[1:])
    if argv[:1] == ["config"]:
        return ddsconfig.main(argv[1:])
    p = parser()
    if argv and not argv[0].startswith("-"):
        # The bridge takes no operand: a first word is a mistyped subcommand
        # ("exce"), which would otherwise get the bridge's usage.
        near = difflib.get_close_matches(argv[0], SUBCOMMANDS, n=1)
        p.error(f"{argv[0]!r} is not a subcommand of nerve ros2 (subcommands: "
                f"{', '.join(SUBCOMMANDS)})" + (f"; did you mean {near[0]!r}?" if near else ""))
    args = p.parse_args(argv)
    if not args.to_ros and not args.from_ros and not args.services \
            and not args.services_from_ros:
        p.error("give at least one --to-ros, --from-ros, --services or --services-from-ros")
    domain = _domain(p, args)
    if not _NODE.match(args.node):
        p.error(f"--node {args.node!r}: a node name is [A-Za-z_][A-Za-z0-9_]*")
    if args.rmw == "zenoh":
        return run_zenoh(p, args, domain)
    return run_dds(p, args, domain)


def _domain(p: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The ROS 2 domain: --domain, else ROS_DOMAIN_ID, else 0; checked."""
    domain = args.domain
    if domain is None:
        env = os.environ.get("ROS_DOMAIN_ID", "").strip()
        try:
            domain = int(env) if env else 0
        except ValueError:
            p.error(f"ROS_DOMAIN_ID={env!r} is not a number")
    if not 0 <= domain <= 232:
        p.error("the domain must be from 0 to 232 (ROS 2's range)")
    return domain


def run_dds(p: argparse.ArgumentParser, args: argparse.Namespace, domain: int) -> int:
    """Check the DDS arguments, then replace this process with NATIVE, the
    data path, handing it the type catalogue on an inherited memfd."""
    if args.zenoh_connect or args.zenoh_listen or args.zenoh_config:
        p.error("--zenoh-* apply to --rmw zenoh")
    try:
        budget = limits.ImportBudget.from_args(args)
    except limits.LimitError as e:
        p.error(str(e))
    to, frm = resolve(p, args)
    native = find_native()
    if native is None:
        print(f"{PROG}: {NATIVE} not found (built with the nerve command when Cyclone DDS "
              f"is installed: apt-get install cyclonedds-dev, then rebuild; or set "
              f"NERVE_ROS2_DDS)", file=sys.stderr)
        return 1
    if args.dds_config:
        os.environ["CYCLONEDDS_URI"] = "file://" + _dds_config_path(p, args.dds_config)
    try:
        from rosbags.typesys import Stores, get_typestore

        prefixes = [d for d in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if d]
        data = catalog(channel_types(args.to_ros, list(get_typestore(Stores.ROS2_JAZZY).fielddefs)),
                       action_types(prefixes))
    except ImportError as e:
        print(f"{PROG}: rosbags is needed for the message definitions: {e}", file=sys.stderr)
        return 1
    fd = os.memfd_create("nerve-ros2-types", 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    os.set_inheritable(fd, True)
    cmd = [native, "--domain", str(domain), "--node", args.node, "--qos", args.qos,
           "--catalog-fd", str(fd), "--max-channel-size", str(budget.max_channel),
           "--max-import-total", str(budget.max_total), "--slots", str(args.slots),
           "--size", str(args.size)]
    if args.latch:
        cmd.append("--latch")
    for t in to:
        cmd += ["--to", t]
    for f in frm:
        cmd += ["--from", f]
    for g in args.services:
        cmd += ["--services", g]
    for g in args.services_from_ros:
        cmd += ["--services-from-ros", g]
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(native, cmd)
    except OSError as e:
        print(f"{PROG}: cannot run {native}: {e}", file=sys.stderr)
    return 1


def _dds_config_path(p: argparse.ArgumentParser, given: str) -> str:
    """--dds-config's file: a path, else a shipped configuration's name."""
    path = os.path.abspath(given)
    if not os.path.isfile(path):
        named = ddsconfig.find(given)
        if named is None:
            p.error(f"--dds-config {given!r}: no such file, nor a shipped "
                    "configuration ('nerve ros2 config' lists them)")
        path = str(named)
    return path


if __name__ == "__main__":
    sys.exit(main())
