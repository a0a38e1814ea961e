"""python -m nerve_tools.ros2gen: write C++ headers for ROS 2 messages.

    python -m nerve_tools.ros2gen --out DIR [--distro jazzy|humble]
        [--package PKG]... [--msg FILE]... [--msg-as PKG/msg/NAME=FILE]...
        [--types pkg/msg/Name]... [--index NAME] [--list FILE] [--dry-run]

Writes DIR/nerve/ros2/<pkg>/msg/<snake_name>.hpp for every message of the
named packages (from rosbags' store of the distribution), every .msg file
and every named type, and for everything they depend on.
--list FILE writes the paths written or kept, one per line; --dry-run
writes only that list (the build system asks for it at configure time).
"""

from __future__ import annotations

import argparse
import os
import sys

from . import DefinitionError, Registry
from .cxx import header, header_path, index_header


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="nerve_tools.ros2gen", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="include root to write into")
    ap.add_argument("--distro", default="jazzy", choices=("jazzy", "humble"))
    ap.add_argument("--package", action="append", default=[], help="a package of the distribution")
    ap.add_argument("--msg", action="append", default=[], help="a .msg file (.../PKG/msg/NAME.msg)")
    ap.add_argument("--msg-as", action="append", default=[], metavar="PKG/msg/NAME=FILE",
                    help="a .msg file under an explicit name")
    ap.add_argument("--types", action="append", default=[], help="a single type pkg/msg/Name")
    ap.add_argument("--list", help="write the generated header paths to this file")
    ap.add_argument("--index", metavar="NAME",
                    help="also write nerve/ros2/NAME.hpp, which includes every header and "
                         "dispatches on a type name")
    ap.add_argument("--dry-run", action="store_true", help="write no header (with --list: only the list)")
    a = ap.parse_args(argv)
    try:
        reg = Registry(a.distro)
        names = []
        for path in a.msg:
            names.append(reg.add_msg_file(path).name)
        for spec in a.msg_as:
            n, _, path = spec.partition("=")
            if not path:
                ap.error(f"--msg-as wants PKG/msg/NAME=FILE, not {spec!r}")
            names.append(reg.add_msg_file(path, n).name)
        for p in a.package:
            names += reg.package_types(p)
        names += a.types
        msgs = reg.closure(names)
        if a.index and not a.index.isidentifier():
            ap.error(f"--index wants a C++ identifier, not {a.index!r}")
        written = []
        jobs = [(os.path.join(a.out, header_path(m.name)), lambda m=m: header(reg, m))
                for m in msgs]
        if a.index:
            jobs.append((os.path.join(a.out, "nerve", "ros2", a.index + ".hpp"),
                         lambda: index_header(reg, msgs, a.index)))
        for path, make in jobs:
            written.append(path)
            if a.dry_run:
                continue
            text = make()
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        if a.list:
            with open(a.list, "w", encoding="utf-8") as fh:
                fh.write("".join(p + "\n" for p in written))
    except (DefinitionError, OSError, ValueError) as e:
        print(f"nerve_tools.ros2gen: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
