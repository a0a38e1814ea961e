"""ROS 1 message plumbing of ``nerve ros1``: finding Debian's ROS 1 Python
modules (genmsg for the bridge, rospy and the message packages for tests
and tools) and the md5sum of a message definition.

Where rospy comes from. Debian ships ROS 1's Python modules (rospy,
rosgraph, genpy, genmsg, ...) in ``/usr/lib/python3/dist-packages`` for
``/usr/bin/python3``, while nerve's own Python package (with its native
module) is built into the project's virtual environment. The verb runs
under the environment's interpreter, so the native module is the one built
for it, and makes the ROS modules importable with :func:`enable`: an import
hook placed *last* on ``sys.meta_path`` that serves only the top-level
names of ROS 1's Python modules (and the few libraries they need) from
that directory. Everything else, numpy included, still comes from the
environment; an interpreter that already finds rospy is left alone. The
ROS modules are pure Python, and the one compiled helper they may pick up
(PyYAML's ``_yaml``) is tagged for the interpreter's ABI, so a mismatched
interpreter falls back to PyYAML's pure-Python path instead of crashing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from types import ModuleType
from typing import Any, Dict, Optional, Sequence, Tuple

#: Where Debian's ROS 1 Python modules live (override with
#: NERVE_ROS1_DIST_PACKAGES).
DIST_PACKAGES = os.environ.get("NERVE_ROS1_DIST_PACKAGES", "/usr/lib/python3/dist-packages")

# Top-level modules served from DIST_PACKAGES: ROS 1's Python modules and
# what they import that a virtual environment may lack. Message packages
# (*_msgs, *_srvs) are served too.
_ROS_MODULES = frozenset({
    "rospy", "rosgraph", "rosgraph_msgs", "genpy", "genmsg", "roslib", "rospkg",
    "catkin", "catkin_pkg", "roscpp", "rosbag", "roslz4", "rostopic", "rosmsg",
    "rosnode", "rosmaster", "rosparam", "rosservice", "nodelet",
    "yaml", "_yaml", "pyparsing", "dateutil", "docutils", "netifaces", "defusedxml",
    "Cryptodome", "gnupg", "distro", "six",
})


class _RosFinder(importlib.abc.MetaPathFinder):
    """Finds ROS 1 top-level modules in DIST_PACKAGES, and nothing else."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]],
                  target: Optional[ModuleType] = None) -> Any:
        if path is not None or "." in fullname:
            return None  # submodules are found through their package
        if fullname not in _ROS_MODULES and not fullname.endswith(("_msgs", "_srvs")):
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [DIST_PACKAGES])


def enable() -> None:
    """Make Debian's ROS 1 modules importable (see the module comment). Raises
    ImportError with a hint when it cannot be found."""
    if not any(isinstance(f, _RosFinder) for f in sys.meta_path):
        sys.meta_path.append(_RosFinder())
    try:
        import genmsg  # noqa: F401
    except ImportError as e:
        raise ImportError(
            f"genmsg not found ({e}); install Debian's ROS 1 Python modules "
            f"(apt-get install python3-rospy python3-rostopic) or set "
            f"NERVE_ROS1_DIST_PACKAGES to where they live") from e


#: The separator ROS puts between the definitions of a full message text
#: (genmsg.gentools.compute_full_text): a line of 80 '='.
SEPARATOR = "=" * 80


def split_definition(full_text: str) -> Tuple[str, Dict[str, str]]:
    """The main definition and {"pkg/Type": definition} of the
    dependencies in a full message definition (the ``message_definition``
    of a connection header, ``Definition<T>::value()`` in C++)."""
    main, deps = [], {}
    cur: Optional[str] = None
    lines: list = []
    for line in full_text.splitlines():
        if line.strip() == SEPARATOR:
            if cur is None:
                main = lines
            else:
                deps[cur] = "\n".join(lines)
            cur, lines = "", []
            continue
        if cur == "" and line.startswith("MSG: "):
            cur = line[5:].strip()
            continue
        lines.append(line)
    if cur is None:
        main = lines
    elif cur:
        deps[cur] = "\n".join(lines)
    return "\n".join(main), deps


#: Deepest nesting of message types md5sum() follows (ROS's own types
#: nest a few levels).
MAX_NESTING = 64


def md5sum(type_name: str, full_text: str) -> str:
    """The md5sum ROS 1 gives type ``type_name`` with full definition
    ``full_text``. The definitions are parsed by genmsg; the md5 text is
    built as the ROS wiki and genmsg define it (constants first as
    ``type name=value``, then fields as ``type name``, a nested type
    replaced by its own md5sum, package names dropped, comments and
    whitespace gone), with each nested type's md5sum computed once:
    genmsg's compute_md5 recomputes a type at every use, which a hostile
    definition (each type holding two of the one below, 40 levels) turns
    into 2^40 steps. Raises ValueError on a definition genmsg rejects, one
    that misses a nested type, or nests deeper than MAX_NESTING."""
    enable()
    import hashlib

    from genmsg import MsgContext
    from genmsg.msg_loader import load_msg_from_string
    from genmsg.msgs import bare_msg_type, is_builtin

    main, deps = split_definition(full_text)
    ctx = MsgContext.create_default()
    memo: Dict[str, str] = {}

    def of(spec: Any, depth: int) -> str:
        if spec.full_name in memo:
            return memo[spec.full_name]
        if depth > MAX_NESTING:
            raise ValueError(f"types nested deeper than {MAX_NESTING}")
        lines = [f"{c.type} {c.name}={c.val_text}\n" for c in spec.constants]
        for t, n in zip(spec.types, spec.names):
            base = bare_msg_type(t)
            if is_builtin(base):
                lines.append(f"{t} {n}\n")
            else:
                lines.append(f"{of(ctx.get_registered(base), depth + 1)} {n}\n")
        memo[spec.full_name] = hashlib.md5("".join(lines).strip().encode()).hexdigest()
        return memo[spec.full_name]

    try:
        for name, text in deps.items():
            load_msg_from_string(ctx, text, name)
        return of(load_msg_from_string(ctx, main, type_name), 0)
    except Exception as e:  # genmsg raises several unrelated classes
        raise ValueError(f"cannot compute the md5sum of {type_name}: {e}") from e
