"""Which channels the bridges of this host export and import, for ``nerve
top`` and ``nerve ls --remote``.

The reader, in Python because nerve top and nerve ls --remote are; the
writer is the bridge's data path (rust/nerve-bridge/src/registry.rs).
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
from typing import Dict, List

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


def read_all() -> List[dict]:
    """The registries of the bridges running on this host (those of dead
    processes are skipped; the next bridge that starts removes them)."""
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
