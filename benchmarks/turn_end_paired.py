"""How much sooner do turns end with configuration B than with A? Paired by fixture turn, agreeing turns only.

`voicelab compare` pairs FAR by turn, but the FAR median of the default list jumps between two groups of
turns (those where smart-turn and the decision model agree, ending at the rule's floor, and those that wait
0.8-2.8 s), and which group a turn falls in moves with the recogniser's reading from run to run. A change
that only moves the agreeing turns (the early final, the verdict at the required silence) is measured here on
the turns that ended on agreement in every run given: the turn end (`turn_end` event) minus the caller's true
end of speech, averaged per turn over the runs of each side, B - A with the paired bootstrap 95 % interval
that `voicelab compare` uses (`voicelab.measure.intervals.diff_interval`).

    .venv/bin/python benchmarks/turn_end_paired.py --a RUN [RUN ...] --b RUN [RUN ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from voicelab.analysis import AnalysisError, load_run  # noqa: E402
from voicelab.measure.intervals import diff_interval, mean_stat  # noqa: E402

AGREE = "audio and text agree"


def turn_ends(run: Path) -> dict[tuple[str, int], tuple[float, bool]]:
    """(call, turn) -> (turn end after the true speech end in ms, ended on agreement)."""
    ev = load_run(run).events
    out: dict[tuple[str, int], tuple[float, bool]] = {}
    sel = ev[ev.kind.isin(["caller_speech_end", "turn_end", "turn_decision"])]
    for (call, turn), g in sel.groupby(["call_id", "turn"]):
        end, done, dec = (g[g.kind == k] for k in ("caller_speech_end", "turn_end", "turn_decision"))
        if len(end) and len(done) and len(dec):
            reason = json.loads(dec.payload.iloc[-1])["reason"]
            out[(str(call), int(turn))] = (float(done.t_ms.iloc[-1] - end.t_ms.iloc[0]), reason.startswith(AGREE))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", type=Path, nargs="+", required=True, help="run folders of the baseline")
    ap.add_argument("--b", type=Path, nargs="+", required=True, help="run folders of the change")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    try:
        side_a, side_b = [turn_ends(r) for r in a.a], [turn_ends(r) for r in a.b]
    except AnalysisError as e:
        sys.exit(str(e))
    keys = set.intersection(*[set(x) for x in side_a + side_b])
    agree = sorted(k for k in keys if all(x[k][1] for x in side_a + side_b))
    if not agree:
        sys.exit("no turn ended on agreement in every run")
    ma = [float(np.mean([x[k][0] for x in side_a])) for k in agree]
    mb = [float(np.mean([x[k][0] for x in side_b])) for k in agree]
    d = diff_interval(ma, mb, mean_stat, paired=True, seed=a.seed)
    res = {"turns": len(agree), "a_mean_ms": round(d.a or 0.0, 1), "b_mean_ms": round(d.b or 0.0, 1),
           "b_minus_a_ms": round(d.diff or 0.0, 1), "ci95_ms": None if d.ci is None else [round(c, 1) for c in d.ci]}
    print(f"{res['turns']} turns ended on agreement in every run: turn end {res['a_mean_ms']} -> {res['b_mean_ms']} ms "
          f"after the caller's true end; B - A {res['b_minus_a_ms']} ms {res['ci95_ms']}")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
