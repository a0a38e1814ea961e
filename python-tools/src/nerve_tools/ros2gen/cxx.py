"""C++17 headers for the messages of a :class:`~nerve_tools.ros2gen.Registry`:
one header per message, ``<nerve/ros2/PKG/msg/snake_name.hpp>``, holding

- ``struct nerve::ros2::PKG::msg::Name``: the fields as rclcpp's generated
  struct names and types them (std::string, std::u16string, std::array,
  std::vector), the constants as ``static constexpr`` members, ``==``;
- ``struct NameView`` when the message has an unbounded uint8[]/byte[]
  field (directly or nested): the same with those fields as
  ``nerve::Span<const uint8_t>`` (see include/nerve/cxx/ros2.hpp);
- ``nerve::ros2::MessageTraits<...>``: the ROS 2 name, the ros2msg
  definition and ``visit()``, the field walk the codec runs.
"""

from __future__ import annotations

import json
import math
from typing import List

from . import PRIMITIVES, Constant, Field, Message, Registry, ros2msg, snake_case

_KEYWORDS = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char16_t", "char32_t", "class", "compl", "const", "constexpr",
    "const_cast", "continue", "decltype", "default", "delete", "do", "double", "dynamic_cast",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
    "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast", "return", "short", "signed", "sizeof", "static", "static_assert",
    "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true",
    "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void",
    "volatile", "wchar_t", "while", "xor", "xor_eq",
}


def ident(name: str) -> str:
    """A field or constant name as a C++ identifier (keywords get a '_', as
    rosidl does)."""
    return name + "_" if name in _KEYWORDS else name


def header_path(msg_name: str) -> str:
    pkg, _, short = msg_name.split("/")
    return f"nerve/ros2/{pkg}/msg/{snake_case(short)}.hpp"


def cxx_name(msg_name: str, view: bool = False) -> str:
    pkg, _, short = msg_name.split("/")
    return f"::nerve::ros2::{pkg}::msg::{short}{'View' if view else ''}"


def c_string(s: str) -> str:
    """A C++ string literal (UTF-8, escaped)."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        else:
            out.extend(f"\\x{b:02x}\"\"" for b in ch.encode())
    return '"' + "".join(out) + '"'


def _scalar_literal(ptype: str, text: str) -> str:
    from . import _constant_value

    v = _constant_value(ptype, text, "default")
    return _value_literal(ptype, v)


def _value_literal(ptype: str, v) -> str:
    if ptype == "bool":
        return "true" if v else "false"
    if ptype in ("float32", "float64"):
        v = float(v)
        if math.isnan(v) or math.isinf(v):
            lim = "float" if ptype == "float32" else "double"
            if math.isnan(v):
                return f"std::numeric_limits<{lim}>::quiet_NaN()"
            return ("" if v > 0 else "-") + f"std::numeric_limits<{lim}>::infinity()"
        lit = repr(v)
        return lit + ("f" if ptype == "float32" else "")
    if ptype in ("string", "wstring"):
        return ("u" if ptype == "wstring" else "") + c_string(str(v))
    cpp = PRIMITIVES[ptype][0]
    iv = int(v)
    if ptype == "int64" and iv == -(1 << 63):
        return "INT64_MIN"
    suffix = {"int64": "LL", "uint64": "ULL", "uint32": "U"}.get(ptype, "")
    return f"static_cast<{cpp}>({iv}{suffix})"


def _elem_type(reg: Registry, f: Field, view: bool) -> str:
    if f.base in PRIMITIVES:
        return PRIMITIVES[f.base][0]
    if f.base == "string":
        return "std::string"
    if f.base == "wstring":
        return "std::u16string"
    return cxx_name(f.base, view and reg.has_view(f.base))


def _field_type(reg: Registry, f: Field, view: bool) -> str:
    if view and f.is_byte_sequence:
        return "::nerve::Span<const uint8_t>"
    e = _elem_type(reg, f, view)
    if f.container == "array":
        return f"std::array<{e}, {f.length}>"
    if f.container == "sequence":
        return f"std::vector<{e}>"
    return e


def _default_init(f: Field) -> str:
    if f.default is None:
        return "{}"
    d = f.default.strip()
    if f.container:
        if not (d.startswith("[") and d.endswith("]")):
            raise ValueError(f"field {f.name}: an array default is written [a, b, ...]: {d!r}")
        items = [x.strip() for x in _split_list(d[1:-1])]
        return "{" + ", ".join(_scalar_literal(f.base, x) for x in items if x) + "}"
    return "{" + _scalar_literal(f.base, d) + "}"


def _split_list(s: str) -> List[str]:
    if not s.strip():
        return []
    # Quoted strings may hold commas: parse as a JSON list where possible.
    try:
        return [json.dumps(x) if isinstance(x, str) else str(x) for x in json.loads("[" + s + "]")]
    except ValueError:
        return s.split(",")


def _const_decl(c: Constant) -> str:
    if c.type in ("string", "wstring"):
        ct = "char16_t" if c.type == "wstring" else "char"
        return f"    static constexpr const {ct} *{ident(c.name)} = {_value_literal(c.type, c.value)};"
    return (f"    static constexpr {PRIMITIVES[c.type][0]} {ident(c.name)} = "
            f"{_value_literal(c.type, c.value)};")


def _visit_expr(f: Field) -> str:
    m = f"m.{ident(f.name)}"
    if f.container == "sequence" and f.length:
        e = f"s.bounded({m}, {f.length})"
    elif f.container is None and f.str_bound:
        return f"s.bounded({m}, {f.str_bound})"
    else:
        e = f"s({m})"
    if f.container and f.str_bound:
        e += f" && s.bounded_each({m}, {f.str_bound})"
    return e


def _struct(reg: Registry, m: Message, view: bool) -> List[str]:
    name = m.short + ("View" if view else "")
    out = []
    if view:
        out.append(f"/// {m.name} with its byte arrays as spans (see nerve/cxx/ros2.hpp):")
        out.append("/// for Publisher<...View> and nerve::ros2::read_view().")
    else:
        out.append(f"/// ROS 2 {m.name} ({m.origin}).")
    out.append(f"struct {name} {{")
    for c in m.constants:
        out.append(_const_decl(c))
    if m.constants:
        out.append("")
    for f in m.fields:
        out.append(f"    {_field_type(reg, f, view)} {ident(f.name)}{_default_init(f)};")
    if not view:
        out.append("")
        eq = " &&\n               ".join(f"{ident(f.name)} == o.{ident(f.name)}" for f in m.fields)
        out.append(f"    bool operator==(const {name} &o) const\n    {{\n        return {eq};\n    }}")
        out.append(f"    bool operator!=(const {name} &o) const\n    {{\n        return !(*this == o);\n    }}")
    out.append("};")
    return out


def _traits(m: Message, view: bool, definition: str) -> List[str]:
    t = cxx_name(m.name, view)
    body = " &&\n               ".join(_visit_expr(f) for f in m.fields)
    return [
        f"template <> struct MessageTraits<{t}> {{",
        f"    static constexpr const char *name = {c_string(m.name)};",
        f"    static constexpr bool is_view = {'true' if view else 'false'};",
        f"    static constexpr const char *definition =\n        {c_string(definition)};",
        "    template <class S, class M> static bool visit(S &s, M &m)",
        "    {",
        f"        return {body};",
        "    }",
        "};",
    ]


def header(reg: Registry, m: Message) -> str:
    """The header of message ``m``."""
    has_view = reg.has_view(m.name)
    guard = "NERVE_ROS2_" + header_path(m.name)[len("nerve/ros2/"):].replace("/", "_").replace(
        ".", "_").upper()
    deps = sorted({d for d in m.deps()})
    lines = [
        f"// generated by nerve_tools.ros2gen from {m.origin}, do not edit",
        f"// ROS 2 message {m.name} for nerve's C++ API (see nerve/cxx/ros2.hpp).",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <nerve/cxx/ros2.hpp>",
    ]
    lines += [f"#include <{header_path(d)}>" for d in deps if d != m.name]
    lines += [
        "",
        "#include <array>",
        "#include <cstdint>",
        "#include <limits>",
        "#include <string>",
        "#include <vector>",
        "",
        f"namespace nerve {{\nnamespace ros2 {{\nnamespace {m.package} {{\nnamespace msg {{",
        "",
    ]
    lines += _struct(reg, m, False)
    if has_view:
        lines.append("")
        lines += _struct(reg, m, True)
    lines += ["", f"}} // namespace msg\n}} // namespace {m.package}", ""]
    definition = ros2msg(reg, m.name)
    lines += _traits(m, False, definition)
    if has_view:
        lines += _traits(m, True, definition)
    lines += ["", "} // namespace ros2\n} // namespace nerve", "", "#endif", ""]
    return "\n".join(lines)


def index_header(reg: Registry, msgs: List[Message], index: str) -> str:
    """``<nerve/ros2/INDEX.hpp>``: includes every header of one generator
    run and dispatches on a type name at run time (for tools and tests)."""
    guard = f"NERVE_ROS2_{index.upper()}_HPP"
    lines = [
        "// generated by nerve_tools.ros2gen, do not edit",
        f"// Every ROS 2 message type of {index}, by name.",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
    ]
    lines += [f"#include <{header_path(m.name)}>" for m in msgs]
    lines += [
        "",
        "#include <string_view>",
        "",
        f"namespace nerve {{\nnamespace ros2 {{\nnamespace {index} {{",
        "",
        "/// The ROS 2 names of the types, in dependency order.",
        "inline constexpr const char *types[] = {",
    ]
    lines += [f"    {c_string(m.name)}," for m in msgs]
    lines += [
        "};",
        "",
        "/// Call f(static_cast<T *>(nullptr), static_cast<V *>(nullptr)) for the",
        "/// type T named `type` and its view twin V (T itself when it has",
        "/// none); false when no type has that name.",
        "template <class F> bool with_type(std::string_view type, F &&f)",
        "{",
    ]
    for m in msgs:
        t = cxx_name(m.name)
        v = cxx_name(m.name, reg.has_view(m.name))
        lines.append(f"    if (type == {c_string(m.name)}) {{\n        f(static_cast<{t} *>(nullptr), "
                     f"static_cast<{v} *>(nullptr));\n        return true;\n    }}")
    lines += ["    return false;", "}", "",
              f"}} // namespace {index}\n}} // namespace ros2\n}} // namespace nerve", "",
              "#endif", ""]
    return "\n".join(lines)
