"""What the drivers of the rmw benchmarks share (rmw_latency.py,
rmw_copies.py, fastdds_datasharing.py): the channels a run on rmw_nerve
leaves, and the results file. Imported from the script's own folder."""

from __future__ import annotations

import json
from typing import Iterable


def drop_domain(domain: int) -> None:
    """Remove every channel rmw_nerve made for ROS domain `domain` (its
    topics ros2-dN.* and its graphs ros2-graph-dN.*): a run on rmw_nerve
    leaves them, as nerve channels outlive their writers."""
    import nerve

    for info in nerve.list_channels():
        if info.name.startswith(f"ros2-d{domain}.") or info.name.startswith(f"ros2-graph-d{domain}."):
            nerve.unlink(info.name)


def write_rows(path: str, rows: Iterable[dict]) -> None:
    """The rows as JSON lines into `path` (--out)."""
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
