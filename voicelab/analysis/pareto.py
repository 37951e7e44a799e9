"""`voicelab report --decide RUNS...`: which configuration to deploy, on the five axes that decide it.

One row per run folder (a configuration): first audible response (FAR p50 and p95 with their bootstrap 95 %
intervals), output rate (engine tokens per second), price per 1,000 calls (`voicelab.analysis.price`),
answer success (summary.json `answers`, when the run scored its answers), API behaviour (append-only, or
revising: text the engine changed after showing it) and audible defects (revisions heard, per 100 spoken
words). A configuration is on the Pareto front when no other one is at least as good on every axis both
measured and strictly better on one; axes a run did not measure are left out of the comparison for that
pair. Point figures decide the front: two configurations whose intervals overlap may swap places on a rerun,
which `voicelab compare` tells.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from voicelab.analysis.price import price_summary
from voicelab.analysis.report import _runs_at, render
from voicelab.analysis.tables import RunData
from voicelab.measure.intervals import latency_stats

# (field, lower is better) of the axes the Pareto front compares
AXES: tuple[tuple[str, bool], ...] = (("far_p50", True), ("far_p95", True), ("tokens_per_s", False),
                                     ("per_1000_calls_usd", True), ("answer_success", False),
                                     ("audible_per_100_words", True))


@dataclass
class Choice:
    label: str
    run_id: str
    far_p50: float | None
    far_p50_ci: list[float] | None
    far_p95: float | None
    far_p95_ci: list[float] | None
    tokens_per_s: float | None
    per_1000_calls_usd: float | None
    answer_success: float | None
    api: str
    audible_per_100_words: float | None
    pareto: bool = False


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def answer_success(summary: Mapping[str, Any]) -> float | None:
    """Share of answers scored correct. A run's summary.json writes `answers` as {"correct": share, "coherent":
    share, "n": n} (a share in [0, 1], not a count); {"rate": r}, a number, or a count above 1 with its n are
    read too."""
    a = summary.get("answers")
    if isinstance(a, Mapping):
        for key in ("rate", "accuracy", "correct_rate"):
            if _num(a.get(key)) is not None:
                return _num(a.get(key))
        k, n = _num(a.get("correct")), _num(a.get("n") or a.get("scored") or a.get("total"))
        if k is not None and 0 <= k <= 1:
            return k
        return k / n if k is not None and n else None
    return _num(a)


def _output_rate(fig: Mapping[str, Any]) -> float | None:
    """The engine's streaming speed after its first token where the run measured it (HTTP and profile engines),
    else its tokens over its whole generation time (the tiny engines, whose first token is ~5 ms in)."""
    rate = _num(fig.get("output_tokens_per_s_p50"))
    return rate if rate is not None else _num(fig.get("tokens_per_s"))


def api_behaviour(run: RunData) -> str:
    """'revising' when the engine changed text it had shown; 'append-only' when it cannot or did not."""
    rev = run.summary.get("revisions") or {}
    counts = [rev.get(k) for k in ("churn", "post_synthesis", "audible")]
    if any((c or 0) > 0 for c in counts):
        return "revising"
    desc = run.config.get("engine_describe") or {}
    kind = desc.get("kind") if isinstance(desc, Mapping) else None
    sampler = run.config.get("sampler") or run.summary.get("sampler")
    if kind == "autoregressive" or sampler == "autoregressive":
        return "append-only"
    if all(c is None for c in counts):
        return "unknown"
    return "append-only (observed)"  # could revise, did not in this run


def choice(run: RunData) -> Choice:
    s = run.summary
    far = s.get("far_ms") or {}
    if far.get("p50") is not None and "p50_ci" not in far:  # a run summarised before intervals existed
        t = run.turns
        far = latency_stats(list(t[t["expect"].fillna("") != "no_interrupt"]["far_ms"].dropna()))
    price = s.get("price") or price_summary(run.event_list(), run.config or s)
    return Choice(run.label, run.run_id, _num(far.get("p50")), far.get("p50_ci"), _num(far.get("p95")),
                  far.get("p95_ci"), _output_rate(s.get("engine_figures") or {}),
                  _num(price.get("per_1000_calls_usd")), answer_success(s), api_behaviour(run),
                  _num((s.get("revisions") or {}).get("audible_per_100_words")))


def dominates(a: Choice, b: Choice) -> bool:
    """a at least as good as b on every axis both measured, strictly better on one."""
    better = False
    shared = 0
    for name, lower in AXES:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            continue
        shared += 1
        if (x > y) if lower else (x < y):
            return False
        better |= (x < y) if lower else (x > y)
    return shared > 0 and better


def decide(runs: Sequence[RunData]) -> list[Choice]:
    """A choice per run, Pareto front marked, the front first, then by FAR p50."""
    rows = [choice(r) for r in runs]
    for r in rows:
        r.pareto = not any(dominates(o, r) for o in rows if o is not r)
    return sorted(rows, key=lambda c: (not c.pareto, c.far_p50 if c.far_p50 is not None else math.inf))


# ---- output ------------------------------------------------------------------------------------------------

def _ci(v: float | None, ci: list[float] | None) -> str:
    if v is None:
        return "—"
    return f"{v:.0f}" if not ci or ci[0] is None else f"{v:.0f} [{ci[0]:.0f}–{ci[1]:.0f}]"


def _f(v: float | None, nd: int) -> str:
    return "—" if v is None else f"{v:.{nd}f}"


COLUMNS = ("front", "configuration", "FAR p50 ms", "FAR p95 ms", "tokens/s", "$ / 1,000 calls", "answers correct",
           "API", "audible /100 words")


def cells(c: Choice) -> list[str]:
    return ["★" if c.pareto else "", f"{c.label} ({c.run_id})", _ci(c.far_p50, c.far_p50_ci),
            _ci(c.far_p95, c.far_p95_ci), _f(c.tokens_per_s, 0), _f(c.per_1000_calls_usd, 4),
            "—" if c.answer_success is None else f"{100 * c.answer_success:.0f} %", c.api,
            _f(c.audible_per_100_words, 2)]


NOTE = ("★ = Pareto front: no other configuration is at least as good on every axis (FAR p50, p95, output rate, "
        "price, answer success, audible defects) and better on one. Intervals are bootstrap 95 %; overlapping "
        "intervals can swap on a rerun: check with voicelab compare.")


def print_decision(console: Console, rows: Sequence[Choice]) -> None:
    t = Table(title="decision table")
    for name in COLUMNS:
        t.add_column(name, justify="left" if name in ("front", "configuration", "API") else "right")
    for c in rows:
        t.add_row(*cells(c))
    console.print(t)
    console.print(f"[dim]{NOTE}[/dim]")


def render_section(rows: Sequence[Choice]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in cells(c)) + "</tr>" for c in rows)
    return (f"<h2>Decision table</h2><div class='scroll'><table><tr>{head}</tr>{body}</table></div>"
            f"<p class='note'>{html.escape(NOTE)}</p>")


def decision_report(paths: Sequence[str | Path], out: str | Path | None = None,
                    **render_kw: Any) -> tuple[list[Choice], Path]:
    """Load every run at or under `paths`, rank them, and write the report page with the decision section
    (default FIRST_PATH/decision.html). AnalysisError for a path without runs."""
    runs = [r for p in paths for r in _runs_at(Path(p))]
    rows = decide(runs)
    page = render(runs, f"voicelab decision: {len(runs)} configurations", decision=render_section(rows),
                  **render_kw)
    dest = Path(out) if out is not None else Path(paths[0]) / "decision.html"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(page, encoding="utf-8")
    return rows, dest
