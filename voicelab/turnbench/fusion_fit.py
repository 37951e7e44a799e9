"""Fit the fused turn-end weighing (`voicelab.rules.turn_fusion`) on the bench's cached scores.

The examples are the moments a turn-end rule could end the turn: after every stop of the default VAD, at each
silence of `STEP_S` (100 ms, as eot-bench scores silences) from the VAD's stop on, for as long as the caller is
still silent by the VAD (the next confirmed start, or the end of the point's stretch: `replay.horizons`). Each
example holds the two P(complete) at that stop and ln(silence); its label says whether the stretch is a true
turn end (1) or a pause the caller went on after (0). A logistic regression over them is a discrete-time hazard
model of "the turn is over now"; the weighing's `theta` is then the operating point, swept by the bench.

Fit only on the sources named (`--train`): the groups the targets are read on stay out of the fit.

    python -m voicelab.turnbench.fusion_fit --train generated,human-read --theta-at human-read:0.05 \
        --out voicelab/rules/turn_fusion.json

Pure numpy and scipy over the cache (`voicelab bench turns` fills it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from voicelab.rules.turn_fusion import FusedWeighing, logit
from voicelab.turnbench.replay import DEFAULT_VAD, Trace, horizons

STEP_S = 0.1  # eot-bench scores every silence from 100 ms on
MAX_SILENCE_S = 3.0  # past the rule's cap, nothing is decided
L2 = 1e-2  # a light ridge: the weights stay finite where the sources separate a feature perfectly


@dataclass(frozen=True)
class Examples:
    x: np.ndarray  # (N, 4): logit(audio_p), logit(text_p) (0 without words), no words, ln(silence s)
    y: np.ndarray  # (N,) 1: the stretch is a turn end
    n_pauses: int
    n_ends: int


def _point_of(trace: Trace, hz: Sequence[float], t_s: float) -> int | None:
    lo = -math.inf
    for i, h in enumerate(hz):
        if lo <= t_s < h:
            return i
        lo = h
    return None


def examples(traces: Sequence[Trace], stop_secs: float = DEFAULT_VAD.stop_secs) -> Examples:
    """The hazard examples of every VAD stop of `traces` (module doc)."""
    rows: list[tuple[float, float, float, float, int]] = []
    pauses = ends = 0
    for tr in traces:
        hz = horizons(tr)
        for s in tr.stops:
            i = _point_of(tr, hz, s.t_s)
            if i is None:
                continue
            p = tr.points[i]
            end = p.kind == "end" and s.t_s >= p.t_s
            speech_end = s.t_s - stop_secs
            nxt = next((t for t in tr.starts if t > s.t_s), math.inf)
            limit = min(nxt, hz[i]) if not end else nxt
            la = logit(s.audio_p)
            lt, no_text = (logit(s.text_p), 0.0) if s.text_p is not None else (0.0, 1.0)
            k = max(1, math.ceil(stop_secs / STEP_S - 1e-9))
            added = False
            while k * STEP_S <= MAX_SILENCE_S + 1e-9 and speech_end + k * STEP_S < limit:
                rows.append((la, lt, no_text, math.log(k * STEP_S), int(end)))
                added = True
                k += 1
            if added:
                ends += int(end)
                pauses += int(not end)
    a = np.asarray(rows, dtype=float).reshape(-1, 5)
    return Examples(a[:, :4], a[:, 4], pauses, ends)


def fit(ex: Examples, l2: float = L2) -> np.ndarray:
    """Weights (bias, w_audio, w_text, w_no_text, w_silence) by penalised maximum likelihood."""
    if ex.y.size == 0 or ex.y.min() == ex.y.max():
        raise ValueError("fusion fit: the examples need both turn ends and pauses")
    x = np.hstack([np.ones((ex.x.shape[0], 1)), ex.x])
    y = ex.y

    def nll(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ w
        loss = np.logaddexp(0.0, z) - y * z  # -log-likelihood per example
        p = 1.0 / (1.0 + np.exp(-z))
        pen = l2 * float(w[1:] @ w[1:])
        grad = x.T @ (p - y) / y.size + 2 * l2 * np.r_[0.0, w[1:]]
        return float(loss.mean()) + pen, grad

    w = minimize(nll, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x
    return np.asarray(w)


def weighing(w: np.ndarray, theta: float = 0.5, **provenance: object) -> FusedWeighing:
    return FusedWeighing(bias=round(float(w[0]), 4), w_audio=round(float(w[1]), 4), w_text=round(float(w[2]), 4),
                         w_no_text=round(float(w[3]), 4), w_silence=round(float(w[4]), 4), theta=theta,
                         fitted_on=dict(provenance))


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - a command over the cache
    from voicelab.turnbench import curve as cv
    from voicelab.turnbench.cases import CACHE_ROOT
    from voicelab.turnbench.replay import FusedReplay, trace_of
    from voicelab.turnbench.turn_bench import fixture_refs, load_scores, refs_for, sweep

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", default="generated,human-read", help="bench groups to fit on, comma-separated")
    ap.add_argument("--theta-at", default="human-read:0.05",
                    help="GROUP:RATE: the operating point, the fastest theta with at most RATE false cut-offs "
                         "on GROUP (one of the training groups)")
    ap.add_argument("--fixtures", type=Path, nargs="*", default=None,
                    help="fit on your own fixtures instead (their cases form the group `user`)")
    ap.add_argument("--out", type=Path, default=None, help="write the weights file here")
    ap.add_argument("--cache", type=Path, default=CACHE_ROOT)
    a = ap.parse_args(argv)
    train = ["user"] if a.fixtures else [g.strip() for g in a.train.split(",") if g.strip()]
    op_group, _, op_rate = a.theta_at.partition(":")
    if op_group not in train:
        print(f"--theta-at {a.theta_at}: {op_group} is not a training group ({', '.join(train)})", file=sys.stderr)
        return 2
    traces: dict[str, list[Trace]] = {}
    for g in train:
        refs = fixture_refs(a.fixtures, {}, "user") if a.fixtures else refs_for(g)
        refs = [r for r in refs if r.kind == "turn" and r.group == g]
        traces[g] = [trace_of(d) for d in load_scores(refs, a.cache)]
    ex = examples([t for g in train for t in traces[g]])
    w = fit(ex)
    base = weighing(w)
    m = sweep(FusedReplay(weighing=base), traces[op_group])
    c = cv.curve(m.values, m.cut[False], m.dead[False])
    k, p50, _ = cv.at_cutoff(c, float(op_rate))
    if k is None:
        print(f"--theta-at {a.theta_at}: no theta gets that low on {op_group}", file=sys.stderr)
        return 1
    final = replace(base, theta=float(m.values[k]), fitted_on={
        "groups": train, "examples": int(ex.y.size), "pauses": ex.n_pauses, "ends": ex.n_ends,
        "theta_at": a.theta_at, "dead_air_p50_ms_there": p50, "date": dt.date.today().isoformat(),
        "command": "python -m voicelab.turnbench.fusion_fit " + " ".join(argv if argv is not None else sys.argv[1:])})
    doc = json.dumps(final.to_json(), indent=1)
    print(doc)
    if a.out is not None:
        a.out.write_text(doc + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
