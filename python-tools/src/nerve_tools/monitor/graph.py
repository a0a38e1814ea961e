"""nerve graph: processes and the channels they have open, as a Graphviz
graph (from ``nerve who``'s scan of /proc). Writers point at their
channels, channels at their readers; the writer-lock holder's edge is bold.
Prints DOT, or writes SVG (or any format ``dot -T`` knows) when ``dot``
(Debian package graphviz) is installed."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from typing import Optional, Sequence

from .. import options
from .._text import escape
from .who import Scan, scan

PROG = "nerve graph"


def _q(s: str) -> str:
    # DOT's escapes for backslash, quote and newline, and every other
    # control character escaped too (_text): the DOT text may go to a
    # terminal, and names and command lines are anyone's.
    return '"' + escape(s, quote=True) + '"'


def dot(res: Scan) -> str:
    lines = ["digraph nerve {", "  rankdir=LR;", '  node [fontname="sans"];']
    procs = {}
    for u in res.uses:
        procs.setdefault(u.pid, u)
    holders = {(h.channel, h.pid) for h in res.holders}
    for pid, u in sorted(procs.items()):
        label = f"{u.command.split(' ')[0].rsplit('/', 1)[-1]}\npid {pid}"
        if u.container:
            label += f"\ncontainer {u.container}"
        lines.append(f"  p{pid} [shape=box, label={_q(label)}];")
    for ch in sorted({u.channel for u in res.uses}):
        lines.append(f"  {_q('c:' + ch)} [shape=ellipse, label={_q(ch)}];")
    for u in res.uses:
        c = _q("c:" + u.channel)
        if u.access == "write":
            style = ", style=bold, label=\"lock\"" if (u.channel, u.pid) in holders else ""
            lines.append(f"  p{u.pid} -> {c} [color=firebrick{style}];")
        else:
            lines.append(f"  {c} -> p{u.pid} [color=steelblue];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Draw processes and channels as a Graphviz graph "
                               "(DOT on standard output, or a file rendered by dot).")
    options.add_patterns(p, "all")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write FILE, rendered by `dot` in the format of its suffix (.svg, .png, .pdf); "
                        ".dot or '-' writes DOT")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    text = dot(scan(args.patterns))
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return 0
    fmt = args.output.rsplit(".", 1)[-1].lower() if "." in args.output else "svg"
    if fmt == "dot":
        with open(args.output, "w") as f:
            f.write(text)
        return 0
    exe = shutil.which("dot")
    if exe is None:
        print(f"{PROG}: rendering {fmt} needs Graphviz's `dot` (apt-get install graphviz); "
              "use -o FILE.dot or standard output for DOT", file=sys.stderr)
        return 1
    p = subprocess.run([exe, f"-T{fmt}", "-o", args.output], input=text.encode(),
                       capture_output=True, timeout=60)
    if p.returncode != 0:
        print(f"{PROG}: dot -T{fmt}: {p.stderr.decode(errors='replace').strip()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
