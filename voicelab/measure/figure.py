"""One figure of the catalogue: `Figure` (see `voicelab.measure.figures` for each field), the words its fields
may hold, and the check an entry passes before it is registered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from voicelab.measure.figure_summary import Summary
from voicelab.measure.figure_views import View
from voicelab.measure.turn_facts import TurnFacts

LINE = ("events", "recording", "no")
BETTER = ("lower", "higher", "nearer zero", "")
DTYPES = ("float64", "int32", "int64", "string", "bool")


class CatalogueError(ValueError):
    """A figure entry that cannot be registered (a name taken, an unknown unit word); one line."""



@dataclass(frozen=True)
class Figure:
    """One figure (see the module docstring for each field)."""

    name: str
    unit: str
    better: str
    doc: str
    turn: Callable[[TurnFacts], Any] | str | None = None
    dtype: str | None = None
    summary: tuple[Summary, ...] = ()
    line: str = "no"
    part_of: str | None = None
    row_last: bool = False  # turn_table (turns.csv) puts it after the other columns, where it has always been
    views: tuple[View, ...] = ()

    @property
    def computed(self) -> bool:
        """turn_table computes it (else a writer sets the column, or it is a summary.json figure only)."""
        return callable(self.turn)

    @property
    def per_turn(self) -> bool:
        return self.turn is not None

    @property
    def summary_key(self) -> str:
        """The top-level summary.json key its value sits under (its own name when it has none)."""
        return self.summary[0].key.split(".")[0] if self.summary else self.name


def check(f: Figure, taken: Callable[[str], bool]) -> None:
    """Raise CatalogueError when `f` cannot join a catalogue in which `taken(name)` says a name is used."""
    if taken(f.name):
        raise CatalogueError(f"figure '{f.name}': the name is taken")
    if f.better not in BETTER or f.line not in LINE or (f.dtype is not None and f.dtype not in DTYPES):
        raise CatalogueError(f"figure '{f.name}': better one of {BETTER}, line one of {LINE}, dtype one of {DTYPES}")
    if not f.unit:
        raise CatalogueError(f"figure '{f.name}': no unit")
