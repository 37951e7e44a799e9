"""How a figure goes into summary.json: `Summary` (its dotted key, the statistic in words, the function that
computes it), `SummaryData` (what that function reads: the run's per-turn rows, its event rows, the WAV analyser's
rows) and the run-level computations the catalogue's entries share.

Pure Python, no numpy: the numeric rules (linear percentiles, seeded intervals) are handed in by
`voicelab.measure.metrics.summarize`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from voicelab.measure.events import Event, EventKind
from voicelab.measure.expectations import tally

K = EventKind


@dataclass
class SummaryData:
    """What a figure's summary is computed from: the run's per-turn rows, its event rows and the WAV analyser's
    rows. The numeric rules come from `voicelab.measure.metrics` (linear percentiles, seeded intervals), so
    this module needs no numpy."""

    rows: list[dict[str, Any]]
    events: list[Event]
    truth: list[Mapping[str, Any]] | None
    percentile: Callable[[Sequence[float], float], float | None]
    latency_stats: Callable[[Sequence[float]], dict[str, Any]]

    @property
    def answered(self) -> list[dict[str, Any]]:
        """Turns that get a reply (backchannels do not)."""
        return [r for r in self.rows if r["expect"] != "no_interrupt"]

    @property
    def backchannels(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["expect"] == "no_interrupt"]

    def known(self, col: str, rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Rows with a value in `col`."""
        return [r for r in (self.rows if rows is None else rows) if r.get(col) is not None]

    def values(self, col: str, rows: list[dict[str, Any]] | None = None) -> list[Any]:
        return [r[col] for r in self.known(col, rows)]

    def latency(self, col: str, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """p50, p95, n and their bootstrap 95 % intervals."""
        return self.latency_stats(self.values(col, rows))

    def median(self, col: str, rows: list[dict[str, Any]] | None = None, nd: int = 1) -> float | None:
        return rounded(self.percentile(self.values(col, rows), 50), nd)

    def total(self, col: str, rows: list[dict[str, Any]] | None = None) -> Any:
        """The sum of the known values; None when there are none (no sample is not 0)."""
        vals = self.values(col, rows)
        return sum(vals) if vals else None

    def count(self, col: str, rows: list[dict[str, Any]] | None = None, equal: Any = None) -> int:
        """Rows whose `col` is true, or equals `equal` when that is given."""
        rows = self.rows if rows is None else rows
        if equal is None:
            return sum(1 for r in rows if r.get(col))
        return sum(1 for r in rows if r.get(col) == equal)

    def share(self, col: str, rows: list[dict[str, Any]]) -> float | None:
        """Share of `rows` whose `col` is true, 3 decimals; None without rows."""
        return rounded(sum(r[col] for r in rows) / len(rows), 3) if rows else None


@dataclass(frozen=True)
class Summary:
    """One summary.json value of a figure: at the dotted `key`, `stat` in words (for the docs), computed by
    `of` (None: written by the run itself, not by `summarize`); `at` orders summary.json."""

    key: str
    stat: str
    of: Callable[[SummaryData], Any] | None
    at: int


def rounded(x: float | None, nd: int = 1) -> float | None:
    return None if x is None else round(x, nd)


def mean_p95(s: SummaryData, col: str) -> dict[str, Any]:
    vals = s.values(col)
    return {"mean": rounded(sum(vals) / len(vals), 3) if vals else None, "p95": rounded(s.percentile(vals, 95), 3),
            "n": len(vals)}


def engine_totals(s: SummaryData) -> tuple[int, int, float]:
    """(tokens, forwards, engine seconds) over the finished generations of turns with an engine time."""
    by_turn = {(r["call_id"], r["turn"]): r for r in s.rows}
    tokens = forwards = 0
    seconds = 0.0
    for e in s.events:
        if e.kind != K.ENGINE_DONE or e.payload.get("cancelled"):
            continue
        r = by_turn.get((e.call_id, e.turn))
        n = e.payload.get("tokens")
        if r is None or r["engine_ms"] is None or not n:
            continue
        tokens += int(n)
        seconds += r["engine_ms"] / 1000.0
        forwards += int(e.payload.get("forwards") or 0)
    return tokens, forwards, seconds


def tokens_per_s(s: SummaryData) -> float | None:
    tokens, _, seconds = engine_totals(s)
    return rounded(tokens / seconds, 2) if tokens and seconds > 0 else None


def forwards_per_token(s: SummaryData) -> float | None:
    tokens, forwards, _ = engine_totals(s)
    return rounded(forwards / tokens, 3) if tokens and forwards else None


def tool_calls_by_outcome(s: SummaryData) -> dict[str, int]:
    """tool_call rows by outcome (voicelab.rules.tool_reason); a row without one (older runs) was executed."""
    outcomes = [e.payload.get("outcome", "executed") for e in s.events if e.kind == K.TOOL_CALL]
    return {"executed": outcomes.count("executed"), "confirmed": outcomes.count("confirmed"),
            "refused": outcomes.count("refused")}


def unreliable_readings(s: SummaryData) -> dict[str, Any] | None:
    """Turn ends decided on a reading the recogniser-reliability test rejects, by reason (None without
    turn_decision rows: a turn rule other than `decide`)."""
    decisions = [e for e in s.events if e.kind == K.TURN_DECISION]
    if not decisions:
        return None
    reasons = [e.payload.get("unreliable_reason") or "avg_logprob" for e in decisions
               if e.payload.get("words_reliable") is False]
    return {"n": len(reasons), "of": len(decisions), "by_reason": {r: reasons.count(r) for r in sorted(set(reasons))}}


def truth_p95(s: SummaryData, key: str) -> float | None:
    """p95 of |event figure - WAV figure| over the turns both measured."""
    if s.truth is None:
        return None
    ours = {(r["call_id"], r["turn"]): r.get(key) for r in s.rows}
    diffs = []
    for t in s.truth:
        mine = ours.get((t.get("call_id"), t.get("turn")))
        if mine is not None and t.get(key) is not None:
            diffs.append(abs(mine - float(t[key])))
    return rounded(s.percentile(diffs, 95))


def audible_per_100_words(s: SummaryData) -> float | None:
    audible = s.total("audible", s.known("churn"))
    spoken = sum(r["spoken_words"] for r in s.rows)
    return rounded(100.0 * audible / spoken, 3) if audible is not None and spoken > 0 else None


def expectation_checks(s: SummaryData, passed: bool) -> int | None:
    """Checks passed (or checked) over the turns' `expectations` cells; None when no turn had one."""
    cells = s.values("expectations")
    if not cells:
        return None
    return sum(tally(c)[0 if passed else 1] for c in cells)


def slots_read_rows(s: SummaryData) -> list[dict[str, Any]]:
    return [r for r in s.known("answer_correct") if r.get("slots_read")]
