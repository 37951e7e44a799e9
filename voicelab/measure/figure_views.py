"""How each view shows a figure: one dataclass per view, each with its position `at` in that view.

The console (`Narrow`, `Part`, `Flag`, `Wide`, `Overall`; `voicelab.runs.console`), `voicelab compare`
(`Paired`; `voicelab.analysis.compare`), the results page (`Result`; `voicelab.analysis.results_md`) and the HTML
report (`ReportSummary`, `ReportTurn`, `ReportLineTurn`, `ReportPart`; `voicelab.analysis.report`). A figure of the
catalogue (`voicelab.measure.figures`) lists its views; each view reads the catalogue when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar


@dataclass(frozen=True)
class Narrow:
    """A column of the console's narrow per-turn table. show: "num", "blank" (nothing for None), "ok_wrong",
    "text" (folded words), "checks" (an `expectations` cell: passed/checked and the failed checks). `optional`:
    the column is left out when no row has a value (the read-back words of a line run)."""

    header: str
    at: int
    justify: str | None = None
    overflow: str | None = None
    show: str = "num"
    optional: bool = False


@dataclass(frozen=True)
class Part:
    """Its label in the console's breakdown cell (the parts of the figure it is `part_of`)."""

    label: str
    at: int


@dataclass(frozen=True)
class Flag:
    """A defect named in the console's flags cell: when "true" (True), "false" (False) or "positive" (> 0)."""

    label: str
    at: int
    when: str = "true"


@dataclass(frozen=True)
class Wide:
    """A column of the console's `--wide` per-turn table."""

    header: str
    at: int
    left: bool = False


@dataclass(frozen=True)
class Overall:
    """A row of the console's overall table, read from summary.json at `key` (dotted). show: "num" (nd
    decimals), "p50"/"p95" (with the interval), "share" (a percentage), "share_of" (with the count at `n`),
    "count_of" (a count of the count at `n`), "parts" (the `parts` sub-keys joined by '/'), "machine" (the
    machine's verdict and readings in words, `voicelab.measure.machine_load.machine_text`)."""

    label: str
    at: int
    key: str
    show: str = "num"
    nd: int = 0
    n: str | None = None
    parts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Paired:
    """A row of `voicelab compare`: `stat` ("p50", "p95", "mean") of the per-turn column over each run, the
    difference with its interval; `name` is the `--fail-on` key and `example` a threshold for it."""

    name: str
    label: str
    stat: str
    unit: str
    at: int
    example: str
    answered_only: bool = False  # FAR: backchannels get no reply


@dataclass(frozen=True)
class Result:
    """A row of the results page (docs/results.md) and a name for the README's headline table; `read` says how
    the value is taken from summary.json at `key`: "p50"/"p95" (latency with interval), "median", "ms",
    "count", "share" (with its count at `n`), "mean_p95", "count_per_100_words"."""

    name: str
    title: str
    column: str
    at: int
    key: str
    read: str
    n: str | None = None
    headline: bool = False  # in the README's rows that name no figures


@dataclass(frozen=True)
class ReportSummary:
    """A column of the HTML report's summary table, read from summary.json at `key` (dotted)."""

    header: str
    at: int
    key: str


@dataclass(frozen=True)
class ReportTurn:
    """A column of the HTML report's per-turn table."""

    at: int


@dataclass(frozen=True)
class ReportLineTurn:
    """A column of the HTML report's per-turn table of a line run."""

    at: int


@dataclass(frozen=True)
class ReportPart:
    """A bar of the HTML report's stacked FAR breakdown, in this colour, named `label` in its legend (empty: the
    figure's name). A figure `part_of` another bar's figure splits that bar where the run's table has every such
    part (run folders written before a split have only the whole bar); `at` orders it within that bar."""

    colour: str
    at: int
    label: str = ""


View = Narrow | Part | Flag | Wide | Overall | Paired | Result | ReportSummary | ReportTurn | ReportLineTurn | ReportPart
V = TypeVar("V", Narrow, Part, Flag, Wide, Overall, Paired, Result, ReportSummary, ReportTurn, ReportLineTurn,
            ReportPart)
