"""What the turn-end sources tell apart on each group of the turn bench, from its cached scores (no new passes).

Per group: at the first stop of the default VAD after each labelled point (a pause counts only if the VAD stops
inside it), how well smart-turn's P(complete) and the decision model's separate turn ends from pauses (AUC: the
chance a random end scores above a random pause, ties half); and `decide` with only its shortest wait swept
(every other wait at least that long): its median dead air at 5 % false cut-offs, pass times removed. Then the
decision models' P(complete) on a few clean sentences, each training alone and pooled both ways.

    python benchmarks/turn_evidence.py --group human-calls --group human --group human-read --group generated --json benchmarks/results/turn_evidence.json

Needs the bench's score cache (`voicelab bench turns` fills it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import voicelab.turnbench.curve as cv
import voicelab.turnbench.turn_bench as tb
from voicelab.rules.turn_end import TurnThresholds, Weighing
from voicelab.turnbench.cases import CACHE_ROOT
from voicelab.turnbench.replay import DecideTurnEndReplay, Trace, bounded, trace_of

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ("is that what happened", "what's the make and model of the car", "yeah let's do it",
         "i'm calling because", "i would like to book a break")
MODELS = {"shop": "engines/tiny/decision", "calls": "engines/tiny/decision_calls",
          "logit pool": "engines/tiny/decision_ensemble_logit", "linear pool (shipped)": "engines/tiny/decision_ensemble"}


@dataclasses.dataclass
class FloorOnly(DecideTurnEndReplay):
    """`decide` with its shortest wait swept and every other wait at least as long."""

    name: str = "decide, floor swept"
    knob: str = "floor_ms"
    values: Sequence[float] = tuple(float(v) for v in range(200, 4001, 50))
    default: float = 200.0

    def weighing_at(self, value: float) -> Weighing:
        return bounded(self.thresholds, low=value)


def auc(pos: Sequence[float], neg: Sequence[float]) -> float | None:
    if not pos or not neg:
        return None
    a, b = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return round(float((a > b).mean() + 0.5 * (a == b).mean()), 3)


def separation(traces: Sequence[Trace]) -> dict[str, object]:
    ends: list[tuple[float, float]] = []
    pauses: list[tuple[float, float]] = []
    for t in traces:
        for p in t.points:
            s = next((s for s in t.stops if s.t_s >= p.t_s), None)
            if s is None or (p.kind == "pause" and p.resume_s is not None and s.t_s > p.resume_s):
                continue  # the VAD never stopped inside this pause: no source is asked there
            (ends if p.kind == "end" else pauses).append((s.audio_p, s.text_p or 0.0))
    return {"ends": len(ends), "pauses_with_a_vad_stop": len(pauses),
            "auc_audio": auc([a for a, _ in ends], [a for a, _ in pauses]),
            "auc_text": auc([x for _, x in ends], [x for _, x in pauses])}


def floor_only(traces: Sequence[Trace]) -> float | None:
    s = FloorOnly(thresholds=TurnThresholds())
    m = tb.sweep(s, traces)
    return cv.figures(cv.curve(m.values, m.cut[False], m.dead[False]))["dead_air_p50_ms_at"]["5%"]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", action="append", required=True, help="a turn bench group (repeatable)")
    ap.add_argument("--json", type=Path, required=True)
    a = ap.parse_args(argv)
    from engines.decision.model import load_decision_model  # torch: only when run

    doc: dict[str, object] = {"command": "python benchmarks/turn_evidence.py " + " ".join(sys.argv[1:]), "groups": {}}
    for g in a.group:
        try:
            docs = tb.load_scores(tb.refs_for(g), CACHE_ROOT)
        except tb.TurnBenchError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        traces = [t for t in (trace_of(d) for d in docs if d["kind"] == "turn") if t.starts]
        doc["groups"][g] = {**separation(traces), "floor_only_dead_air_p50_ms_at_5": floor_only(traces)}  # type: ignore[index]
    doc["texts"] = {name: dict(zip(TEXTS, (round(p, 3) for p in load_decision_model(ROOT / folder).p_yes_batch(
        [("turn_complete", t, None) for t in TEXTS])), strict=True)) for name, folder in MODELS.items()}
    a.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
