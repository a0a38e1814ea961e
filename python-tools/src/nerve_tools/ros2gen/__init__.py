"""nerve's ROS 2 message generator: ROS 2 message definitions to C++17
types with their CDR codec (include/nerve/cxx/ros2.hpp is the runtime they
use), with no ROS 2 installation.

Definitions come from two sources:

- the ROS 2 distributions that ``rosbags`` ships (``--distro jazzy`` or
  ``humble``; its type stores are kept in step with the distributions'
  interface packages), by package name;
- ``.msg`` files the user points at (``pkg/msg/Name.msg`` or any path with
  ``--msg PKG FILE``), parsed here: rosbags' parser does not know wstring,
  default values or some bounds, and a user's own messages need them.

Both become the same model (:class:`Message`); :mod:`.cxx` writes one
header per message, and :func:`ros2msg` the definition with dependencies
that a channel carries as its schema (MCAP's ``ros2msg`` form, as rosbags'
``generate_msgdef`` writes it). Run as ``python -m nerve_tools.ros2gen``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

#: The packages the install ships pre-generated.
SHIPPED_PACKAGES = (
    "builtin_interfaces",
    "std_msgs",
    "geometry_msgs",
    "sensor_msgs",
    "nav_msgs",
    "tf2_msgs",
    "diagnostic_msgs",
)

#: ROS 2 primitive types: (C++ type, size in bytes).
PRIMITIVES: Dict[str, Tuple[str, int]] = {
    "bool": ("bool", 1),
    "byte": ("uint8_t", 1),
    "char": ("uint8_t", 1),
    "int8": ("int8_t", 1),
    "uint8": ("uint8_t", 1),
    "int16": ("int16_t", 2),
    "uint16": ("uint16_t", 2),
    "int32": ("int32_t", 4),
    "uint32": ("uint32_t", 4),
    "int64": ("int64_t", 8),
    "uint64": ("uint64_t", 8),
    "float32": ("float", 4),
    "float64": ("double", 8),
}
STRINGS = ("string", "wstring")

#: Field defaults of the distributions' own definitions. rosbags' type
#: stores keep constants but drop defaults (``float64 w 1`` of Quaternion
#: becomes ``float64 w``), so a type read from a store takes its defaults
#: from here, written as in the .msg. tests/ros2types checks every type of
#: the Jazzy store that the ROS 2 Jazzy wheels have against rclpy's
#: default-constructed message, so this table cannot drift from Jazzy;
#: Humble's entries are the definitions of ROS 2 Humble's packages.
_QUATERNION = {"x": "0", "y": "0", "z": "0", "w": "1"}
STORE_DEFAULTS: Dict[str, Dict[str, Dict[str, str]]] = {
    "jazzy": {
        "geometry_msgs/msg/Quaternion": _QUATERNION,
        "sensor_msgs/msg/NavSatStatus": {"status": "-2"},
        "rcl_interfaces/msg/ParameterDescriptor": {"read_only": "false",
                                                   "dynamic_typing": "false"},
        "type_description_interfaces/msg/FieldType": {"type_id": "0"},
    },
    "humble": {
        "geometry_msgs/msg/Quaternion": _QUATERNION,
    },
}
#: The member rosidl gives a message without fields (one uint8 on the wire).
DUMMY_MEMBER = "structure_needs_at_least_one_member"


class DefinitionError(ValueError):
    """A message definition that does not parse or refers to an unknown type."""


@dataclass
class Field:
    name: str
    #: A primitive ("int32"), "string", "wstring" or a message "pkg/msg/Name".
    base: str
    #: Bound of a bounded string or wstring (0: unbounded).
    str_bound: int = 0
    #: None (a single value), "array" (fixed length) or "sequence".
    container: Optional[str] = None
    #: Length of an array; bound of a sequence (0: unbounded).
    length: int = 0
    #: Default value as written in the .msg (None: zero / empty).
    default: Optional[str] = None

    @property
    def is_message(self) -> bool:
        return self.base not in PRIMITIVES and self.base not in STRINGS

    @property
    def is_byte_sequence(self) -> bool:
        """An unbounded uint8[] / byte[]: a span in the view twin."""
        return (self.container == "sequence" and self.length == 0
                and self.base in ("uint8", "byte"))


@dataclass
class Constant:
    name: str
    type: str
    value: Union[int, float, str, bool]


@dataclass
class Message:
    #: "pkg/msg/Name".
    name: str
    fields: List[Field]
    constants: List[Constant] = field(default_factory=list)
    #: Where the definition came from (for the generated header's comment).
    origin: str = ""

    @property
    def package(self) -> str:
        return self.name.split("/")[0]

    @property
    def short(self) -> str:
        return self.name.split("/")[-1]

    def deps(self) -> List[str]:
        return [f.base for f in self.fields if f.is_message]


def ros1_style(name: str) -> str:
    """"pkg/msg/Name" -> "pkg/Name" (how ros2msg text names types)."""
    p = name.split("/")
    return f"{p[0]}/{p[-1]}" if len(p) == 3 else name


def full_name(name: str, package: str) -> str:
    """A type as written in a .msg ("Name", "pkg/Name", "pkg/msg/Name") as
    "pkg/msg/Name"."""
    p = name.split("/")
    if len(p) == 1:
        return f"{package}/msg/{p[0]}"
    if len(p) == 2:
        return f"{p[0]}/msg/{p[1]}"
    if len(p) == 3 and p[1] == "msg":
        return name
    raise DefinitionError(f"not a message type name: {name!r}")


def snake_case(name: str) -> str:
    """PointCloud2 -> point_cloud2, MultiDOFJointState ->
    multi_dof_joint_state (rosidl's header file names)."""
    v = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    v = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", v)
    return v.lower()


# ---- .msg files -------------------------------------------------------------

_TYPE = re.compile(
    r"^(?P<base>[A-Za-z][A-Za-z0-9_]*(?:/[A-Za-z][A-Za-z0-9_]*){0,2})"
    r"(?:<=(?P<sbound>\d+))?"
    r"(?:\[(?P<arr>(?:<=)?\d*)\])?$")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def _strip_comment(line: str) -> str:
    """The line without its comment (a '#' outside quotes)."""
    q = None
    for i, c in enumerate(line):
        if q:
            if c == q:
                q = None
        elif c in "\"'":
            q = c
        elif c == "#":
            return line[:i]
    return line


def _parse_type(text: str, package: str, where: str) -> Field:
    m = _TYPE.match(text)
    if not m:
        raise DefinitionError(f"{where}: cannot parse type {text!r}")
    base = m.group("base")
    f = Field(name="", base=base)
    if base in PRIMITIVES or base in STRINGS:
        pass
    elif base == "Header":
        f.base = "std_msgs/msg/Header"  # as rosidl resolves it
    else:
        f.base = full_name(base, package)
    if m.group("sbound"):
        if base not in STRINGS:
            raise DefinitionError(f"{where}: only strings take a bound: {text!r}")
        f.str_bound = int(m.group("sbound"))
    arr = m.group("arr")
    if arr is not None:
        if arr == "":
            f.container = "sequence"
        elif arr.startswith("<="):
            f.container, f.length = "sequence", int(arr[2:])
            if f.length == 0:
                raise DefinitionError(f"{where}: a bound must be positive: {text!r}")
        else:
            f.container, f.length = "array", int(arr)
            if f.length == 0:
                raise DefinitionError(f"{where}: an array needs a length: {text!r}")
    return f


def _constant_value(ctype: str, text: str, where: str) -> Union[int, float, str, bool]:
    text = text.strip()
    try:
        if ctype in STRINGS:
            if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
                return re.sub(r"\\(.)", r"\1", text[1:-1])
            return text
        if ctype == "bool":
            if text.lower() in ("true", "1"):
                return True
            if text.lower() in ("false", "0"):
                return False
            raise ValueError(text)
        if ctype in ("float32", "float64"):
            return float(text)
        return int(text, 0)
    except ValueError:
        raise DefinitionError(f"{where}: bad {ctype} value {text!r}") from None


def parse_msg(text: str, name: str, origin: str = "") -> Message:
    """Parse the text of one .msg file as message ``name`` ("pkg/msg/Name")."""
    package = name.split("/")[0]
    fields: List[Field] = []
    constants: List[Constant] = []
    for no, raw in enumerate(text.splitlines(), 1):
        where = f"{origin or name}:{no}"
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        typ, _, rest = line.partition(" ")
        rest = rest.strip()
        mc = re.match(r"^([A-Za-z][A-Za-z0-9_]*)\s*=(.*)$", rest)
        if mc and (typ in PRIMITIVES or typ in STRINGS):
            cval = mc.group(2) if typ in STRINGS else _strip_comment(mc.group(2))
            constants.append(Constant(mc.group(1), typ, _constant_value(typ, cval, where)))
            continue
        rest = _strip_comment(rest).strip()
        if not rest:
            raise DefinitionError(f"{where}: a field needs a name: {raw!r}")
        fname, _, default = rest.partition(" ")
        if not _NAME.match(fname):
            raise DefinitionError(f"{where}: bad field name {fname!r}")
        f = _parse_type(typ, package, where)
        f.name = fname
        f.default = default.strip() or None
        if f.default is not None and (f.is_message):
            raise DefinitionError(f"{where}: a message field takes no default")
        fields.append(f)
    if not fields:
        # rosidl gives an empty message one member, and so does the wire.
        fields.append(Field(DUMMY_MEMBER, "uint8"))
    return Message(name, fields, constants, origin)


# ---- rosbags' type stores ---------------------------------------------------

def _store(distro: str):  # -> rosbags Typestore
    from rosbags.typesys import Stores, get_typestore

    stores = {"humble": Stores.ROS2_HUMBLE, "jazzy": Stores.ROS2_JAZZY}
    if distro not in stores:
        raise DefinitionError(f"unknown distribution {distro!r}; known: {', '.join(stores)}")
    return get_typestore(stores[distro])


def _from_node(node, where: str) -> Field:
    from rosbags.typesys.base import Nodetype

    kind, arg = node
    if kind == Nodetype.BASE:
        t, bound = arg
        if t not in PRIMITIVES and t not in STRINGS:
            raise DefinitionError(f"{where}: unknown base type {t!r}")
        return Field("", t, str_bound=bound or 0)
    if kind == Nodetype.NAME:
        return Field("", arg)
    if kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
        sub, n = arg
        f = _from_node(sub, where)
        if f.container:
            raise DefinitionError(f"{where}: nested arrays are not ROS 2 messages")
        f.container = "array" if kind == Nodetype.ARRAY else "sequence"
        f.length = n or 0
        return f
    raise DefinitionError(f"{where}: unknown node {node!r}")


def from_rosbags(fielddefs, name: str, origin: str,
                defaults: Optional[Dict[str, str]] = None) -> Message:
    """Message ``name`` of a rosbags store; ``defaults`` (field -> value as
    written in a .msg) gives back what the store dropped."""
    consts, fdefs = fielddefs[name]
    fields = []
    for fname, node in fdefs:
        f = _from_node(node, f"{name}.{fname}")
        f.name = fname
        f.default = (defaults or {}).get(fname)
        fields.append(f)
    return Message(name, fields, [Constant(n, t, v) for n, t, v in consts], origin)


class Registry:
    """The messages known to one generator run: a distribution's packages
    (from rosbags) and the user's .msg files, which take precedence."""

    def __init__(self, distro: str = "jazzy") -> None:
        self.distro = distro
        self._fielddefs = None
        self.messages: Dict[str, Message] = {}

    def _rosbags(self):
        if self._fielddefs is None:
            self._fielddefs = _store(self.distro).fielddefs
        return self._fielddefs

    def package_types(self, package: str) -> List[str]:
        names = sorted(n for n in self._rosbags() if n.startswith(f"{package}/msg/"))
        if not names:
            raise DefinitionError(f"rosbags' ROS 2 {self.distro} store has no package {package!r}")
        return names

    def add_msg_file(self, path: str, name: Optional[str] = None) -> Message:
        """Add a .msg file. Its name is ``name``, or read from the path
        (``.../pkg/msg/Name.msg``)."""
        if name is None:
            parts = path.replace("\\", "/").split("/")
            if len(parts) < 3 or parts[-2] != "msg" or not parts[-1].endswith(".msg"):
                raise DefinitionError(
                    f"{path}: cannot tell the package from the path (want .../PKG/msg/NAME.msg; "
                    "or give it as PKG/msg/NAME)")
            name = f"{parts[-3]}/msg/{parts[-1][:-4]}"
        with open(path, encoding="utf-8") as fh:
            m = parse_msg(fh.read(), name, origin=path)
        self.messages[name] = m
        return m

    def get(self, name: str) -> Message:
        m = self.messages.get(name)
        if m is None:
            fd = self._rosbags()
            if name not in fd:
                raise DefinitionError(f"unknown message type {name!r} (not among the .msg files "
                                      f"given nor in rosbags' ROS 2 {self.distro} store)")
            m = from_rosbags(fd, name, f"rosbags {self.distro}",
                             STORE_DEFAULTS.get(self.distro, {}).get(name))
            self.messages[name] = m
        return m

    def closure(self, names: Iterable[str]) -> List[Message]:
        """``names`` and everything they depend on, dependencies first."""
        out: Dict[str, Message] = {}
        visiting: set = set()

        def walk(n: str) -> None:
            if n in out:
                return
            if n in visiting:
                raise DefinitionError(f"{n} contains itself")
            visiting.add(n)
            m = self.get(n)
            for d in m.deps():
                walk(d)
            visiting.discard(n)
            out[n] = m

        for n in names:
            walk(n)
        return list(out.values())

    def has_view(self, name: str) -> bool:
        """Whether a message has a view twin: an unbounded uint8[]/byte[]
        field, directly or in a nested message."""
        m = self.get(name)
        return any(f.is_byte_sequence or (f.is_message and self.has_view(f.base))
                   for f in m.fields)


# ---- ros2msg text -----------------------------------------------------------

def _type_text(f: Field) -> str:
    t = ros1_style(f.base) if f.is_message else f.base
    if f.str_bound:
        t += f"<={f.str_bound}"
    if f.container == "array":
        t += f"[{f.length}]"
    elif f.container == "sequence":
        t += f"[<={f.length}]" if f.length else "[]"
    return t


def _const_text(c: Constant) -> str:
    v = c.value
    if isinstance(v, bool):
        v = "true" if v else "false"
    return f"{c.type} {c.name}={v}"


def msg_text(m: Message) -> str:
    """One message's definition as rosbags' generate_msgdef writes it:
    constants, then fields, no comments."""
    lines = [_const_text(c) for c in m.constants]
    for f in m.fields:
        if f.name == DUMMY_MEMBER and len(m.fields) == 1:
            continue  # rosidl's member of an empty message, not in its text
        line = f"{_type_text(f)} {f.name}"
        if f.default is not None:
            line += f" {f.default}"
        lines.append(line)
    return "".join(line + "\n" for line in lines)


def ros2msg(reg: Registry, name: str) -> str:
    """The full definition of ``name``: its text, then each dependency
    (depth first, once) after a line of 80 '=' and "MSG: pkg/Name"."""
    parts = [msg_text(reg.get(name))]
    seen = {name}

    def walk(n: str) -> None:
        for d in reg.get(n).deps():
            if d not in seen:
                seen.add(d)
                parts.append("=" * 80 + "\n" + f"MSG: {ros1_style(d)}\n" + msg_text(reg.get(d)))
                walk(d)

    walk(name)
    return "".join(parts)


# ---- default values -----------------------------------------------------------

def with_store_defaults(text: str, name: str, distro: str = "jazzy") -> str:
    """ros2msg text of ``name`` as rosbags' ``generate_msgdef`` writes it,
    with the field defaults its store drops (:data:`STORE_DEFAULTS`)
    written back, as the distribution's .msg files have them."""
    table = STORE_DEFAULTS.get(distro, {})
    out, typ = [], name
    for line in text.splitlines(keepends=True):
        words = line.split()
        if line.startswith("MSG: "):
            typ = full_name(line[5:].strip(), "")
        elif len(words) == 2 and "=" not in line:
            d = table.get(typ, {}).get(words[1])
            if d is not None:
                line = f"{words[0]} {words[1]} {d}\n"
        out.append(line)
    return "".join(out)


def default_value(f: Field) -> Any:
    """A field's default as a Python value (a list for an array or
    sequence), or None when it has none (zero / empty)."""
    if f.default is None:
        return None
    d = f.default.strip()
    where = f"default of {f.name}"
    if not f.container:
        return _constant_value(f.base, d, where)
    if not (d.startswith("[") and d.endswith("]")):
        raise DefinitionError(f"{where}: an array default is written [a, b, ...]: {d!r}")
    if f.base in STRINGS:
        try:
            items = json.loads(d)  # quoted strings may hold commas
            if isinstance(items, list) and all(isinstance(x, str) for x in items):
                return items
        except ValueError:
            pass
    return [_constant_value(f.base, x, where) for x in d[1:-1].split(",") if x.strip()]


def schema_defaults(text: str, name: str) -> Dict[str, Dict[str, Any]]:
    """The field defaults that a ros2msg schema (the text a channel of
    type ``name`` records) spells out: {"pkg/msg/Type": {field: value}}."""
    out: Dict[str, Dict[str, Any]] = {}
    sections = re.split(r"^={80}\n", text, flags=re.M)
    for i, sec in enumerate(sections):
        tname = name
        if i:
            head, _, sec = sec.partition("\n")
            if not head.startswith("MSG: "):
                raise DefinitionError(f"schema of {name}: a section without 'MSG: ': {head!r}")
            tname = full_name(head[5:].strip(), name.split("/")[0])
        m = parse_msg(sec, tname, origin=f"schema of {name}")
        d = {f.name: default_value(f) for f in m.fields if f.default is not None}
        if d:
            out[tname] = d
    return out
