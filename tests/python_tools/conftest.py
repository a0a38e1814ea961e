"""Fixtures of the nerve-tools tests: unique channel names that are removed
afterwards, the tools' commands, MCAP reading with validation.

The fixture `name` and the final check that fails the session if a channel
of this process is still in /dev/shm come from the plugin nerve.testing,
shared with tests/python. MCAP files go to pytest's tmp_path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Tuple

from mcap.reader import make_reader
from mcap.stream_reader import StreamReader

pytest_plugins = ["nerve.testing"]  # the fixture `name`, the leftovers check


def tool(verb: str) -> str:
    """Path of the console script nerve-VERB (installed beside python)."""
    path = shutil.which(f"nerve-{verb}") or str(Path(sys.executable).parent / f"nerve-{verb}")
    assert os.access(path, os.X_OK), f"nerve-{verb} is not installed (pip install ./python-tools)"
    return path


def start(verb: str, *args: str, ready: str) -> Tuple[subprocess.Popen, str]:
    """Start nerve-VERB and wait for its ready line on stderr (the tools
    print one once they are set up); returns the process and the line."""
    p = subprocess.Popen([tool(verb), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    assert p.stderr is not None
    line = p.stderr.readline()
    if ready not in line:
        p.kill()
        out, err = p.communicate()
        raise AssertionError(f"nerve-{verb} did not start: {line}{err}")
    return p, line


def read_mcap(path: Path) -> Dict[str, object]:
    """Read an MCAP file back twice: with the indexed (seeking) reader,
    validating chunk CRCs, and with the streaming reader, which checks
    every record and the data section CRC. Returns the summary, the
    messages (schema, channel, message) and the metadata records."""
    with open(path, "rb") as f:
        reader = make_reader(f, validate_crcs=True)
        header = reader.get_header()
        summary = reader.get_summary()
        messages = list(reader.iter_messages(log_time_order=True))
        metadata = {m.name: dict(m.metadata) for m in reader.iter_metadata()}
    with open(path, "rb") as f:
        records = list(StreamReader(f, skip_magic=False, validate_crcs=True).records)
    assert summary is not None, "no summary section"
    assert summary.statistics is not None
    assert summary.statistics.message_count == len(messages)
    counts: Dict[int, int] = {}
    for _s, c, _m in messages:
        counts[c.id] = counts.get(c.id, 0) + 1
    assert dict(summary.statistics.channel_message_counts) == counts
    assert summary.chunk_indexes, "no chunk index"
    return {"header": header, "summary": summary, "messages": messages,
            "metadata": metadata, "records": records}
