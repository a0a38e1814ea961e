"""The one escaping of text for a human (a terminal, a log).

Every name, type, encoding, command line or payload a tool prints outside
JSON goes through :func:`escape`, so that no file, process or peer can write
escape sequences into the operator's terminal (issue 28, item 3). The rules
are those of the ``nerve`` command's ``cli_text()`` (tools/cli_util.c), and
of JSON: printable text as it is; a backslash as ``\\\\``; the control
characters (C0, DEL and C1, U+0080 to U+009F: Unicode category Cc) as
``\\n \\r \\t \\b \\f`` or ``\\u00XX``; each byte that was not valid UTF-8 (a
lone surrogate ``\\udcXX`` after ``errors="surrogateescape"``, or the
argument given as bytes) as ``\\xHH``. ``keep_lines`` keeps newlines and
tabs (multi-line text such as a schema or a payload)."""

from __future__ import annotations

from typing import Dict, Union

_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _table(keep_lines: bool, quote: bool) -> Dict[int, str]:
    t: Dict[int, str] = {}
    for cp in list(range(0x20)) + list(range(0x7F, 0xA0)):
        t[cp] = f"\\u{cp:04x}"
    for ch, esc in _SHORT.items():
        t[ord(ch)] = esc
    if keep_lines:
        del t[ord("\n")], t[ord("\t")]
    if quote:
        t[ord('"')] = '\\"'
    for b in range(0x80, 0x100):  # surrogateescape's stand-ins for bytes
        t[0xDC00 + b] = f"\\x{b:02x}"
    return t


_TABLES = {(k, q): _table(k, q) for k in (False, True) for q in (False, True)}


def escape(s: Union[str, bytes], keep_lines: bool = False, quote: bool = False) -> str:
    """``s`` safe to print: see the module's rules. ``quote`` also escapes
    ``"`` (for text printed between double quotes, as ``nerve echo`` quotes
    strings; with it the result equals ``json.dumps(s, ensure_ascii=False)``
    without its quotes for any text without DEL or C1)."""
    if isinstance(s, (bytes, bytearray)):
        s = bytes(s).decode("utf-8", errors="surrogateescape")
    return s.translate(_TABLES[(keep_lines, quote)])


def has_control(s: str) -> bool:
    """Whether ``s`` holds a control character (C0, DEL or C1)."""
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in s)
