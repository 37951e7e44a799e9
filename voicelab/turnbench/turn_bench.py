"""`voicelab bench turns`: collect the cases, fill the score cache, replay the strategies, read the curves.

The heavy half (synthesis, Silero, smart-turn, Whisper, the decision model) runs once per case and is cached
(`voicelab.turnbench.scores`); the bench proper replays the strategies on the cached scores
(`voicelab.turnbench.replay`) and reads the curves (`voicelab.turnbench.curve`).
"""

from __future__ import annotations

import argparse
import importlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from engines.errors import CheckpointError
from voicelab.fixtures.format import FIXTURES_ROOT, discover, list_names, select
from voicelab.pipeline.config import PipelineConfig
from voicelab.turnbench import curve as cv
from voicelab.turnbench import eot
from voicelab.turnbench.anchors import CUTOFF_RATE as ANCHOR_RATE
from voicelab.turnbench.anchors import EOT_BENCH_AT_5, SOURCE, reference_rows
from voicelab.turnbench.audio import CaseAudio, fixture_cases, render_barge, render_turn, spec_key
from voicelab.turnbench.bargein import replay_barge, summarise
from voicelab.turnbench.cases import CACHE_ROOT, BargeCase, TurnCase, load_corpus
from voicelab.turnbench.ceiling import ceiling_report
from voicelab.turnbench.replay import (
    Point,
    Strategy,
    Trace,
    builtin_strategies,
    horizons,
    score_points,
    trace_of,
)

GROUPS = ("generated", "human", "human-calls", "human-read", "bundled", "real", "user")
# the groups read as curves: bootstrap intervals, `--json` rows, a panel of the plot (the others: shipped settings)
MAIN_GROUPS = ("generated", "user", "human", "human-calls", "human-read")


class TurnBenchError(Exception):
    """A bad option or an unusable case; the message says which."""


@dataclass
class CaseRef:
    """A case not yet loaded: its cache key and how to make its audio on a cache miss."""

    id: str
    group: str
    key: str
    kind: str  # "turn" or "barge"
    make: Callable[[], CaseAudio]
    points: list[Point] | None = None  # fixture cases: points found now (not the cached ones)
    meta: dict[str, Any] = field(default_factory=dict)


def generated_refs(limit: int | None = None, barge: bool = True) -> list[CaseRef]:
    turns, barges = load_corpus()
    if limit is not None:
        turns = turns[:limit]
        barges = barges[: max(1, limit // 4)] if barge else []

    def turn(c: TurnCase) -> CaseRef:
        return CaseRef(c.id, "generated", spec_key(c), "turn", lambda: render_turn(c))

    def bc(c: BargeCase) -> CaseRef:
        return CaseRef(c.id, "generated", spec_key(c), "barge", lambda: render_barge(c))

    return [turn(c) for c in turns] + ([bc(c) for c in barges] if barge else [])


def fixture_refs(paths: Sequence[Path], group_of: dict[str, str], default_group: str) -> list[CaseRef]:
    """The cases of fixtures given as fixture folders, fixture.json files or folders of fixtures."""
    turns, barges = fixture_cases(discover(list(paths)), group_of, default_group)
    out = []
    for kind, cases in (("turn", turns), ("barge", barges)):
        for c in cases:
            out.append(CaseRef(c.id, c.group, c.key, kind, (lambda c=c: c), list(c.points), dict(c.meta)))
    return out


def bundled_refs() -> list[CaseRef]:
    """Every bundled fixture: the real recordings (`real.txt`) as group "real", the rest "bundled"."""
    real = set(list_names("real", FIXTURES_ROOT))
    paths = select(["all"])
    return fixture_refs(paths, {n: "real" for n in real}, "bundled")


def human_refs() -> list[CaseRef]:
    """The real human speech, where the human set holds it: meeting turns ("human", `voicelab.turnbench.meetings`),
    phone-call turns ("human-calls", `voicelab.turnbench.phone_calls`), read utterances ("human-read",
    `voicelab.turnbench.read_speech`) and real backchannels and interruptions (barge-in cases of "human",
    `voicelab.turnbench.human_barge`)."""
    from voicelab.turnbench import human_barge, meetings, phone_calls, read_speech

    cases: list[CaseAudio] = []
    barge: list[CaseAudio] = []
    try:
        if (meetings.MEETINGS_DIR / meetings.LABELS_FILE).is_file():
            cases += meetings.load_cases()
        if (phone_calls.CALLS_DIR / meetings.LABELS_FILE).is_file():
            cases += phone_calls.load()
        cases += read_speech.load_cases()
        if (human_barge.BARGE_DIR / human_barge.LABELS_FILE).is_file():
            barge = human_barge.load_cases(human_barge.BARGE_DIR)
    except (meetings.MeetingsError, phone_calls.PhoneCallsError, read_speech.ReadSpeechError,
            human_barge.BargeSetError) as e:
        raise TurnBenchError(str(e)) from None
    return [CaseRef(c.id, c.group, c.key, kind, (lambda c=c: c), list(c.points), dict(c.meta))
            for kind, group in (("turn", cases), ("barge", barge)) for c in group]


BENCH_GROUPS = ("generated", "human", "human-calls", "human-read", "bundled", "real")  # what `--group NAME` may name


def refs_for(group: str | None = None, limit: int | None = None) -> list[CaseRef]:
    """The cases `voicelab bench turns` benches by default (every group whose cases are here), or one group's."""
    if group is not None and group not in BENCH_GROUPS:
        raise TurnBenchError(f"--group {group!r}: expected one of {', '.join(BENCH_GROUPS)}")
    if group in (None, "bundled", "real"):
        fx = [r for r in bundled_refs() if group is None or r.group == group]
    else:
        fx = []
    human = ([r for r in human_refs() if group is None or r.group == group]
             if group in (None, "human", "human-calls", "human-read") else [])
    gen = generated_refs(limit) if group is None else generated_refs(limit, barge=False) if group == "generated" else []
    if group is not None and not fx + human + gen:
        raise TurnBenchError(f"--group {group}: no cases here (its audio is not in audio_fixtures/)")
    return fx + human + gen


def load_scores(refs: Sequence[CaseRef], cache: Path, threads: int = 2,
                progress: Callable[[str], None] | None = None, decision: Path | None = None) -> list[dict[str, Any]]:
    """The cached scores of every case (computing the missing ones), with the decision model's verdicts on the
    cached readings asked of the shipped model, or of the model in `decision` (`scores.rescore_words`)."""
    # the heavy half: pipecat, onnxruntime, torch
    from voicelab.turnbench.eot_scores import Models, cached, cached_listen, rescore_words

    models = Models(threads)
    out = []
    t0 = time.monotonic()
    for i, r in enumerate(refs):
        doc = cached(cache, r.key, r.kind, models, r.make)
        if r.kind == "turn":  # `--turn listen`'s scores through each silence (cached on their own)
            doc["listen"] = cached_listen(cache, r.key, models, r.make, doc["starts"], [s["t_s"] for s in doc["stops"]])
        if r.points is not None:
            doc["points"] = [p.__dict__ for p in r.points]
            doc["meta"] = r.meta
        doc["group"], doc["id"], doc["kind"] = r.group, r.id, r.kind
        out.append(doc)
        if progress is not None and (i + 1) % 25 == 0:
            progress(f"{i + 1}/{len(refs)} cases scored ({time.monotonic() - t0:.0f} s)")
    # the decision model's verdicts are asked anew on every load (a few ms a reading): the cache keeps the
    # readings, so a retrained model is benched without a cache fill and a stale verdict is never read
    try:
        rescore_words(out, decision)
    except (CheckpointError, OSError, ValueError) as e:
        raise TurnBenchError(f"--decision {decision}: {e}") from None
    return out


def main() -> None:  # pragma: no cover - fills the cache from the command line (a background job)
    ap = argparse.ArgumentParser(description="fill the turn bench's score cache")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--cache", type=Path, default=CACHE_ROOT)
    a = ap.parse_args()
    refs = bundled_refs() + human_refs() + generated_refs(a.limit)
    load_scores(refs, a.cache, progress=lambda s: print(s, flush=True))
    print("done", flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()


# ---- the bench proper: strategies over cached scores ------------------------------------------------------

def load_strategy(spec: str) -> Strategy:
    """A user strategy by import path, `module:attribute` (an object with `name`, `knob`, `values`, `default`
    and `declarations(trace, value, passes)`, or a callable returning one)."""
    mod_name, _, attr = spec.partition(":")
    if not mod_name or not attr:
        raise TurnBenchError(f"--strategy {spec!r}: expected MODULE:ATTRIBUTE")
    try:
        obj = getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError) as e:
        raise TurnBenchError(f"--strategy {spec!r}: {e}") from None
    if isinstance(obj, type) or (not hasattr(obj, "declarations") and callable(obj)):
        obj = obj()  # a class, or a factory: the strategy is what it makes
    for need in ("name", "knob", "values", "default", "declarations"):
        if not hasattr(obj, need):
            raise TurnBenchError(f"--strategy {spec!r}: the strategy has no `{need}`")
    return obj  # type: ignore[no-any-return]


def all_strategies(extra: Sequence[str] = ()) -> list[Strategy]:
    """Every turn-end kind's replays (`voicelab.rules.turn_kinds.TURN_KINDS`: timeout, smart, decide and
    decide+early, the early final re-measured) and the user's."""
    return [*builtin_strategies(), *(load_strategy(s) for s in extra)]


@dataclass
class Matrices:
    """One strategy over one group of traces: cut (K, P) and dead air (K, E), without and with pass times."""

    values: list[float]
    cut: dict[bool, np.ndarray]
    dead: dict[bool, np.ndarray]
    premature: dict[bool, np.ndarray]  # (K,) end points declared before the true end


def sweep(strategy: Strategy, traces: Sequence[Trace]) -> Matrices:
    values = [float(v) for v in strategy.values]
    hz = [horizons(t) for t in traces]
    cut: dict[bool, np.ndarray] = {}
    dead: dict[bool, np.ndarray] = {}
    pre: dict[bool, np.ndarray] = {}
    for passes in (False, True):
        rows_c, rows_d, rows_p = [], [], []
        for v in values:
            c: list[bool] = []
            d: list[float] = []
            n_pre = 0
            for t, h in zip(traces, hz, strict=True):
                o = score_points(t, strategy.declarations(t, v, passes), h)
                c.extend(o.cut)
                d.extend(o.dead_ms)
                n_pre += o.premature
            rows_c.append(c)
            rows_d.append(d)
            rows_p.append(n_pre)
        cut[passes] = np.asarray(rows_c, dtype=bool).reshape(len(values), -1)
        dead[passes] = np.asarray(rows_d, dtype=float).reshape(len(values), -1)
        pre[passes] = np.asarray(rows_p)
    return Matrices(values, cut, dead, pre)


def _at_value(m: Matrices, value: float, passes: bool) -> dict[str, Any]:
    """The strategy at one setting: false cut-offs (count, rate, Wilson interval) and dead air."""
    k = int(np.argmin([abs(v - value) for v in m.values]))
    cut, dead = m.cut[passes][k], m.dead[passes][k]
    ci = cv.wilson(int(cut.sum()), cut.size)
    return {"value": m.values[k], "pauses": int(cut.size), "false_cutoffs": int(cut.sum()),
            "false_cutoff_rate": None if not cut.size else round(float(cut.mean()), 4),
            "false_cutoff_ci": None if ci is None else [round(ci[0], 4), round(ci[1], 4)],
            "ends": int(dead.size), "premature_ends": int(m.premature[passes][k]),
            "dead_air_p50_ms": cv._r(float(np.percentile(dead, 50))) if dead.size else None,
            "dead_air_p95_ms": cv._r(float(np.percentile(dead, 95))) if dead.size else None}


def group_report(strategy: Strategy, m: Matrices, resamples: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for passes, label in ((False, "passes_removed"), (True, "passes_added")):
        c = cv.curve(m.values, m.cut[passes], m.dead[passes])
        f = cv.figures(c)
        if resamples:
            f |= cv.bootstrap(m.values, m.cut[passes], m.dead[passes], resamples=resamples)
        f["at_default"] = _at_value(m, strategy.default, passes)
        f["curve"] = [{"value": v, "false_cutoff_rate": round(float(r), 4),
                       "dead_air_p50_ms": cv._r(float(a)), "dead_air_p95_ms": cv._r(float(b))}
                      for v, r, a, b in zip(m.values, c.rate, c.p50, c.p95, strict=True)]
        out[label] = f
    return out


def run_bench(docs: Sequence[dict[str, Any]], strategies: Sequence[Strategy], *, resamples: int = 1000,
              progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every strategy on every group of turn cases, and the barge-in cases: the bench's whole result.

    A case in which the default VAD never starts (far-field or quiet speech it does not hear) opens no turn, so no
    turn-end rule can act on it: such cases are counted per group (`vad_unheard`) and left out of the curves,
    where they would add a never-ended turn to every strategy alike."""
    every = [trace_of(d) for d in docs if d["kind"] == "turn"]
    traces = [t for t in every if t.starts]
    groups = [g for g in GROUPS if any(t.group == g for t in traces)]
    result: dict[str, Any] = {"groups": {}, "strategies": [], "barge_in": {}}
    for g in groups:
        ts = [t for t in traces if t.group == g]
        result["groups"][g] = {"cases": len(ts), "pauses": sum(p.kind == "pause" for t in ts for p in t.points),
                               "ends": sum(p.kind == "end" for t in ts for p in t.points),
                               "vad_unheard": sum(1 for t in every if t.group == g and not t.starts)}
    matrices: dict[tuple[str, str], Matrices] = {}
    for s in strategies:
        t0 = time.monotonic()
        entry: dict[str, Any] = {"strategy": s.name, "knob": s.knob, "default": s.default, "groups": {}}
        for g in groups:
            m = sweep(s, [t for t in traces if t.group == g])
            matrices[(s.name, g)] = m
            entry["groups"][g] = group_report(s, m, resamples if g in MAIN_GROUPS else 0)
        result["strategies"].append(entry)
        if progress is not None:
            progress(f"{s.name}: swept {len(s.values)} settings in {time.monotonic() - t0:.1f} s")
    result["ratios"] = shipped_ratios(matrices, [g for g in groups if g in MAIN_GROUPS], resamples,
                                      {s.name: float(s.default) for s in strategies})
    barge = [d for d in docs if d["kind"] == "barge"]
    outcomes = {passes: [replay_barge(d, passes=passes) for d in barge] for passes in (False, True)}
    for g in sorted({d["group"] for d in barge}):
        result["barge_in"][g] = summarise([o for o in outcomes[True] if o.group == g])
    result["barge_in_cases"] = [o.__dict__ for o in outcomes[True]]
    # what no rule that cannot hear hesitation can beat on the generated corpus (voicelab.turnbench.ceiling)
    result["words_ceiling"] = ceiling_report([t for t in traces if t.group == "generated"])
    result["_matrices"] = matrices
    return result




def shipped_kind() -> str:
    """The turn-end kind `voicelab run` ships: the pipeline configuration's default `--turn` (its one home)."""
    return PipelineConfig().turn_spec().kind


SHIPPED = shipped_kind()  # read from the configuration, never written here
BASELINES = ("timeout", "smart")  # silence only, and pipecat's default (smart-turn)
RATIO_LEVEL = 0.05  # eot-bench's headline reading: dead air at 5 % false cut-offs


def shipped_ratios(matrices: dict[tuple[str, str], Matrices], groups: Sequence[str], resamples: int,
                   defaults: dict[str, float]) -> dict[str, list[dict[str, Any]]]:
    """Per group: the shipped rule's median dead air at 5 % false cut-offs over each baseline's, on the same
    points (pass times removed, as eot-bench reads its figures), with a paired bootstrap interval; and
    (`at_shipped_setting`) the shipped rule at its shipped setting over the baseline set to the same false
    cut-off rate (`defaults`: each strategy's shipped knob value)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for g in groups:
        if (SHIPPED, g) not in matrices:
            continue
        a = matrices[(SHIPPED, g)]
        ma = (a.values, a.cut[False], a.dead[False])
        rows = []
        for base in BASELINES:
            if (base, g) not in matrices:
                continue
            b = matrices[(base, g)]
            mb = (b.values, b.cut[False], b.dead[False])
            r = cv.paired_ratio(ma, mb, RATIO_LEVEL, resamples=resamples)
            # and at the shipped rule's own operating point: the baseline set to the same false cut-off rate
            rows.append({"of": SHIPPED, "over": base, **r,
                         "at_shipped_setting": cv.matched_ratio(ma, defaults[SHIPPED], mb, resamples=resamples)})
        out[g] = rows
    return out


def summary_groups(result: dict[str, Any]) -> list[str]:
    """The groups given as curves in this result: the main groups present (else the first group)."""
    gs = [g for g in MAIN_GROUPS if g in result["groups"]]
    return gs or list(result["groups"])[:1]


EOT_LEVELS = (0.05, 0.10)  # eot-bench's operating points, read on the pipeline's curves too
EOT_DELAYS_MS = (300, 600)


def pipeline_points(entry: dict[str, Any], rep: dict[str, Any]) -> dict[str, Any]:
    """eot-bench's four operating points read off one pipeline-mode curve (pass times removed), with the knob
    value reaching each: dead air (median) at 5 % and 10 % false cut-offs, false cut-offs at 300 and 600 ms."""
    pts = [(p["value"], p["false_cutoff_rate"], p["dead_air_p50_ms"]) for p in rep["curve"]]
    setting: dict[str, dict[str, Any] | None] = {}
    latency: dict[str, float | None] = {}
    for lv in EOT_LEVELS:
        key = cv.level_key(lv)
        latency[key] = rep["dead_air_p50_ms_at"].get(key)
        v = rep["knob_at"].get(key)
        setting[key] = None if v is None else {entry["knob"]: v}
    cut: dict[str, float | None] = {}
    for ms in EOT_DELAYS_MS:
        ok = [(r, v) for v, r, d in pts if d is not None and d <= ms]
        best = min(ok, key=lambda x: x[0]) if ok else None
        cut[str(ms)] = None if best is None else best[0]
        setting[str(ms)] = None if best is None else {entry["knob"]: best[1]}
    return {"mode": "pipeline", "latency_stat": "median", "latency_ms_at": latency, "false_cutoffs_at_ms": cut,
            "setting": setting, "default": entry["strategy"] == SHIPPED}


def json_summary(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The `--json` list: per main group present (generated, human, human-calls, human-read; yours with `--fixtures`), one
    object per strategy with that group's figures, pass times removed."""
    out = []
    for g in summary_groups(result):
        grp = result["groups"][g]
        for e in result["strategies"]:
            rep = e["groups"][g]["passes_removed"]
            out.append({"strategy": e["strategy"], "knob": e["knob"], "group": g, **pipeline_points(e, rep),
                        "cases": grp["pauses"] + grp["ends"], "pauses": grp["pauses"], "ends": grp["ends"],
                        "dead_air_p50_ms_at": rep["dead_air_p50_ms_at"],
                        "dead_air_p95_ms_at": rep["dead_air_p95_ms_at"],
                        "false_cutoffs_at": rep["false_cutoffs_at"], "knob_at": rep["knob_at"],
                        "dead_air_p50_ms_ci_at": rep.get("dead_air_p50_ms_ci_at"),
                        "false_cutoffs_ci_at": rep.get("false_cutoffs_ci_at"),
                        "at_default": rep["at_default"],
                        "with_passes": {k: e["groups"][g]["passes_added"][k]
                                        for k in ("dead_air_p50_ms_at", "dead_air_p95_ms_at", "false_cutoffs_at",
                                                  "at_default")},
                        "other_groups": {og: {"at_default": e["groups"][og]["passes_removed"]["at_default"]}
                                         for og in e["groups"] if og not in MAIN_GROUPS}})
    return out


def plot(result: dict[str, Any], path: Path) -> None:
    """The curves: dead air (median) against false cut-offs, one line per strategy, pass times removed (solid)
    and added (dashed); one panel per main group present (generated, human, human-calls, human-read), side by side; eot-bench's
    published 5 % points for reference."""
    groups = summary_groups(result)
    fig = Figure(figsize=(8 * max(1, len(groups)), 5.5))  # the object API: no pyplot state, no display backend
    axes = fig.subplots(1, max(1, len(groups)), squeeze=False)[0]
    for ax, g in zip(axes, groups, strict=False):
        _panel(ax, result, g)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _panel(ax: Any, result: dict[str, Any], g: str) -> None:
    for i, e in enumerate(result["strategies"]):
        color = f"C{i}"
        for label, style in (("passes_removed", "-"), ("passes_added", "--")):
            pts = [(p["false_cutoff_rate"] * 100, p["dead_air_p50_ms"]) for p in e["groups"][g][label]["curve"]
                   if p["dead_air_p50_ms"] is not None]
            pts.sort()
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.step(xs, ys, style, color=color, where="post",
                        label=f"{e['strategy']} ({'pass times removed' if style == '-' else 'added, this machine'})")
        d = e["groups"][g]["passes_removed"]["at_default"]
        if d["false_cutoff_rate"] is not None and d["dead_air_p50_ms"] is not None:
            ax.plot([d["false_cutoff_rate"] * 100], [d["dead_air_p50_ms"]], "o", color=color)
    ceiling = result.get("words_ceiling")
    if ceiling is not None and g == "generated":
        pts = sorted((p["false_cutoff_rate"] * 100, p["dead_air_p50_ms"]) for p in ceiling["curve"])
        xs, ys = zip(*pts, strict=True)
        ax.step(xs, ys, ":", color="black", where="post", label="words ceiling (perfect words, no hesitation cue)")
    for i, a in enumerate(EOT_BENCH_AT_5):
        ax.plot([ANCHOR_RATE * 100], [a.dead_air_ms], "x", color="grey")
        ax.annotate(f"eot-bench: {a.name}", (ANCHOR_RATE * 100, a.dead_air_ms), textcoords="offset points",
                    xytext=(4, 2) if i % 2 == 0 else (-4, 2), ha="left" if i % 2 == 0 else "right",
                    fontsize=7, color="grey")
    ax.set_xlabel("false cut-offs (% of mid-turn pauses)")
    ax.set_ylabel("dead air after the true end of speech, median (ms)")
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 3500)
    ax.grid(alpha=0.3)
    ax.set_title(f"voicelab bench turns: {g} ({result['groups'].get(g, {}).get('pauses', 0)} pauses, "
                 f"{result['groups'].get(g, {}).get('ends', 0)} ends); dots: shipped settings", fontsize=9)
    ax.legend(fontsize=7)


PLOT_SUFFIXES = (".png", ".svg")


def curve_names(result: dict[str, Any]) -> list[str]:
    """The strategies benched in `result`, in order: the names `--curve` may give."""
    return [e["strategy"] for e in result["strategies"]]


def plot_curves(result: dict[str, Any], path: Path, curves: Sequence[str] | None = None,
                group: str | None = None) -> list[str]:
    """`--plot PATH`: the chosen strategies' curves on one group (pass times removed), a line at 5 % false
    cut-offs with each curve's dead air there (`dead_air_p50_ms_at["5%"]`, as the tables read it), the words
    ceiling where the bench computed it for the group, and eot-bench's published 5 % points as labelled
    orientation. Returns the legend's labels, in order."""
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise TurnBenchError(f"--plot {path}: expected a .png or .svg file")
    names = curve_names(result)
    chosen = list(dict.fromkeys(curves)) if curves else names
    unknown = [c for c in chosen if c not in names]
    if unknown:
        raise TurnBenchError(f"--curve {unknown[0]!r}: not a strategy benched here ({', '.join(names)})")
    g = group if group is not None else summary_groups(result)[0]
    if g not in result["groups"]:
        raise TurnBenchError(f"--plot: group {g!r} was not benched")
    level = cv.level_key(ANCHOR_RATE)
    x5 = ANCHOR_RATE * 100
    fig = Figure(figsize=(8, 6))  # the object API: no pyplot state, no display backend
    ax = fig.subplots()
    ax.axvline(x5, color="grey", lw=0.8, ls="--", label=f"{x5:.0f} % false cut-offs")
    tops = [3500.0]
    by_name = {e["strategy"]: e for e in result["strategies"]}
    for name in chosen:
        e = by_name[name]
        color = f"C{names.index(name)}"
        rep = e["groups"][g]["passes_removed"]
        pts = sorted((p["false_cutoff_rate"] * 100, p["dead_air_p50_ms"]) for p in rep["curve"]
                     if p["dead_air_p50_ms"] is not None)
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.step(xs, ys, "-", color=color, where="post", label=f"{name} ({e['knob']} swept)")
        at5 = rep["dead_air_p50_ms_at"][level]
        if at5 is None:
            ax.plot([], [], "o", color=color, label=f"{name}: no setting reaches {x5:.0f} %")
        else:
            ax.plot([x5], [at5], "o", color=color, ms=7, label=f"{name} at {x5:.0f} %: {fmt_ms(at5)} ms")
            tops.append(at5)
    ceiling = result.get("words_ceiling")
    if ceiling is not None and g == "generated":
        pts = sorted((p["false_cutoff_rate"] * 100, p["dead_air_p50_ms"]) for p in ceiling["curve"])
        xs, ys = zip(*pts, strict=True)
        at5 = ceiling["dead_air_p50_ms_at"][level]
        ax.step(xs, ys, ":", color="black", where="post",
                label="words ceiling (perfect words, no hesitation cue)"
                      + ("" if at5 is None else f": {fmt_ms(at5)} ms at {x5:.0f} %"))
        if at5 is not None:
            ax.plot([x5], [at5], "s", color="black", ms=5)
    else:
        ax.plot([], [], " ", label=f"words ceiling: not computed for {g} (generated corpus only)")
    for i, a in enumerate(EOT_BENCH_AT_5):
        ax.plot([x5], [a.dead_air_ms], "x", color="grey", ms=6)
        ax.annotate(a.name, (x5, a.dead_air_ms), textcoords="offset points", fontsize=7, color="dimgrey",
                    xytext=(5, 0) if i % 2 == 0 else (-5, 0), ha="left" if i % 2 == 0 else "right", va="center")
        tops.append(a.dead_air_ms)
        ax.plot([], [], "x", color="grey", label=f"eot-bench: {a.name}, {a.dead_air_ms:.0f} ms at {x5:.0f} %")
    ax.plot([], [], " ", label=f"x: {SOURCE};\nanother dataset (eot-bench's own calls): orientation,\n"
                               "not a comparison on the same data")
    ax.set_xlabel("false cut-offs (% of mid-turn pauses)")
    ax.set_ylabel("dead air after the true end of speech, median (ms)")
    ax.set_xlim(0, 25)
    ax.set_ylim(0, min(max(tops) * 1.1, 6000))  # a point above it is still in the legend, with its figure
    ax.grid(alpha=0.3)
    grp = result["groups"][g]
    ax.set_title(f"voicelab bench turns: {g} ({grp['pauses']} pauses, {grp['ends']} ends); "
                 "model pass times removed", fontsize=9)
    legend = ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return [t.get_text() for t in legend.get_texts()]


def strip_private(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if not k.startswith("_")}


def fmt_ms(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0f}"


# ---- the eot mode: every labelled silence scored every 100 ms (voicelab.turnbench.eot) ---------------------

MODES = ("pipeline", "eot")
EOT_GROUPS = ("human-calls", "human", "human-read")  # the eot mode's default: the labelled recordings of people
HUMAN_DATASET = "voicelab human set"


def eot_refs(group: str | None) -> list[CaseRef]:
    """The eot mode's cases: one group's, or the human groups present."""
    if group is not None:
        return [r for r in refs_for(group, None) if r.kind == "turn"]
    return [r for r in human_refs() if r.kind == "turn" and r.group in EOT_GROUPS]


def run_eot(refs: Sequence[CaseRef], cache: Path, *, threads: int = 2, resamples: int = 1000, dataset: str,
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The eot mode's whole result: per group, smart-turn's three-knob sweep and silence only on the same
    labelled silences (`rows`), what listening through the silence cost (`cpu`), eot-bench's published English
    figures (`reference`)."""
    from voicelab.turnbench.eot_scores import score_refs  # pipecat, onnxruntime

    cases = score_refs(refs, cache, threads, progress)
    result = eot.eot_result(cases, shipped=SHIPPED, resamples=resamples, dataset=dataset)
    result["groups"] = {g: {"cases": sum(c.group == g for c in cases),
                            "pauses": sum(sp.label == "hold" for c in cases if c.group == g for sp in c.spans),
                            "ends": sum(sp.label == "eot" for c in cases if c.group == g for sp in c.spans)}
                        for g in dict.fromkeys(c.group for c in cases)}
    result["reference"] = reference_rows()
    result["shipped"] = SHIPPED
    result["grid"] = {"step_ms": eot.STEP_MS, "thresholds": [eot.THRESHOLDS[0], eot.THRESHOLDS[-1], 0.01],
                      "action_delays_ms": list(eot.ACTION_DELAYS_MS), "timeouts_ms": list(eot.TIMEOUTS_MS),
                      "silence_only_ms": [eot.SILENCE_MS[0], eot.SILENCE_MS[-1], eot.STEP_MS]}
    return result
