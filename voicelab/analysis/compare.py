"""`voicelab compare`: is run B better, worse, or not detectably different from run A, figure by figure?

For each figure the catalogue marks for comparison (`voicelab.measure.figures`, its `Paired` views: FAR p50/p95,
stop latency p50/p95, recovery p50, first token to audio p50/p95 and answer accuracy where the turns carry them,
audible revisions per turn) the difference B - A comes with a
bootstrap 95 % interval (`voicelab.measure.intervals.diff_interval`). When both runs played the same fixture
turns the same number of times (the same list, the same `--repeat`), the samples are paired by (fixture name,
turn index, repetition) and resampled together, which removes the spread between turns from the
difference (turns measured in one run only are left out, if they are under a fifth of either run);
otherwise each run is resampled on its own. The verdict: "better" or "worse" when the interval
excludes zero, else "no detectable difference" (or "too few samples" below two per side).

`--fail-on far_p95:+50ms,audible:+0` names regressions a deployment must not ship: a figure fails when the
lower bound of its regression (B - A for lower-is-better figures, A - B for accuracy) exceeds the threshold.

Too short to tell: a 50 ms change of FAR is detected (interval excluding zero) 80 % of the time only when the
interval's half width is under 50 x 1.96 / (1.96 + 0.84) = 35 ms; wider intervals get a note with the
repetitions that would get there (half width shrinks as 1/sqrt(turns)); `benchmarks/repetitions_needed.py`
measures it by resampling real runs.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache, partial
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from voicelab.analysis.agreement import Agreement, agreement, verdicts
from voicelab.analysis.pairing import Key, turn_keys
from voicelab.analysis.report import CSS, _img
from voicelab.analysis.tables import RunData
from voicelab.measure.figure_views import Paired
from voicelab.measure.figures import Live, views
from voicelab.measure.intervals import RESAMPLES, SEED, Difference, diff_interval, mean_stat, quantile_stat

BETTER, WORSE, SAME, FEW = "better", "worse", "no detectable difference", "too few samples"
NOT_MEASURED = "not measured"  # one run cannot see the figure (summary.json `not_measured`: a line run)
DETECT_MS = 50.0  # the change a comparison should be able to see
Z95, Z80 = 1.96, 0.84  # two-sided 95 % confidence; 80 % power
REPEAT_PREFIX = re.compile(r"^r(\d+)-")
# fewest samples per side for a verdict: below these the bootstrap of a percentile difference is too narrow
# (benchmarks/repetitions_needed.py: with 9 turns a side, a third of same-distribution pairs came out
# "different"); the interval is still shown
MIN_N = {"p50": 10, "p95": 20, "mean": 2}
PAIR_SHARE = 0.8


class CompareError(ValueError):
    """A bad --fail-on spec or an unusable run; one line naming what is wrong."""


@dataclass(frozen=True)
class FigureSpec:
    name: str  # the --fail-on key
    label: str
    column: str  # column of the turns table
    stat: str  # "p50", "p95" or "mean"
    unit: str
    higher_is_better: bool = False
    answered_only: bool = False  # FAR: backchannels get no reply
    summary_key: str = ""  # the summary.json key a run lists in `not_measured` when it cannot see it


def figure_specs() -> tuple[FigureSpec, ...]:
    """The compared figures: the figure catalogue's `Paired` views, in their order."""
    return tuple(FigureSpec(p.name, p.label, f.name, p.stat, p.unit, f.better == "higher", p.answered_only,
                            f.summary_key) for f, p in views(Paired))


SPECS: Mapping[str, FigureSpec] = Live(lambda: {f.name: f for f in figure_specs()})


@dataclass(frozen=True)
class FigureDiff:
    spec: FigureSpec
    diff: Difference
    verdict: str

    @property
    def regression_low(self) -> float | None:
        """Lower bound of the regression (positive = worse), in the figure's unit."""
        if self.diff.ci is None:
            return None
        return -self.diff.ci[1] if self.spec.higher_is_better else self.diff.ci[0]


@dataclass
class Comparison:
    a: str  # baseline run id
    b: str
    a_label: str
    b_label: str
    rows: list[FigureDiff] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    expectations: Agreement | None = None  # the turns' expectation verdicts, A against B (None: neither scored)


# ---- samples -----------------------------------------------------------------------------------------------

def _fixture_of(run: RunData, call_id: str) -> str:
    """The fixture a call played (calls/ID.json), else its id without the repetition and index prefixes."""
    meta = run.path / "calls" / f"{call_id}.json"
    if meta.is_file():
        try:
            name = json.loads(meta.read_text(encoding="utf-8")).get("fixture")
        except (OSError, json.JSONDecodeError):
            name = None
        if name:
            return str(name)
    return re.sub(r"^\d+-", "", REPEAT_PREFIX.sub("", call_id))


def fixture_namer(run: RunData) -> Callable[[str], str]:
    """`_fixture_of` for one run, each call's calls/ID.json read once."""
    return cache(partial(_fixture_of, run))


def samples(run: RunData, spec: FigureSpec) -> list[tuple[Key, float]]:
    """(key, value) for every turn with a value of the figure's column, in call order."""
    t = run.turns
    if spec.column not in t.columns:
        return []
    if spec.answered_only:
        t = t[t["expect"].fillna("") != "no_interrupt"]
    have = [(str(c), int(turn), float(v)) for c, turn, v in zip(t["call_id"], t["turn"], t[spec.column], strict=True)
            if not (v is None or (isinstance(v, float) and math.isnan(v)))]
    keys = turn_keys(((c, turn) for c, turn, _ in have), fixture_namer(run))
    return [(k, v) for k, (_, _, v) in zip(keys, have, strict=True)]


def _stat(spec: FigureSpec) -> Any:
    return mean_stat if spec.stat == "mean" else quantile_stat(float(spec.stat[1:]))


def verdict(spec: FigureSpec, d: Difference) -> str:
    if d.ci is None or min(d.n_a, d.n_b) < MIN_N[spec.stat]:
        return FEW
    lo, hi = d.ci
    if lo > 0:
        return BETTER if spec.higher_is_better else WORSE
    if hi < 0:
        return WORSE if spec.higher_is_better else BETTER
    return SAME


def compare_samples(spec: FigureSpec, a: Sequence[tuple[Key, float]], b: Sequence[tuple[Key, float]], *,
                    seed: int = SEED, n_resamples: int = RESAMPLES) -> FigureDiff:
    """One figure: paired on the keys both runs measured when they are at least PAIR_SHARE of each run's
    (a turn timed in one run only, e.g. a reply that never played, is then left out), else unpaired."""
    da, db = dict(a), dict(b)
    shared = set(da) & set(db)
    paired = bool(shared) and len(shared) >= PAIR_SHARE * max(len(a), len(b))
    if paired:
        keys = sorted(shared)
        xa, xb = [da[k] for k in keys], [db[k] for k in keys]
    else:
        xa, xb = [v for _, v in a], [v for _, v in b]
    d = diff_interval(xa, xb, _stat(spec), paired=paired, seed=seed, n_resamples=n_resamples)
    return FigureDiff(spec, d, verdict(spec, d))


def repeats(run: RunData) -> int:
    """How many times the run played its fixture list (config.json `repeat`, else 1)."""
    try:
        return max(1, int(run.config.get("repeat") or 1))
    except (TypeError, ValueError):
        return 1


def needed_halfwidth(change: float = DETECT_MS) -> float:
    """Largest 95 % half width at which a true `change` is detected 80 % of the time (normal approximation)."""
    return change * Z95 / (Z95 + Z80)


def repetitions_for(halfwidth: float, reps: int, change: float = DETECT_MS) -> int:
    """Plays of the list that bring `halfwidth` (measured with `reps` plays) down to `needed_halfwidth`."""
    return max(reps, math.ceil(reps * (halfwidth / needed_halfwidth(change)) ** 2))


def _too_short(rows: Sequence[FigureDiff], reps: int) -> list[str]:
    notes = []
    for r in rows:
        if r.spec.name not in ("far_p50", "far_p95") or r.diff.ci is None:
            continue
        half = (r.diff.ci[1] - r.diff.ci[0]) / 2
        if half > needed_halfwidth():
            notes.append(f"{r.spec.label}: the interval is ±{half:.0f} ms, too wide to detect a {DETECT_MS:.0f} ms "
                         f"change; about {repetitions_for(half, reps)} plays of the list per run would "
                         f"(--repeat; these runs played it {reps}x; see benchmarks/repetitions_needed.py)")
    return notes


def _value(spec: FigureSpec, xs: Sequence[tuple[Key, float]]) -> float | None:
    """The figure over one run's samples (None without any)."""
    if not xs:
        return None
    v = np.asarray([x for _, x in xs], dtype=float)
    return float(v.mean() if spec.stat == "mean" else np.percentile(v, float(spec.stat[1:])))


def not_measured(run: RunData, spec: FigureSpec) -> bool:
    """The run cannot see this figure (a run measured from the line's audio alone lists it in `not_measured`)."""
    return (spec.summary_key or spec.column) in (run.summary.get("not_measured") or ())


def compare_runs(a: RunData, b: RunData, *, seed: int = SEED, n_resamples: int = RESAMPLES) -> Comparison:
    """Every figure both runs measured, B against the baseline A; a figure one of them cannot see is a row
    saying "not measured" (never a difference against an empty side)."""
    c = Comparison(a.run_id, b.run_id, a.label, b.label)
    for spec in figure_specs():
        sa, sb = samples(a, spec), samples(b, spec)
        if not_measured(a, spec) or not_measured(b, spec):
            c.rows.append(FigureDiff(spec, Difference(_value(spec, sa), _value(spec, sb), None, None, False,
                                                      len(sa), len(sb)), NOT_MEASURED))
            continue
        if not sa and not sb:
            continue
        c.rows.append(compare_samples(spec, sa, sb, seed=seed, n_resamples=n_resamples))
    if c.rows and not any(r.diff.paired for r in c.rows):
        c.notes.append("the runs share no fixture turns played alike: differences are unpaired (wider)")
    c.notes += _too_short(c.rows, min(repeats(a), repeats(b)))
    va, vb = (verdicts(r.turns.to_dict("records"), fixture_namer(r)) for r in (a, b))
    c.expectations = agreement(va, vb) if va or vb else None
    return c


# ---- --fail-on ---------------------------------------------------------------------------------------------

_THRESHOLD = re.compile(r"^\s*([a-z0-9_]+)\s*:\s*\+?\s*(-?[0-9]*\.?[0-9]+)\s*(ms|%)?\s*$")


def parse_fail_on(text: str) -> dict[str, float]:
    """'far_p95:+50ms,audible:+0' -> {"far_p95": 50.0, "audible": 0.0}; CompareError naming a bad part."""
    out: dict[str, float] = {}
    specs = {f.name: f for f in figure_specs()}
    for part in text.split(","):
        if not part.strip():
            continue
        m = _THRESHOLD.match(part)
        if m is None:
            raise CompareError(f"--fail-on '{part.strip()}': expected FIGURE:+THRESHOLD, e.g. far_p95:+50ms")
        name, value, unit = m.group(1), float(m.group(2)), m.group(3)
        if name not in specs:
            raise CompareError(f"--fail-on '{part.strip()}': unknown figure '{name}' (one of {', '.join(specs)})")
        if unit == "ms" and specs[name].unit != "ms":
            raise CompareError(f"--fail-on '{part.strip()}': {name} is not in ms")
        out[name] = value / 100.0 if unit == "%" else value
    if not out:
        raise CompareError("--fail-on: no figure given")
    return out


@dataclass(frozen=True)
class FailOnGate:
    """One `--fail-on` gate of one comparison: "pass", "fail" (the regression's interval is beyond the threshold)
    or "undecided" (too few samples, not measured, or measured in neither run: never a pass on no evidence)."""

    a: str  # the baseline's run id
    b: str
    figure: str  # the --fail-on key
    threshold: float
    unit: str
    outcome: str
    reason: str  # one line

    @property
    def name(self) -> str:
        """The gate as written: 'far_p50 +150ms'."""
        return f"{self.figure} +{self.threshold:g}{self.unit}"


def gates(comparisons: Sequence[Comparison], thresholds: Mapping[str, float]) -> list[FailOnGate]:
    """Every gated figure of every comparison, in --fail-on's order."""
    specs = {f.name: f for f in figure_specs()}
    out = []
    for c in comparisons:
        rows = {r.spec.name: r for r in c.rows}
        for name, limit in thresholds.items():
            spec = specs[name]
            r = rows.get(name)
            where = f"{c.b} vs {c.a}: {spec.label}"
            if r is None:
                outcome, reason = "undecided", f"{where}: measured in neither run"
            elif r.verdict in (FEW, NOT_MEASURED) or r.regression_low is None:
                outcome, reason = "undecided", f"{where}: {r.verdict} (n {r.diff.n_a}/{r.diff.n_b})"
            elif r.regression_low > limit:
                outcome = "fail"
                reason = (f"{where} regressed by at least {r.regression_low:.3g}{spec.unit} "
                          f"(threshold +{limit:g}{spec.unit})")
            else:
                outcome = "pass"
                reason = (f"{where}: regression at most {r.regression_low:.3g}{spec.unit} by the interval's "
                          f"lower bound (threshold +{limit:g}{spec.unit}; {r.verdict}, n {r.diff.n_a}/{r.diff.n_b})")
            out.append(FailOnGate(c.a, c.b, name, limit, spec.unit, outcome, reason))
    return out


def regressions(comparisons: Sequence[Comparison], thresholds: Mapping[str, float]) -> list[str]:
    """One line per figure whose regression's lower bound exceeds its threshold."""
    return [g.reason for g in gates(comparisons, thresholds) if g.outcome == "fail"]


def undecided(comparisons: Sequence[Comparison], thresholds: Mapping[str, float]) -> list[str]:
    """One line per gated figure that the runs cannot decide (too few samples, not measured, or measured in
    neither run): a gate that cannot decide must say so rather than pass on no evidence."""
    return [g.reason for g in gates(comparisons, thresholds) if g.outcome == "undecided"]


# ---- output ------------------------------------------------------------------------------------------------

def fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "—"
    return f"{v:.0f}" if unit == "ms" else f"{v:.3g}"


def _signed(v: float, unit: str) -> str:
    return ("+" if v >= 0 else "") + fmt(v, unit)


def row_cells(r: FigureDiff) -> list[str]:
    """figure, A, B, B - A [lo–hi], paired, n, verdict: the terminal table's and the page's columns."""
    d, u = r.diff, r.spec.unit
    ci = "" if d.ci is None else f" [{_signed(d.ci[0], u)}, {_signed(d.ci[1], u)}]"
    delta = "—" if d.diff is None else f"{_signed(d.diff, u)}{ci}"
    if r.verdict == NOT_MEASURED:
        return [r.spec.label, fmt(d.a, u) if d.n_a else NOT_MEASURED, fmt(d.b, u) if d.n_b else NOT_MEASURED,
                "—", "no", f"{d.n_a}/{d.n_b}", r.verdict]
    return [r.spec.label, fmt(d.a, u), fmt(d.b, u), delta, "yes" if d.paired else "no", f"{d.n_a}/{d.n_b}",
            r.verdict]


COLUMNS = ("figure", "A", "B", "B − A [95 % interval]", "paired", "n A/B", "verdict")


def forest_plot(c: Comparison) -> Figure | None:
    """Each millisecond figure's difference with its interval; zero marked; left of zero is B faster."""
    rows = [r for r in c.rows if r.spec.unit == "ms" and r.diff.ci is not None and r.diff.diff is not None]
    if not rows:
        return None
    fig = Figure(figsize=(8, 0.8 + 0.4 * len(rows)))
    ax = fig.subplots()
    y = np.arange(len(rows))
    colors = {BETTER: "#1a7f37", WORSE: "#b42318"}
    for i, r in enumerate(rows):
        lo, hi = r.diff.ci  # type: ignore[misc]
        ax.plot([lo, hi], [i, i], color=colors.get(r.verdict, "#555"), linewidth=3)
        ax.plot([r.diff.diff], [i], "o", color="black")
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(y, [r.spec.label for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("B − A (ms), 95 % interval")
    ax.grid(axis="x", alpha=0.3)
    return fig


def render_html(comparisons: Sequence[Comparison], failures: Sequence[str] = ()) -> str:
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>voicelab compare</title>",
           f"<style>{CSS}</style></head><body><h1>voicelab compare</h1>",
           f"<p class='note'>generated {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}; bootstrap 95 % "
           "intervals of B − A; paired by fixture turn where both runs played the same turns.</p>"]
    cls = {BETTER: "ok", WORSE: "bad"}
    for c in comparisons:
        out.append(f"<h2>{html.escape(c.b_label)} against {html.escape(c.a_label)}</h2>"
                   f"<p class='note'>A = {html.escape(c.a)}, B = {html.escape(c.b)}</p>")
        head = "".join(f"<th>{html.escape(h)}</th>" for h in COLUMNS)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row_cells(r)[:-1])
                       + f"<td class='{cls.get(r.verdict, 'note')}'>{html.escape(r.verdict)}</td></tr>"
                       for r in c.rows)
        out.append(f"<table><tr>{head}</tr>{body}</table>")
        fig = forest_plot(c)
        if fig is not None:
            out.append(_img(fig, f"differences {c.b} vs {c.a}"))
        out += [f"<p class='note'>{html.escape(n)}</p>" for n in c.notes]
    if failures:
        out.append("<h2>--fail-on</h2>" + "".join(f"<p class='bad'>{html.escape(f)}</p>" for f in failures))
    out.append("</body></html>")
    return "\n".join(out)


def write_html(path: str | Path, comparisons: Sequence[Comparison], failures: Sequence[str] = ()) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_html(comparisons, failures), encoding="utf-8")
    return p
