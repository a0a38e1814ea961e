"""Which channels the bridges of this host export and import, for ``nerve
top`` and ``nerve ls --remote``.

Each running bridge keeps one small JSON file, /dev/shm/nerve-bridge.PID.json
(beside the channels, so it lives in the same /dev/shm as they do), written
atomically (temporary file + rename) whenever its sets change and removed
when it exits. A file whose process is gone (a bridge killed with SIGKILL)
is ignored by readers and removed by the next bridge that starts. Contents:
``{"pid", "id", "domain", "exported": [NAME...], "imported": {NAME: [HOST...]}}``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, List, Set

DIR = Path("/dev/shm")
PREFIX = "nerve-bridge."


def path_of(pid: int) -> Path:
    return DIR / f"{PREFIX}{pid}.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write(pid: int, ident: str, domain: int, exported: Set[str], imported: Dict[str, Set[str]]) -> None:
    doc = {"pid": pid, "id": ident, "domain": domain, "exported": sorted(exported),
           "imported": {k: sorted(v) for k, v in sorted(imported.items()) if v}}
    p = path_of(pid)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, p)


def remove(pid: int) -> None:
    for p in (path_of(pid), path_of(pid).with_name(path_of(pid).name + ".tmp")):
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def read_all(clean: bool = False) -> List[dict]:
    """The registries of the bridges running on this host; with ``clean``,
    remove those of dead processes."""
    out = []
    try:
        entries = list(DIR.glob(f"{PREFIX}*.json"))
    except OSError:
        return out
    for p in entries:
        try:
            pid = int(p.name[len(PREFIX):-len(".json")])
        except ValueError:
            continue
        if not _alive(pid):
            if clean:
                remove(pid)
            continue
        try:
            doc = json.loads(p.read_text())
        except (OSError, ValueError):
            continue  # being replaced, or not ours
        if isinstance(doc, dict):
            out.append(doc)
    return out


def roles() -> Dict[str, str]:
    """Channel name -> "export", "import HOST,..." or both, over every
    bridge running on this host."""
    out: Dict[str, List[str]] = {}
    for doc in read_all():
        for name in doc.get("exported", []):
            out.setdefault(name, []).append("export")
        for name, hosts in (doc.get("imported") or {}).items():
            out.setdefault(name, []).append("import " + ",".join(hosts))
    return {k: "; ".join(v) for k, v in out.items()}
