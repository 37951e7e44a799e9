"""How many plays of the fixture list does it take to detect a 50 ms change of FAR p50 and of FAR p95?

    .venv/bin/python benchmarks/repetitions_needed.py RUN [RUN ...] [--change 50] [--sims 100]

From real run folders of one configuration (several runs, or `--repeat` runs, give each fixture turn several
measurements), this builds a resampling model of the per-turn FAR: each fixture turn keeps its own typical
value (the mean of its measurements) plus a deviation drawn from every turn's measured deviations around its
own mean (pooled; from the pooled FAR distribution when no turn was measured twice). For R = 1, 2, 3, ...
plays it simulates pairs of experiments, A as measured and B with every turn `--change` ms slower, compares
them exactly as `voicelab compare` does (paired by fixture turn, bootstrap 95 % interval) and counts how
often the verdict is "worse" (power) and, with no change, how often it is anything but "no detectable
difference" (false alarms). The answer is the smallest R with power >= 80 % and false alarms <= 10 %.

Without run folders, `--synthetic` draws turns from a lognormal FAR model (median 600 ms) for a dry run.
Prints a table and a JSON line; `--out FILE` also writes the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from voicelab.analysis import AnalysisError, load_run
from voicelab.analysis.compare import SAME, SPECS, WORSE, Key, compare_samples, samples

REPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
POWER = 0.8
MAX_FALSE_ALARMS = 0.10  # a power figure means nothing while same-distribution pairs come out "different"


class TurnModel:
    """Per fixture turn: its mean FAR; deviations pooled over turns measured more than once."""

    def __init__(self, obs: dict[tuple[str, int], list[float]]) -> None:
        self.keys = sorted(obs)
        self.means = np.array([np.mean(obs[k]) for k in self.keys])
        dev = [v - np.mean(vs) for vs in obs.values() if len(vs) > 1 for v in vs]
        self.dev = np.array(dev) if dev else None
        self.pool = np.concatenate([np.asarray(v) for v in obs.values()])
        self.repeated = sum(1 for vs in obs.values() if len(vs) > 1)

    def draw(self, reps: int, rng: np.random.Generator) -> list[tuple[Key, float]]:
        n = len(self.keys) * reps
        base = np.tile(self.means, reps)
        vals = base + rng.choice(self.dev, n) if self.dev is not None else rng.choice(self.pool, n)
        return [((k[0], k[1], r), float(v)) for r in range(reps) for k, v in
                zip(self.keys, vals[r * len(self.keys):(r + 1) * len(self.keys)], strict=True)]


def observed(paths: list[str]) -> dict[tuple[str, int], list[float]]:
    obs: dict[tuple[str, int], list[float]] = defaultdict(list)
    for p in paths:
        for (fixture, turn, _), v in samples(load_run(p), SPECS["far_p50"]):
            obs[(fixture, turn)].append(v)
    return dict(obs)


def synthetic(rng: np.random.Generator, turns: int = 9, per_turn: int = 4) -> dict[tuple[str, int], list[float]]:
    typical = rng.lognormal(np.log(600), 0.45, turns)  # turns differ a lot (endpointing, fallbacks)
    return {(f"fx{i // 3}", i % 3): list(typical[i] + rng.normal(0, 60, per_turn)) for i in range(turns)}


def simulate(model: TurnModel, figure: str, reps: int, change: float, sims: int, resamples: int,
             seed: int) -> tuple[float, float]:
    """(power at `change`, false-alarm rate at 0) over `sims` simulated pairs of experiments."""
    rng = np.random.default_rng(seed)
    spec = SPECS[figure]
    hits = alarms = 0
    for i in range(sims):
        a, b, b0 = model.draw(reps, rng), model.draw(reps, rng), model.draw(reps, rng)
        shifted = [(k, v + change) for k, v in b]
        hits += compare_samples(spec, a, shifted, seed=i, n_resamples=resamples).verdict == WORSE
        alarms += compare_samples(spec, a, b0, seed=i, n_resamples=resamples).verdict != SAME
    return hits / sims, alarms / sims


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*", help="run folders of one configuration (the default list)")
    ap.add_argument("--synthetic", action="store_true", help="a lognormal FAR model instead of run folders")
    ap.add_argument("--change", type=float, default=50.0, help="the change to detect, ms")
    ap.add_argument("--sims", type=int, default=100, help="simulated experiment pairs per repetition count")
    ap.add_argument("--resamples", type=int, default=999, help="bootstrap resamples per comparison")
    ap.add_argument("--max-reps", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="also write the JSON result here")
    args = ap.parse_args(argv)
    if not args.runs and not args.synthetic:
        print("error: give run folders or --synthetic", file=sys.stderr)
        return 2
    try:
        obs = synthetic(np.random.default_rng(args.seed)) if args.synthetic else observed(args.runs)
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not obs:
        print("error: no turn with a measured FAR in these runs", file=sys.stderr)
        return 2
    model = TurnModel(obs)
    print(f"{len(model.keys)} fixture turns, {sum(len(v) for v in obs.values())} measurements, "
          f"{model.repeated} turns measured more than once; change {args.change:.0f} ms, {args.sims} simulations")
    result: dict[str, object] = {"source": "synthetic" if args.synthetic else args.runs, "change_ms": args.change,
                                 "sims": args.sims, "turns_per_play": len(model.keys), "power_target": POWER}
    for figure in ("far_p50", "far_p95"):
        curve = []
        needed = None
        for reps in (r for r in REPS if r <= args.max_reps):
            power, alarms = simulate(model, figure, reps, args.change, args.sims, args.resamples, args.seed)
            curve.append({"plays": reps, "power": power, "false_alarms": alarms})
            print(f"  {figure}: {reps:2d} plays ({reps * len(model.keys):4d} turns): power {power:.2f}, "
                  f"false alarms {alarms:.2f}", flush=True)
            if power >= POWER and alarms <= MAX_FALSE_ALARMS:
                needed = reps
                break
        result[figure] = {"plays_needed": needed, "curve": curve}
        print(f"{figure}: {needed if needed else f'more than {args.max_reps}'} plays of the list")
    line = json.dumps(result)
    print(line)
    if args.out:
        args.out.write_text(line + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
