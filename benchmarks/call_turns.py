"""Turn-end rules on real human-to-agent calls, from words and silences alone (`voicelab.turnbench.call_timing`).

On the Harper Valley bank calls' labelled pauses and turn ends, each rule is swept over its knob and read as the
turn bench reads its curves (dead air at 1/2/5/10 % false cut-offs, bootstrap intervals over the points):

- `timeout`: silence only, the turn ends after T of silence;
- `decide (words)`: the lab's rule (`voicelab.rules.turn_end`) with only the decision model's verdict on the
  caller's words (no audio here: the table's one-source rows), swept over a scale on its waits, with the
  resumed-pause bound; once with the shipped decision model, once with each `--decision` folder;
- `fitted (words + silence)`: a discrete-time hazard model P(end | logit(text P), ln silence) (the fit of
  `voicelab.turnbench.fusion_fit`), fitted on half of the calls and judged on the other half, both ways round
  (split by call), swept over its operating point, with and without the resumed-pause bound.

Also: each decision model's AUC (its P(complete) at turn ends against at pauses) and the pauses' lengths.

    .venv/bin/python benchmarks/call_turns.py --decision engines/tiny/decision_conversation \
        --json benchmarks/results/call_turns.json --markdown benchmarks/results/call_turns.md
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import voicelab.turnbench.curve as cv  # noqa: E402
from engines.decision.model import load_decision_model  # noqa: E402
from voicelab.measure.intervals import SEED  # noqa: E402
from voicelab.rules.turn_end import TurnThresholds, required_silence_ms  # noqa: E402
from voicelab.rules.turn_fusion import FusedWeighing  # noqa: E402
from voicelab.turnbench.call_timing import (  # noqa: E402
    CALLS_DIR,
    MIN_PAUSE_MS,
    Judged,
    TimedPoint,
    geom,
    hazard_rows,
    judge,
    load_points,
)
from voicelab.turnbench.fusion_fit import Examples, fit  # noqa: E402
from voicelab.turnbench.replay import bounded, scaled  # noqa: E402

ANCHORS_5PCT_MS = {"LiveKit turn detector v1": 543, "smart-turn v3.2": 1051, "VAD only": 1600}  # eot-bench, English
TIMEOUT_DEFAULT_MS = 200.0  # the pipeline's VAD stop (stop_secs 0.2), where `timeout` ends the turn
TIMEOUTS_MS = sorted({*geom(100.0, 10000.0, 90), TIMEOUT_DEFAULT_MS})
SCALES = sorted({*geom(0.05, 20.0, 90), 1.0})
THETAS = [float(x) for x in np.linspace(0.01, 0.99, 99)]
FITTED_CAP_MS = 20000.0


def auc(pos: Sequence[float], neg: Sequence[float]) -> float | None:
    """P(a random end scores above a random pause), ties half (Mann-Whitney)."""
    if not pos or not neg:
        return None
    a, b = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return round(float((a > b).mean() + 0.5 * (a == b).mean()), 4)


def text_ps(folder: Path | None, points: Sequence[TimedPoint]) -> list[float]:
    dm = load_decision_model(folder)
    return dm.p_yes_batch([("turn_complete", p.words, None) for p in points])


def decide_words(points: Sequence[TimedPoint], tp: Sequence[float], name: str, resumed: bool = True) -> Judged:
    by_point = dict(zip(map(id, points), tp, strict=True))
    th = TurnThresholds(resumed_bound=resumed)

    def rule(scale: float, p: TimedPoint) -> float:
        return required_silence_ms(None, by_point[id(p)], scaled(th, scale), p.resumed_ms)[0]

    return judge(name, "scale", SCALES, rule, points)


def _fold(p: TimedPoint, calls: list[str]) -> int:
    return calls.index(p.call) % 2


def fitted_words(points: Sequence[TimedPoint], tp: Sequence[float], resumed: bool) -> tuple[Judged, list[list[float]]]:
    """Fitted on one half of the calls, judged on the other, both ways round (module doc)."""
    calls = sorted({p.call for p in points})
    tps = dict(zip(map(id, points), tp, strict=True))
    weights: list[list[float]] = []
    by_fold: dict[int, FusedWeighing] = {}
    for f in (0, 1):
        train = [p for p in points if _fold(p, calls) != f]
        x2, y = hazard_rows(train, [tps[id(p)] for p in train])
        z = np.zeros((x2.shape[0], 1))
        w = fit(Examples(np.hstack([z, x2[:, :1], z, x2[:, 1:]]), y, 0, 0))
        # the fitted words + silence model as the lab's fused weighing, with no audio term and no cap but theta's
        by_fold[f] = FusedWeighing(bias=float(w[0]), w_audio=0.0, w_text=float(w[2]), w_no_text=0.0,
                                   w_silence=float(w[4]), cap_ms=FITTED_CAP_MS)
        weights.append([round(float(v), 4) for v in w[[0, 2, 4]]])
    cap = TurnThresholds().cap_ms

    def rule(theta: float, p: TimedPoint) -> float:
        # no cap on the fitted wait: theta alone sets how long it may grow, as the scale does for `decide`
        need = by_fold[_fold(p, calls)].at(theta).evidence_silence_ms(None, tps[id(p)])[0]
        return max(need, min(cap, p.resumed_ms)) if resumed else need

    name = "fitted (words + silence)" + ("" if resumed else ", no resumed bound")
    return judge(name, "theta", THETAS, rule, points), weights


def summarise(j: Judged, resamples: int, default: float | None = None) -> dict[str, Any]:
    c = j.curve()
    out = {"strategy": j.name, "knob": j.knob, "pauses": c.n_pauses, "ends": c.n_ends, **cv.figures(c),
           **cv.bootstrap(j.values, j.cut, j.dead_ms, resamples=resamples)}
    if default is not None:  # the shipped setting: its false cut-offs (Wilson interval) and dead air
        k = j.values.index(default)
        cuts = int(j.cut[k].sum())
        ci = cv.wilson(cuts, c.n_pauses)
        out["at_default"] = {"knob": default, "false_cutoffs": round(cuts / c.n_pauses, 4),
                             "false_cutoffs_ci": [round(x, 4) for x in ci] if ci else None,
                             "dead_air_p50_ms": round(float(c.p50[k])), "dead_air_p95_ms": round(float(c.p95[k]))}
    return out


def paired_ratio(a: Judged, b: Judged, level: float, resamples: int, seed: int = SEED) -> dict[str, Any]:
    """a's dead air at `level` false cut-offs over b's, on the same points, with a percentile interval from
    resampling the pauses and the ends once for both (paired)."""
    def ratio(ip: np.ndarray, ie: np.ndarray) -> float | None:
        xa = cv.at_cutoff(cv.curve(a.values, a.cut[:, ip], a.dead_ms[:, ie]), level)[1]
        xb = cv.at_cutoff(cv.curve(b.values, b.cut[:, ip], b.dead_ms[:, ie]), level)[1]
        return None if xa is None or not xb else xa / xb

    n_p, n_e = a.cut.shape[1], a.dead_ms.shape[1]
    point = ratio(np.arange(n_p), np.arange(n_e))
    rng = np.random.default_rng(seed)
    draws = [ratio(rng.integers(0, n_p, n_p), rng.integers(0, n_e, n_e)) for _ in range(resamples)]
    ok = np.array([d for d in draws if d is not None])
    ci = ([round(float(np.percentile(ok, 2.5)), 3), round(float(np.percentile(ok, 97.5)), 3)]
          if ok.size >= resamples / 2 and resamples else None)
    return {"of": a.name, "to": b.name, "at": cv.level_key(level),
            "ratio": None if point is None else round(point, 3), "ci": ci}


CAPS_MS = (2500.0, 1500.0, 1000.0, 800.0)


def cap_costs(points: Sequence[TimedPoint], tp: Sequence[float]) -> list[dict[str, Any]]:
    """`decide`'s table at its shipped waits with every wait capped at each of CAPS_MS: what a shorter longest wait
    (a lower FAR p95) costs in real callers' pauses cut off."""
    out = []
    for cap in CAPS_MS:
        th = bounded(TurnThresholds(), high=cap)
        need = [required_silence_ms(None, t, th, p.resumed_ms)[0] for p, t in zip(points, tp, strict=True)]
        cut = [n < p.silence_ms for n, p in zip(need, points, strict=True) if p.kind == "pause"]
        dead = [n for n, p in zip(need, points, strict=True) if p.kind == "end"]
        out.append({"cap_ms": cap, "false_cutoffs": round(float(np.mean(cut)), 4),
                    "dead_air_p50_ms": round(float(np.percentile(dead, 50))),
                    "dead_air_p95_ms": round(float(np.percentile(dead, 95)))})
    return out


def pause_facts(points: Sequence[TimedPoint]) -> dict[str, Any]:
    g = np.array([p.silence_ms for p in points if p.kind == "pause"])
    e = np.array([p.silence_ms for p in points if p.kind == "end"])
    return {
        "pause_ms_p50_p90_p95": [round(float(x)) for x in np.percentile(g, [50, 90, 95])],
        "pauses_over_ms": {str(t): round(float((g > t).mean()), 4) for t in (200, 500, 1000, 2000, 2500)},
        "agent_reply_gap_ms_p5_p50_p95": [round(float(x)) for x in np.percentile(e, [5, 50, 95])],
        "points_with_hand_words": round(float(np.mean([p.hand_words for p in points])), 4),
    }


def _num(x: float | None) -> str:
    if x is None:
        return "not reached"
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def markdown(doc: dict[str, Any]) -> str:
    lines = [
        "# Turn-end rules on real human-to-agent calls (words and silences)", "",
        f"Made by `{doc['command']}` on {doc['when']} ({doc['machine']}); from `benchmarks/results/call_turns.json`.",
        "", f"{doc['calls']} Harper Valley bank calls (real people, role-played; hand transcripts with word times): "
        f"{doc['turns']} caller turns, {doc['pauses']} mid-turn pauses (>= {doc['min_pause_ms']:g} ms), {doc['ends']} turn ends. "
        "No audio: the rules here read the words and the silence only (`voicelab/turnbench/call_timing.py`).", "",
        "| rule | dead air at 5 % false cut-offs (ms) [95 % interval] | knob there | at 10 % | "
        "false cut-offs at 800 ms | at the shipped setting: false cut-offs / dead air | text AUC |",
        "|---|---|---|---|---|---|---|"]
    for r in doc["strategies"]:
        ci = (r.get("dead_air_p50_ms_ci_at") or {}).get("5%")
        ci_s = f" [{ci[0]}, {ci[1]}]" if ci else ""
        at5, at10 = r["dead_air_p50_ms_at"]["5%"], r["dead_air_p50_ms_at"]["10%"]
        cut800 = r["false_cutoffs_at"]["800ms"]
        knob5, knob = r["knob_at"]["5%"], r["knob"]
        d = r.get("at_default")
        d_s = (f"{r['knob']} {d['knob']:g}: {100 * d['false_cutoffs']:.1f} % / {d['dead_air_p50_ms']} ms" if d
               else "-")
        lines.append(f"| {r['strategy']} | {_num(at5)}{ci_s} | "
                     f"{'-' if knob5 is None else f'{knob} {_num(knob5)}'} | "
                     f"{_num(at10)} | "
                     f"{'-' if cut800 is None else f'{100 * cut800:.1f} %'} | {d_s} | {r.get('text_auc') or ''} |")
    f = doc["pauses_and_ends"]
    lines += ["", "`decide`'s table on the shipped model at scale 1 with its longest wait capped (what a lower FAR p95 "
              "costs): " + "; ".join(f"{c['cap_ms']:.0f} ms: {100 * c['false_cutoffs']:.1f} % of pauses cut off, dead air "
                                      f"p95 {c['dead_air_p95_ms']} ms" for c in doc["caps_shipped_model"]) + "."]
    lines += ["", "Dead air over silence only's, on the same points (paired bootstrap, 95 % interval): " + "; ".join(
        f"{r['of']} at {r['at']}: {r['ratio']}x {r['ci']}" for r in doc["ratios_to_silence_only"]) + "."]
    lines += ["", f"Pauses: median / p90 / p95 {f['pause_ms_p50_p90_p95']} ms; share longer than 0.5 / 1 / 2 / 2.5 s: "
              + " / ".join(f"{100 * f['pauses_over_ms'][k]:.1f} %" for k in ("500", "1000", "2000", "2500"))
              + f". The agent's reply gap after a turn end: p5 / median / p95 {f['agent_reply_gap_ms_p5_p50_p95']} ms.",
              "", "eot-bench's published dead air at 5 % false cut-offs on its English human calls, for orientation "
              "(another corpus, with audio): " + ", ".join(f"{k} {v} ms" for k, v in doc["anchors_5pct_ms"].items())
              + ".", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=Path, default=CALLS_DIR)
    ap.add_argument("--decision", type=Path, action="append", default=[], help="another decision model folder")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--first", type=int, help="only the first N calls in name order (those no model trains on)")
    ap.add_argument("--min-pause-ms", type=float, default=MIN_PAUSE_MS, help="shortest silence labelled a pause")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--markdown", type=Path)
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    points = load_points(a.calls, a.min_pause_ms, slice(a.first))
    pauses = [p for p in points if p.kind == "pause"]
    ends = [p for p in points if p.kind == "end"]
    timeout = judge("timeout (silence only)", "silence_ms", TIMEOUTS_MS, lambda t, p: t, points)
    rows: list[dict[str, Any]] = [summarise(timeout, a.resamples, TIMEOUT_DEFAULT_MS)]
    ratios: list[dict[str, Any]] = []
    models: dict[str, list[float]] = {"shipped": text_ps(None, points)}
    for folder in a.decision:
        models[folder.as_posix()] = text_ps(folder, points)
    tp_of = {name: dict(zip(map(id, points), tp, strict=True)) for name, tp in models.items()}
    for name, tp in models.items():
        text_auc = auc([tp_of[name][id(p)] for p in ends], [tp_of[name][id(p)] for p in pauses])
        j = decide_words(points, tp, "decide (words only), " + ("shipped decision model" if name == "shipped" else name))
        rows.append({**summarise(j, a.resamples, 1.0), "text_auc": text_auc})
        ratios += [paired_ratio(j, timeout, lv, a.resamples) for lv in (0.05, 0.10)]
    rows.append(summarise(decide_words(points, models["shipped"], "decide (words only), shipped, no resumed bound",
                                       resumed=False), a.resamples, 1.0))
    fitted_weights = {}
    for resumed in (True, False):
        j, w = fitted_words(points, models["shipped"], resumed)
        rows.append(summarise(j, a.resamples))
        fitted_weights[j.name] = w
    doc = {
        "command": "python benchmarks/call_turns.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, no GPU",
        "calls": len({p.call for p in points}), "turns": len({(p.call, p.turn) for p in points}),
        "pauses": len(pauses), "ends": len(ends), "min_pause_ms": a.min_pause_ms, "pauses_and_ends": pause_facts(points),
        "strategies": rows, "ratios_to_silence_only": ratios, "caps_shipped_model": cap_costs(points, models["shipped"]),
        "fitted_weights_bias_text_silence_per_fold": fitted_weights,
        "anchors_5pct_ms": ANCHORS_5PCT_MS, "seconds": round(time.perf_counter() - t0, 1),
    }
    for r in rows:
        print(f"{r['strategy']:<60} 5%: {r['dead_air_p50_ms_at']['5%']}  10%: {r['dead_air_p50_ms_at']['10%']}  "
              f"ci5: {(r.get('dead_air_p50_ms_ci_at') or {}).get('5%')}  auc: {r.get('text_auc')}")
    if a.json:
        a.json.write_text(json.dumps(doc, indent=1) + "\n")
    if a.markdown:
        a.markdown.write_text(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
