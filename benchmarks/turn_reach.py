"""How far the shipped turn-end sources can reach on each turn bench group, and what the longest wait buys.

The shipped rule (`decide`) turns two sources into a wait: smart-turn's P(complete) on the audio and the
decision model's on Whisper's reading. This asks what any rule of those sources could reach, by fitting rules on
the very points they are judged on (in-sample: optimistic bounds, not rules to ship). Per group, the median dead
air at 5 % false cut-offs (pass times removed, as the bench reports it) of:

- silence only (`timeout`, its VAD stop swept) and `decide` as shipped (its scale swept), as in the bench;
- `decide` with only its shortest wait swept, every other wait at least that long (`turn_evidence.FloorOnly`);
- the logistic hazard model of `--turn fuse` (`voicelab.turnbench.fusion_fit`), fitted on the group itself;
- the best two-level rule fitted on the group itself: the turn ends after `lo` of silence where
  `alpha * logit(audio P) + (1 - alpha) * logit(text P)` reaches `tau`, else after `hi`; `lo` swept, the rest
  chosen from a grid (`GRID`), with and without the resumed-pause bound. The best of 200 rules is picked on the
  points it is scored on, so its figure is a bound that held-out calls would not reach; `transfer` gives each
  group's best rule (its `lo` swept again) on every other group, which is what fitting it would give a caller.

Then two of the rule's waits, per group its false cut-offs and dead air at the shipped setting and its dead air at 5 %
(the scale swept): the wait where the audio says complete and the words firmly say cut off (`vetoed_ms`, 1200 ms
shipped, 2000 before), and every wait cut to at most `cap` ms. The main job's FAR p95 is set by its longest
waits; this shows what each costs and buys on each group.

    python benchmarks/turn_reach.py --json benchmarks/results/turn_reach.json

Needs the bench's score cache (`voicelab bench turns` fills it); about 10 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from turn_evidence import FloorOnly

import voicelab.turnbench.curve as cv
import voicelab.turnbench.fusion_fit as fusion_fit
import voicelab.turnbench.turn_bench as tb
from voicelab.rules.turn_end import TurnThresholds, Weighing
from voicelab.rules.turn_fusion import logit
from voicelab.turnbench.cases import CACHE_ROOT
from voicelab.turnbench.replay import (
    DecideTurnEndReplay,
    FusedReplay,
    TimeoutReplay,
    Trace,
    bounded,
    trace_of,
)

GROUPS = ("human-calls", "human", "human-read", "generated", "bundled", "real")
GRID = {"alpha": (0.0, 0.25, 0.5, 0.75, 1.0), "tau": (-2.0, -1.0, 0.0, 1.0, 2.0),
        "hi": (1200.0, 2000.0, 3000.0, 6000.0), "resumed_bound": (True, False)}
CAPS = (2500.0, 2000.0, 1500.0, 1400.0, 1200.0, 1000.0, 800.0)
VETOED = (2000.0, 1600.0, 1200.0)


@dataclasses.dataclass(frozen=True)
class TwoLevel:
    """A `Weighing`: `lo` of silence where the sources' weighted logit reaches `tau`, else `hi`."""

    alpha: float
    tau: float
    lo: float
    hi: float
    resumed_bound: bool = True
    drop_unreliable_words: bool = False

    @property
    def floor_ms(self) -> float:
        return self.lo

    @property
    def cap_ms(self) -> float:
        return max(self.lo, self.hi)

    @property
    def adds_start_lag(self) -> bool:
        return True

    def evidence_silence_ms(self, audio_p: float | None, text_p: float | None) -> tuple[float, str]:
        # a missing source is logit 0: no evidence either way, as in `voicelab.rules.turn_fusion`
        a = logit(audio_p) if audio_p is not None else 0.0
        t = logit(text_p) if text_p is not None else 0.0
        if self.alpha * a + (1.0 - self.alpha) * t >= self.tau:
            return self.lo, "weighted logit at or above tau"
        return self.cap_ms, "weighted logit below tau"


@dataclasses.dataclass
class TwoLevelSweep(DecideTurnEndReplay):
    name: str = "two-level"
    knob: str = "lo"
    values: Sequence[float] = tuple(float(v) for v in range(100, 4001, 50))
    default: float = 200.0
    rule: dict[str, float | bool] = dataclasses.field(default_factory=dict)

    def weighing_at(self, value: float) -> Weighing:
        return TwoLevel(lo=value, **self.rule)  # type: ignore[arg-type]


@dataclasses.dataclass
class Capped(DecideTurnEndReplay):
    """`decide` at its shipped setting with every wait cut to at most `knob` ms."""

    name: str = "decide, capped"
    knob: str = "cap_ms"
    values: Sequence[float] = CAPS
    default: float = 2500.0

    def weighing_at(self, value: float) -> Weighing:
        return bounded(self.thresholds, high=value)


def at_5(strategy: object, traces: Sequence[Trace]) -> float | None:
    m = tb.sweep(strategy, traces)  # type: ignore[arg-type]
    return cv.figures(cv.curve(m.values, m.cut[False], m.dead[False]))["dead_air_p50_ms_at"]["5%"]


def ratio(x: float | None, base: float | None) -> float | None:
    return None if x is None or not base else round(x / base, 2)


def best_two_level(traces: Sequence[Trace]) -> dict[str, object]:
    best: tuple[float, dict[str, float | bool]] | None = None
    for combo in itertools.product(*GRID.values()):
        rule = dict(zip(GRID, combo, strict=True))
        v = at_5(TwoLevelSweep(rule=rule), traces)
        if v is not None and (best is None or v < best[0]):
            best = (v, rule)
    return {"dead_air_p50_ms_at_5": None, "rule": None} if best is None else \
        {"dead_air_p50_ms_at_5": best[0], "rule": best[1]}


def reach(traces: Sequence[Trace]) -> dict[str, object]:
    silence = at_5(TimeoutReplay(), traces)
    shipped = at_5(DecideTurnEndReplay(), traces)
    floor = at_5(FloorOnly(thresholds=TurnThresholds()), traces)
    try:
        hazard: float | None = at_5(FusedReplay(weighing=fusion_fit.weighing(
            fusion_fit.fit(fusion_fit.examples(traces)))), traces)
    except ValueError:  # no VAD stop inside any pause or end: nothing to fit
        hazard = None
    two = best_two_level(traces)
    out: dict[str, object] = {
        "silence_only": silence, "decide_shipped": shipped, "decide_floor_swept": floor,
        "hazard_fitted_in_sample": hazard, "two_level_fitted_in_sample": two}
    out["over_silence_only"] = {k: ratio(v, silence) for k, v in (
        ("decide_shipped", shipped), ("decide_floor_swept", floor), ("hazard_fitted_in_sample", hazard),
        ("two_level_fitted_in_sample", two["dead_air_p50_ms_at_5"]))}
    return out


def at_setting(m: tb.Matrices, k: int) -> dict[str, object]:
    c = cv.curve(m.values, m.cut[False], m.dead[False])
    return {"false_cutoffs": int(m.cut[False][k].sum()), "pauses": c.n_pauses,
            "false_cutoff_rate": round(float(c.rate[k]), 4), "dead_air_p50_ms": cv._r(c.p50[k]),
            "dead_air_p95_ms": cv._r(c.p95[k])}


def caps(traces: Sequence[Trace]) -> dict[str, dict[str, object]]:
    m = tb.sweep(Capped(), traces)
    return {f"{v:.0f}": at_setting(m, k) for k, v in enumerate(m.values)}


def veto_waits(traces: Sequence[Trace]) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for v in VETOED:
        m = tb.sweep(DecideTurnEndReplay(thresholds=TurnThresholds(vetoed_ms=v)), traces)
        out[f"{v:.0f}"] = {**at_setting(m, list(m.values).index(1.0)), "dead_air_p50_ms_at_5": cv.figures(
            cv.curve(m.values, m.cut[False], m.dead[False]))["dead_air_p50_ms_at"]["5%"]}
    return out


def transfer(groups: dict[str, dict[str, Any]], traces_by: dict[str, list[Trace]]) -> dict[str, dict[str, object]]:
    """Each group's best two-level rule, its `lo` swept again, on every group."""
    out: dict[str, dict[str, object]] = {}
    for g, fig in groups.items():
        rule = fig["two_level_fitted_in_sample"]["rule"]
        if rule is not None:
            out[f"fitted on {g}"] = {h: at_5(TwoLevelSweep(rule=rule), traces_by[h]) for h in traces_by}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", action="append", help=f"a turn bench group (repeatable; default: {', '.join(GROUPS)})")
    ap.add_argument("--json", type=Path, required=True)
    a = ap.parse_args(argv)
    doc: dict[str, object] = {"command": "python benchmarks/turn_reach.py " + " ".join(
        sys.argv[1:] if argv is None else argv), "grid": GRID, "groups": {}, "vetoed_ms": {}, "caps": {}}
    traces_by: dict[str, list[Trace]] = {}
    for g in a.group or GROUPS:
        try:
            docs = tb.load_scores(tb.refs_for(g), CACHE_ROOT)
        except tb.TurnBenchError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        traces = [t for t in (trace_of(d) for d in docs if d["kind"] == "turn") if t.starts]
        doc["groups"][g] = reach(traces)  # type: ignore[index]
        doc["vetoed_ms"][g] = veto_waits(traces)  # type: ignore[index]
        doc["caps"][g] = caps(traces)  # type: ignore[index]
        print(g, json.dumps(doc["groups"][g]), flush=True)  # type: ignore[index]
        traces_by[g] = traces
    doc["transfer"] = transfer(doc["groups"], traces_by)  # type: ignore[arg-type]
    a.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
