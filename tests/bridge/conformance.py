"""The bridge engines' conformance table (engine_cases.txt beside this
file) for the thin test of each engine: which cases there are, what each
expects, which an engine runs and why it skips the others, and how a
channel's name appears on the engine's far side. Each engine's test module
puts this folder on sys.path and parametrises one test over params(ENGINE),
dispatching with check() to its own check of each case (a method of the
case's name)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from nerve.bridge import topic_of_channel

TABLE = Path(__file__).with_name("engine_cases.txt")

#: How a channel's name appears on the far side, by the table's MAP word.
MAPS: Dict[str, Callable[[str], str]] = {"topic": topic_of_channel, "channel": lambda name: name}


@dataclass(frozen=True)
class Case:
    name: str
    expect: str  # what the case expects, as the table says it
    skip: Optional[str]  # for one engine: why it does not apply, or None


class Table:
    """engine_cases.txt, parsed and checked: every case has exactly one
    run or skip line for every engine."""

    def __init__(self, path: Path = TABLE) -> None:
        self.cases: Dict[str, str] = {}
        self.engines: Dict[str, Tuple[str, str]] = {}
        self.verdicts: Dict[Tuple[str, str], Optional[str]] = {}
        for no, line in enumerate(path.read_text().splitlines(), 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            where = f"{path.name}:{no}"
            if words[0] == "case" and len(words) >= 3:
                self.cases[words[1]] = " ".join(words[2:])
            elif words[0] == "engine" and len(words) == 4 and words[2] in MAPS:
                self.engines[words[1]] = (words[2], words[3])
            else:
                self._verdict(words, where)
        missing = [f"{c} {e}" for c in self.cases for e in self.engines
                   if (c, e) not in self.verdicts]
        if missing:
            raise ValueError(f"{path.name}: no run or skip line for: {', '.join(missing)}")

    def _verdict(self, words: List[str], where: str) -> None:
        if len(words) < 3 or words[0] not in self.cases or words[1] not in self.engines:
            raise ValueError(f"{where}: not a case, engine or verdict line: {' '.join(words)}")
        if (words[0], words[1]) in self.verdicts:
            raise ValueError(f"{where}: a second line for {words[0]} {words[1]}")
        if words[2] == "run" and len(words) == 3:
            self.verdicts[words[0], words[1]] = None
        elif words[2] == "skip" and len(words) > 3:
            self.verdicts[words[0], words[1]] = " ".join(words[3:])
        else:
            raise ValueError(f"{where}: want 'run', or 'skip' and a reason: {' '.join(words)}")

    def for_engine(self, engine: str) -> List[Case]:
        if engine not in self.engines:
            raise ValueError(f"{TABLE.name} has no engine {engine!r}")
        return [Case(c, text, self.verdicts[c, engine]) for c, text in self.cases.items()]


_table: Optional[Table] = None


def table() -> Table:
    global _table
    if _table is None:
        _table = Table()
    return _table


def params(engine: str) -> list:
    """One pytest parameter a case, named after it; a case the table skips
    for ``engine`` is marked skipped with the table's reason."""
    return [pytest.param(c, id=c.name, marks=[pytest.mark.skip(reason=f"{engine}: {c.skip}")]
                         if c.skip else []) for c in table().for_engine(engine)]


def far_name(engine: str, channel: str) -> str:
    """``channel``'s name on ``engine``'s far side, as the table maps it."""
    return MAPS[table().engines[engine][0]](channel)


class Basics:
    """The two cases every engine checks the same way, through its world's
    ``early`` (a channel written before its bridge started), ``made(tag)``
    (a new channel the bridge exports) and ``reaches(ch)`` (``ch`` arrives
    on the far side under its far name, with its payload)."""

    def before(self) -> None:
        self.reaches(self.early)

    def after(self) -> None:
        self.reaches(self.made("after"))


def check(engine: str, case: Case, world: object) -> None:
    """Run ``world``'s check of ``case``: its method of the case's name.
    A case the table runs for ``engine`` must have one and a case it skips
    must not, so a case added to the table fails until every engine checks
    it or says why not."""
    runs = {c.name for c in table().for_engine(engine) if not c.skip}
    has = {c for c in table().cases if callable(getattr(world, c, None))}
    assert has == runs, f"{engine}: checks {sorted(has)} but {TABLE.name} runs {sorted(runs)}"
    getattr(world, case.name)()


def test_of(engine: str):
    """The module's test: every case of the table for ``engine``, run in
    its module's ``world`` fixture (``test_conformance = test_of(ENGINE)``,
    so pytest collects it there)."""
    @pytest.mark.parametrize("case", params(engine))
    def test_conformance(world: object, case: Case) -> None:
        check(engine, case, world)
    return test_conformance
