"""Value conditions of ``nerve blackbox --when``.

``CHANNEL: FIELD OP VALUE [clear OP VALUE]``, e.g.
``robot.imu: linear_acceleration.z > 30 clear < 25``. CHANNEL is a name or
a glob (each matching channel is evaluated on its own); FIELD a path into
the decoded message (``a.b.c``, list items by index ``a.0.b`` or ``a[0].b``)
as ``nerve echo --field`` takes it; OP one of ``> >= < <= == !=``; VALUE a
JSON literal (a number, ``true``, ``"text"``) or a bare word (a string).

The condition fires on its rising edge: when it holds for a message while
armed. It re-arms when the ``clear`` condition holds for a message (the
hysteresis: with ``> 30 clear < 25`` a value wobbling around 30 fires
once); without ``clear``, when the condition no longer holds. It starts
armed, so the first message evaluated that holds fires.

Messages are decoded by the channel's encoding and schema with
:class:`nerve_tools.codec.payload.Codec` (JSON, ROS 2 CDR, ROS 1, protobuf),
the decoder of ``nerve echo``; raw channels (the bytes of a C struct) by
the C declaration recorded as their schema (:mod:`nerve_tools.codec.cstruct`).
"""

from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..codec import cstruct

_OPS: Dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
    "==": operator.eq, "!=": operator.ne,
}
_OP = r"(>=|<=|==|!=|>|<)"
_WHEN = re.compile(
    r"^\s*(?P<chan>[^:\s]+)\s*:\s*(?P<field>[^\s<>=!]+)\s*" + _OP.replace("(", "(?P<op>", 1)
    + r"\s*(?P<value>.+?)(?:\s+clear\s*" + _OP.replace("(", "(?P<cop>", 1) + r"\s*(?P<cvalue>.+?))?\s*$")
_INDEX = re.compile(r"\[(-?\d+)\]")


def _codecs() -> Any:
    """The decoders (numpy, rosbags, protobuf: about 15 MB), imported only
    when a condition is armed: a recorder without --when never loads them."""
    from ..codec import payload

    return payload


class ConditionError(ValueError):
    """A --when expression that does not parse or does not fit its channel."""


def _literal(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


@dataclass(frozen=True)
class Test:
    op: str
    value: Any

    def __call__(self, v: Any) -> bool:
        if self.op in ("==", "!="):
            return _OPS[self.op](v, self.value)
        return _number(v) and _OPS[self.op](v, self.value)

    def __str__(self) -> str:
        return f"{self.op} {json.dumps(self.value)}"


@dataclass(frozen=True)
class Condition:
    text: str
    channel: str  # name or glob
    field: str    # dotted path, list items by index
    fire: Test
    clear: Optional[Test]  # None: re-arm when ``fire`` no longer holds

    def rearms(self, v: Any) -> bool:
        return self.clear(v) if self.clear is not None else not self.fire(v)


def parse(text: str) -> Condition:
    """``CHANNEL: FIELD OP VALUE [clear OP VALUE]``; ConditionError says
    what is wrong."""
    m = _WHEN.match(text)
    if not m:
        raise ConditionError(f"--when {text!r}: expected 'CHANNEL: FIELD OP VALUE [clear OP VALUE]' "
                             f"with OP one of > >= < <= == != (e.g. 'robot.imu: linear_acceleration.z > 30 "
                             f"clear < 25')")
    path = _INDEX.sub(r".\1", m.group("field")).strip(".")
    if not path or any(not p for p in path.split(".")):
        raise ConditionError(f"--when {text!r}: bad field path {m.group('field')!r}")
    tests = [Test(m.group("op"), _literal(m.group("value")))]
    if m.group("cop"):
        tests.append(Test(m.group("cop"), _literal(m.group("cvalue"))))
    for t in tests:
        if t.op not in ("==", "!=") and not _number(t.value):
            raise ConditionError(f"--when {text!r}: {t.op} needs a number, got {t.value!r}")
    return Condition(text, m.group("chan"), path, tests[0], tests[1] if len(tests) > 1 else None)


def _check_path(value: Any, path: str) -> Any:
    """The field of an all-default value, or None where the path goes
    into a list that is empty by default (a sequence: its items exist only
    in real messages). KeyError names what is missing."""
    codecs = _codecs()
    parts = path.split(".")
    cur = value
    for i, part in enumerate(parts):
        if isinstance(cur, list) and not cur and part.lstrip("-").isdigit():
            return None
        cur = codecs.field(value, ".".join(parts[: i + 1]))
    return cur


class Watch:
    """One condition on one channel: a reader handle of its own that
    evaluates every message in order, and the edge state."""

    def __init__(self, cond: Condition, name: str, ch: Any, newest: Optional[Any]) -> None:
        self.cond = cond
        self.name = name
        self.ch = ch
        self.armed = True
        self.missed = 0        # messages overwritten before they were evaluated
        self.undecodable = 0   # messages that did not decode or lack the field
        self.struct: Optional[cstruct.Struct] = None
        meta = ch.metadata
        if (meta.encoding or "raw") == "raw":
            self._struct_field(meta)
            return
        self._codecs = codecs = _codecs()
        try:
            self.codec = codecs.Codec.for_channel(ch)
        except codecs.CodecError as e:
            raise ConditionError(f"--when {cond.text!r}: {name}: {e}") from None
        if self.codec.raw:
            raise ConditionError(f"--when {cond.text!r}: {name} has no encoding nerve decodes "
                                 f"(json, cdr, ros1msg, protobuf, or raw with a C struct schema): "
                                 f"its fields cannot be read")
        self._check(newest)

    def _struct_field(self, meta: Any) -> None:
        """A raw channel with a C struct schema (codec/cstruct.py): the
        field's offset and type are found at arming, so each message costs
        one unpack of that field (no decode of the rest)."""
        where = f"--when {self.cond.text!r}: {self.name}"
        if not meta.schema:
            raise ConditionError(f"{where} is raw without a schema: its fields cannot be read "
                                 f"(give it the C declaration of its struct as schema)")
        try:
            self.struct = cstruct.parse(meta.schema, meta.type or "")
            self.offset, self.ftype = cstruct.field(self.struct, self.cond.field)
        except cstruct.ParseError as e:
            raise ConditionError(f"{where}: its schema: {e}") from None
        except KeyError as e:
            raise ConditionError(f"{where}: {e.args[0]}") from None
        ordering = [t for t in (self.cond.fire, self.cond.clear) if t is not None and t.op not in ("==", "!=")]
        scalar = isinstance(self.ftype, cstruct.Scalar) and self.ftype.code != "c"
        if ordering and not scalar:
            raise ConditionError(f"{where}: {self.cond.field} is not a number in struct {self.struct.name}")

    def _check(self, newest: Optional[Any]) -> None:
        """Unknown fields are an error at arming: against the type's
        all-default value (ROS, protobuf) or, for JSON, the newest message
        present (when there is one)."""
        codecs = self._codecs
        sample = codecs.example_value(self.codec)
        if sample is None and newest is not None:
            try:
                sample = self.codec.decode(newest.data)
            except codecs.CodecError:
                sample = None
        if sample is None:
            return
        try:
            v = _check_path(sample, self.cond.field)
        except KeyError as e:
            raise ConditionError(f"--when {self.cond.text!r}: {self.name}: {e.args[0]}") from None
        ordering = [t for t in (self.cond.fire, self.cond.clear) if t is not None and t.op not in ("==", "!=")]
        if v is not None and ordering and not _number(v):
            raise ConditionError(f"--when {self.cond.text!r}: {self.name}: {self.cond.field} is "
                                 f"{type(v).__name__}, not a number")

    def value(self, msg: Any) -> Tuple[bool, Any]:
        if self.struct is not None:
            if len(msg.data) < self.struct.size:
                self.undecodable += 1
                return False, None
            return True, self.ftype.read(msg.data, self.offset)
        codecs = self._codecs
        try:
            return True, codecs.field(self.codec.decode(msg.data), self.cond.field)
        except (codecs.CodecError, KeyError):
            self.undecodable += 1
            return False, None

    def poll(self) -> List[Tuple[Any, Any]]:
        """Evaluate every message published since the last call, in
        order; returns (message, value) of each rising edge."""
        fired = []
        while True:
            msg = self.ch.get()
            if msg is None:
                return fired
            self.missed += msg.missed
            ok, v = self.value(msg)
            if not ok:
                continue
            if self.armed and self.cond.fire(v):
                self.armed = False
                fired.append((msg, v))
            elif not self.armed and self.cond.rearms(v):
                self.armed = True
