"""Raw C structs described by their C declaration.

A channel of a trivially copyable C or C++ type carries the object's bytes
(encoding ``raw``, the C++ API's Codec<T> for such types) under a type
name. When its creator also records the struct's declaration as the
channel's schema, its fields can be read by name::

    nerve.create("robot.imu", slots=1024, size=1 << 16, type="robot/Imu",
                 encoding="raw", schema=b'''
        struct Vec3 { double x, y, z; };
        struct Imu { uint64_t stamp_ns; struct Vec3 accel; float temp; int32_t q[4]; };
    ''')

The schema is one or more ``struct`` definitions (``typedef struct {...}
Name;`` too). Members are of a fixed-width type (``int8_t`` ...
``uint64_t``, ``float``, ``double``, ``bool``, ``char``; or nerve's names
``int8`` ... ``uint64``, ``float32``, ``float64``), a struct defined
before, or fixed arrays of those (``double q[4]``, ``float m[3][3]``);
a ``char`` array is text (up to its first NUL). The layout is the C
compilers' natural one on this host: each member aligned to its size (a
struct to its largest member's), the struct padded to its alignment, in
the host's byte order. ``#pragma pack``, bit fields, pointers and unions
are refused (ParseError), never guessed. The message's struct is the one
the channel's type names (its last ``/`` or ``::`` component), else the
last one defined.

A message shorter than the struct is a DecodeError; a longer one is read
as far as the struct goes (a writer may append fields)."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

SCALARS: Dict[str, str] = {
    "int8_t": "b", "uint8_t": "B", "int16_t": "h", "uint16_t": "H", "int32_t": "i",
    "uint32_t": "I", "int64_t": "q", "uint64_t": "Q", "float": "f", "double": "d",
    "bool": "?", "_Bool": "?", "char": "c",
    "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
    "int64": "q", "uint64": "Q", "float32": "f", "float64": "d",
}


class ParseError(ValueError):
    """A schema that is not a struct declaration this module reads."""


class DecodeError(ValueError):
    """A message that does not hold the struct."""


@dataclass(frozen=True)
class Scalar:
    code: str  # struct module format character

    @property
    def size(self) -> int:
        return struct.calcsize("=" + self.code)

    @property
    def align(self) -> int:
        return self.size

    def read(self, data: Any, off: int) -> Any:
        v = struct.unpack_from("=" + self.code, data, off)[0]
        return v[0] if self.code == "c" else v


@dataclass(frozen=True)
class Array:
    elem: "Type"
    n: int

    @property
    def size(self) -> int:
        return self.elem.size * self.n

    @property
    def align(self) -> int:
        return self.elem.align

    def read(self, data: Any, off: int) -> Any:
        if isinstance(self.elem, Scalar) and self.elem.code == "c":
            raw = bytes(data[off: off + self.n])
            return raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        return [self.elem.read(data, off + i * self.elem.size) for i in range(self.n)]


@dataclass(frozen=True)
class Struct:
    name: str
    members: Tuple[Tuple[str, "Type", int], ...]  # (name, type, offset)
    size: int
    align: int

    def read(self, data: Any, off: int) -> Any:
        return {m: t.read(data, off + o) for m, t, o in self.members}


Type = Union[Scalar, Array, Struct]

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRUCT = re.compile(r"(typedef\s+)?struct\s*([A-Za-z_]\w*)?\s*\{(.*?)\}\s*([A-Za-z_]\w*)?\s*;", re.S)
_DECL = re.compile(r"^([A-Za-z_]\w*)((?:\s*\[\s*\d+\s*\])*)$")


def _member_type(words: List[str], structs: Dict[str, Struct], where: str) -> Type:
    if words and words[0] == "const":
        words = words[1:]
    if len(words) == 2 and words[0] == "struct":
        words = words[1:]
    if len(words) != 1:
        raise ParseError(f"{where}: unsupported type {' '.join(words)!r}")
    w = words[0]
    if w in SCALARS:
        return Scalar(SCALARS[w])
    if w in structs:
        return structs[w]
    raise ParseError(f"{where}: unknown type {w!r} (fixed-width types such as int32_t, "
                     f"float, double, or a struct defined before)")


def _layout(name: str, body: str, structs: Dict[str, Struct]) -> Struct:
    members: List[Tuple[str, Type, int]] = []
    off = align = 0
    for decl in (d.strip() for d in body.split(";")):
        if not decl:
            continue
        if any(c in decl for c in "*:()") or re.search(r"\b(union|enum)\b", decl):
            raise ParseError(f"struct {name}: {decl!r}: pointers, bit fields, unions and enums "
                             f"are not supported")
        head, _, rest = decl.partition(",")
        words = head.split()
        # "double x, y[3]": the type is every word of the first declarator
        # but the last; each declarator a name with optional [N]s.
        first = words[-1]
        m = re.match(r"^([A-Za-z_]\w*)(.*)$", first)
        if m is None or len(words) < 2:
            raise ParseError(f"struct {name}: cannot read member {decl!r}")
        base = _member_type(words[:-1], structs, f"struct {name}")
        for d in [first, *(x.strip() for x in rest.split(","))] if rest else [first]:
            dm = _DECL.match(d.replace(" ", ""))
            if dm is None:
                raise ParseError(f"struct {name}: cannot read member {d!r}")
            t: Type = base
            for n in reversed([int(x) for x in re.findall(r"\d+", dm.group(2))]):
                if n <= 0:
                    raise ParseError(f"struct {name}: {d!r}: an array needs a positive length")
                t = Array(t, n)
            off = -(-off // t.align) * t.align
            members.append((dm.group(1), t, off))
            off += t.size
            align = max(align, t.align)
    if not members:
        raise ParseError(f"struct {name} has no members")
    size = -(-off // align) * align
    return Struct(name, tuple(members), size, align)


def parse(schema: Union[str, bytes], type_name: str = "") -> Struct:
    """The struct of a channel: the one its type names, else the last."""
    text = schema.decode("utf-8", "replace") if isinstance(schema, bytes) else schema
    text = _COMMENT.sub(" ", text)
    if re.search(r"#\s*pragma\s+pack|__attribute__\s*\(\s*\(\s*packed", text):
        raise ParseError("packed structs (#pragma pack, __attribute__((packed))) are not supported")
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    structs: Dict[str, Struct] = {}
    last: Optional[Struct] = None
    for m in _STRUCT.finditer(text):
        name = (m.group(4) if m.group(1) else None) or m.group(2) or m.group(4)
        if not name:
            raise ParseError("a struct without a name")
        last = structs[name] = _layout(name, m.group(3), structs)
        if m.group(2) and m.group(4) and m.group(1):
            structs[m.group(2)] = last  # typedef struct Tag {...} Name;
    if last is None:
        raise ParseError("no struct definition (expected 'struct Name { type member; ... };')")
    want = re.split(r"/|::", type_name)[-1] if type_name else ""
    return structs.get(want, last)


def decode(s: Struct, data: Any) -> Dict[str, Any]:
    """The whole message as a dict (arrays as lists)."""
    if len(data) < s.size:
        raise DecodeError(f"a message of {len(data)} bytes is shorter than struct {s.name} "
                          f"({s.size} bytes)")
    return s.read(data, 0)


def field(s: Struct, path: str) -> Tuple[int, Type]:
    """(offset, type) of ``a.b.3.c`` in the struct; KeyError names what is
    missing. Reading one field of each message costs one unpack."""
    t: Type = s
    off = 0
    done: List[str] = []
    for part in path.split("."):
        if isinstance(t, Struct):
            hit = [(mt, mo) for mn, mt, mo in t.members if mn == part]
            if not hit:
                where = ".".join(done) or f"struct {s.name}"
                raise KeyError(f"{where} has no field {part!r} (it has: "
                               f"{', '.join(sorted(mn for mn, _, _ in t.members))})")
            t, o = hit[0]
            off += o
        elif isinstance(t, Array) and part.isdigit() and int(part) < t.n:
            off += int(part) * t.elem.size
            t = t.elem
        else:
            raise KeyError(f"{'.'.join(done)} has no item {part!r}")
        done.append(part)
    return off, t
