"""nerve ros2 config: the DDS configurations shipped with nerve ros2.

    nerve ros2 config          list them: path and what each is for
    nerve ros2 config NAME     print the path of one (NAME: its file name,
                               with or without .xml)

The files (Cyclone DDS and Fast DDS XML) are those beside this module, in
dds/ (the nerve-tools wheel carries them), and PREFIX/share/nerve/dds of
an installed nerve (the Debian package nerve-ros2-dds): loopback (this
machine only) and large data (socket buffers larger than a burst of a
large sample's fragments), Fast DDS's both in the Jazzy form
(interfaceWhiteList, Fast DDS 2) and the Kilted one (interfaces/allowlist,
Fast DDS 3). `nerve ros2 --dds-config loopback` is cyclonedds-loopback.xml.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import List, Optional

PROG = "nerve ros2 config"


def dirs() -> List[Path]:
    """Where the shipped files are: beside this module, then the share/
    of the nerve command's prefix."""
    out = [Path(__file__).resolve().parent / "dds"]
    nerve = shutil.which("nerve")
    if nerve:
        out.append(Path(os.path.realpath(nerve)).parent.parent / "share" / "nerve" / "dds")
    return [d for d in out if d.is_dir()]


def shipped() -> List[Path]:
    """The shipped files, by name, the first of each name found."""
    seen = {}
    for d in dirs():
        for f in sorted(d.glob("*.xml")):
            seen.setdefault(f.name, f)
    return [seen[n] for n in sorted(seen)]


def find(name: str) -> Optional[Path]:
    """The shipped file called `name`, `name`.xml or cyclonedds-`name`.xml."""
    by = {f.name: f for f in shipped()}
    for cand in (name, name + ".xml", f"cyclonedds-{name}.xml"):
        if cand in by:
            return by[cand]
    return None


def _purpose(path: Path) -> str:
    """The first line of the file's leading comment."""
    text = path.read_text(encoding="utf-8", errors="replace")
    start = text.find("<!--")
    if start < 0:
        return ""
    return text[start + 4:].strip().splitlines()[0].strip()


def main(argv: List[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__.strip().split("\n\n", 1)[1])
        return 0
    if len(argv) > 1:
        print(f"{PROG}: error: one NAME at most", file=sys.stderr)
        return 2
    if argv:
        f = find(argv[0])
        if f is None:
            names = ", ".join(p.stem for p in shipped()) or "none found"
            print(f"{PROG}: error: no shipped configuration {argv[0]!r} (shipped: {names})",
                  file=sys.stderr)
            return 2
        print(f)
        return 0
    files = shipped()
    if not files:
        print(f"{PROG}: error: no shipped configurations found (looked in the nerve-tools "
              "package and PREFIX/share/nerve/dds)", file=sys.stderr)
        return 1
    for f in files:
        print(f"{f}\n    {_purpose(f)}")
    return 0
