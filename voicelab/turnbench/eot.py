"""`voicelab bench turns --mode eot`: turn ends scored as LiveKit's eot-bench scores them. Pure numpy.

eot-bench (github.com/livekit/eot-bench) judges a turn-end model on labelled silences, not on a VAD's: every
silence of at least 100 ms inside a turn is a *hold* (the speaker goes on after it), the silence after the turn
is the *eot*. The model is scored causally every 100 ms through each silence (`voicelab.turnbench.eot_scores`),
and the three-knob policy of `voicelab.rules.listen_through` (threshold, action delay, timeout) is swept over
the grid below. At each setting:

- a hold is *cut off* when the policy ends the turn before the speaker goes on (the silence is longer than the
  instant it fires at);
- at an eot, the *latency* is the silence at which it fires (the timeout where the score never reaches the
  threshold); the figure is the mean over the eots, as eot-bench reports it.

Silence only (eot-bench's VAD baseline) is the same grid with the score ignored: end at D ms of silence, cut
off every hold longer than D, latency D at every eot. Its figure at a budget of X % false cut-offs is the
shortest D of its grid whose share of holds longer than D is at most X %.

The four operating points are eot-bench's: false cut-offs at 300 and 600 ms of latency (the lowest false
cut-off rate among settings with mean latency <= the budget) and latency at 5 % and 10 % false cut-offs (the
lowest mean latency among settings with a false cut-off rate <= the budget), with the setting reaching each
(ties broken as eot-bench breaks them). Intervals: a percentile bootstrap, holds and eots resampled
independently (seeded), the whole sweep re-read per resample.

Differences from eot-bench, by design: holds of 100-200 ms and over 5 s are kept (eot-bench's metrics drop
them by default; every labelled silence counts here), the action delay starts at 100 ms, and an eot is scored
through `END_SCORED_MS` of silence whatever its labelled length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from voicelab.measure.intervals import CONFIDENCE, SEED
from voicelab.rules.listen_through import STEP_MS, ListenPolicy
from voicelab.turnbench.replay import Point

END_SCORED_MS = 3000  # an eot is scored through this much silence: the longest timeout of the sweep
THRESHOLDS = tuple(round(0.01 * i, 2) for i in range(101))
ACTION_DELAYS_MS = tuple(range(STEP_MS, 1001, STEP_MS))  # 100 .. 1000 ms
TIMEOUTS_MS = tuple(range(500, END_SCORED_MS + 1, 500))  # 500 .. 3000 ms
SILENCE_MS = tuple(range(STEP_MS, END_SCORED_MS + 1, STEP_MS))  # silence only: 100 .. 3000 ms
CUTOFF_BUDGETS = (0.05, 0.10)
LATENCY_BUDGETS_MS = (300, 600)
EPS = 1e-9


@dataclass(frozen=True)
class SilenceSpan:
    """One labelled silence: a hold (`duration_s`: until the speaker goes on) or the eot (`duration_s` inf)."""

    label: str  # "hold" or "eot"
    start_s: float  # the true end of speech, on the case's clock
    duration_s: float

    @property
    def instants(self) -> int:
        """How many grid instants are scored: a hold's that fall inside it (and no later than the longest
        timeout, which ends every silence), an eot's through `END_SCORED_MS`."""
        last = END_SCORED_MS // STEP_MS
        if self.label == "eot":
            return last
        return min(last, max(0, math.ceil(round(self.duration_s * 1000.0, 6) / STEP_MS) - 1))


def spans_of(points: Sequence[Point]) -> list[SilenceSpan]:
    """A case's labelled silences: a hold at each pause (until its resumption), the eot at its end."""
    out = []
    for p in points:
        if p.kind == "end":
            out.append(SilenceSpan("eot", p.t_s, math.inf))
        elif p.resume_s is not None and p.resume_s > p.t_s:
            out.append(SilenceSpan("hold", p.t_s, p.resume_s - p.t_s))
    return out


@dataclass
class Sweep:
    """One strategy on one group: per setting (row), which holds it cut off and its latency at each eot (ms)."""

    strategy: str
    settings: list[dict[str, float]]
    cut: np.ndarray  # (K, holds) bool
    latency_ms: np.ndarray  # (K, eots)
    order: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (K,) eot-bench's tie order, lower first

    @property
    def rate(self) -> np.ndarray:
        return self.cut.mean(axis=1) if self.cut.shape[1] else np.zeros(self.cut.shape[0])

    @property
    def mean_ms(self) -> np.ndarray:
        return self.latency_ms.mean(axis=1)


def _crossing_ms(scores: Sequence[np.ndarray], thresholds: np.ndarray) -> np.ndarray:
    """(T, S): per threshold and span, the silence (ms) of the first instant whose score reaches it (inf: none)."""
    out = np.full((thresholds.size, len(scores)), np.inf)
    for j, s in enumerate(scores):
        if len(s) == 0:
            continue
        cm = np.maximum.accumulate(np.asarray(s, dtype=np.float64))
        idx = np.searchsorted(cm, thresholds - EPS, side="left")  # first instant with cummax >= threshold
        out[:, j] = np.where(idx < cm.size, (idx + 1.0) * STEP_MS, np.inf)
    return out


def policy_sweep(strategy: str, holds: Sequence[tuple[float, np.ndarray]], eots: Sequence[np.ndarray],
                 thresholds: Sequence[float] = THRESHOLDS, action_delays_ms: Sequence[int] = ACTION_DELAYS_MS,
                 timeouts_ms: Sequence[int] = TIMEOUTS_MS) -> Sweep:
    """The three-knob policy over a model's scores: `holds` as (duration s, scores), `eots` as scores. A policy
    fires at min(max(action delay, first crossing), timeout): `ListenPolicy` read on the grid."""
    th = np.asarray(thresholds, dtype=np.float64)
    hold_ms = np.asarray([d * 1000.0 for d, _ in holds])
    ch = _crossing_ms([s for _, s in holds], th)
    ce = _crossing_ms(list(eots), th)
    settings: list[dict[str, float]] = []
    cuts, lats = [], []
    for ad in action_delays_ms:
        for to in timeouts_ms:
            if to < ad:
                continue
            fh = np.minimum(np.maximum(ad, ch), to)  # (T, holds)
            cuts.append(hold_ms[None, :] > fh + EPS)
            lats.append(np.minimum(np.maximum(ad, ce), to))
            settings += [ListenPolicy(float(t), int(ad), int(to)).to_dict() for t in th]
    cut = np.concatenate(cuts, axis=0) if cuts else np.zeros((0, len(holds)), bool)
    lat = np.concatenate(lats, axis=0) if lats else np.zeros((0, len(eots)))
    # eot-bench breaks ties by the timeout, then the action delay, then the threshold (lower first)
    order = np.lexsort(([s["threshold"] for s in settings], [s["action_delay_ms"] for s in settings],
                        [s["timeout_ms"] for s in settings]))
    rank = np.empty(len(settings), dtype=np.int64)
    rank[order] = np.arange(len(settings))
    return Sweep(strategy, settings, cut, lat, rank)


def silence_sweep(hold_s: Sequence[float], n_eots: int, silences_ms: Sequence[int] = SILENCE_MS) -> Sweep:
    """Silence only: end at D ms of silence whatever is said; the same holds and eots."""
    hold_ms = np.asarray(hold_s, dtype=np.float64) * 1000.0
    d = np.asarray(silences_ms, dtype=np.float64)
    cut = hold_ms[None, :] > d[:, None] + EPS
    lat = np.repeat(d[:, None], n_eots, axis=1)
    settings = [{"timeout_ms": int(x)} for x in silences_ms]
    return Sweep("timeout", settings, cut, lat, np.arange(len(settings)))


def _best_at_cutoff(rate: np.ndarray, mean: np.ndarray, order: np.ndarray, budget: float) -> int | None:
    ok = np.flatnonzero(rate <= budget + EPS)
    if ok.size == 0:
        return None
    return int(ok[np.lexsort((order[ok], rate[ok], mean[ok]))[0]])


def _best_at_latency(rate: np.ndarray, mean: np.ndarray, order: np.ndarray, budget_ms: float) -> int | None:
    ok = np.flatnonzero(mean <= budget_ms + EPS)
    if ok.size == 0:
        return None
    return int(ok[np.lexsort((order[ok], mean[ok], rate[ok]))[0]])


def level_key(x: float) -> str:
    return f"{round(x * 100)}%"


def operating_points(sw: Sweep) -> dict[str, Any]:
    """eot-bench's four operating points and the setting reaching each (None where none does)."""
    rate, mean = sw.rate, sw.mean_ms
    med = np.median(sw.latency_ms, axis=1) if sw.latency_ms.shape[1] else np.zeros(sw.latency_ms.shape[0])
    lat: dict[str, float | None] = {}
    lat_med: dict[str, float | None] = {}
    cut: dict[str, float | None] = {}
    setting: dict[str, dict[str, float] | None] = {}
    for b in CUTOFF_BUDGETS:
        k = None if sw.cut.shape[1] == 0 or sw.latency_ms.shape[1] == 0 else _best_at_cutoff(rate, mean, sw.order, b)
        lat[level_key(b)] = None if k is None else round(float(mean[k]))
        lat_med[level_key(b)] = None if k is None else round(float(med[k]))
        setting[level_key(b)] = None if k is None else {**sw.settings[k], "false_cutoff_rate": round(float(rate[k]), 4)}
    for ms in LATENCY_BUDGETS_MS:
        k = None if sw.cut.shape[1] == 0 or sw.latency_ms.shape[1] == 0 else _best_at_latency(rate, mean, sw.order, ms)
        cut[str(ms)] = None if k is None else round(float(rate[k]), 4)
        setting[str(ms)] = None if k is None else {**sw.settings[k], "mean_latency_ms": round(float(mean[k]))}
    # the median over the ends at the same setting (chosen by its mean, as eot-bench chooses): the statistic of the
    # pipeline mode, and what a single caller most often gets; silence only's median is its mean
    return {"latency_ms_at": lat, "latency_median_ms_at": lat_med, "false_cutoffs_at_ms": cut, "setting": setting}


def bootstrap(sw: Sweep, resamples: int = 1000, seed: int = SEED, confidence: float = CONFIDENCE,
              chunk: int = 100) -> dict[str, Any]:
    """Percentile intervals of the four operating points: holds and eots resampled independently, the sweep
    re-read per resample (None where fewer than half the resamples reach the point)."""
    n_h, n_e = sw.cut.shape[1], sw.latency_ms.shape[1]
    if n_h < 2 or n_e < 2 or resamples <= 0:
        return {"latency_ms_ci_at": {}, "false_cutoffs_ci_at_ms": {}}
    rng = np.random.default_rng(seed)
    cutf = sw.cut.astype(np.float32)
    latf = sw.latency_ms.astype(np.float32)
    draws: dict[str, list[float]] = {level_key(b): [] for b in CUTOFF_BUDGETS} | {str(m): [] for m in LATENCY_BUDGETS_MS}
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        wh = np.stack([np.bincount(rng.integers(0, n_h, n_h), minlength=n_h) for _ in range(b)], axis=1)
        we = np.stack([np.bincount(rng.integers(0, n_e, n_e), minlength=n_e) for _ in range(b)], axis=1)
        rates = cutf @ wh.astype(np.float32) / n_h  # (K, b)
        means = latf @ we.astype(np.float32) / n_e
        for lv in CUTOFF_BUDGETS:
            v = np.where(rates <= lv + 1e-6, means, np.inf).min(axis=0)
            draws[level_key(lv)] += v.tolist()
        for ms in LATENCY_BUDGETS_MS:
            v = np.where(means <= ms + 1e-3, rates, np.inf).min(axis=0)
            draws[str(ms)] += v.tolist()
    lo, hi = 100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2

    def ci(xs: list[float], nd: int) -> list[float] | None:
        a = np.asarray(xs)
        ok = a[np.isfinite(a)]
        if ok.size < resamples / 2:
            return None
        q = np.percentile(ok, [lo, hi])
        return [round(float(q[0]), nd) if nd else float(round(float(q[0]))),
                round(float(q[1]), nd) if nd else float(round(float(q[1])))]

    return {"latency_ms_ci_at": {level_key(b): ci(draws[level_key(b)], 0) for b in CUTOFF_BUDGETS},
            "false_cutoffs_ci_at_ms": {str(m): ci(draws[str(m)], 4) for m in LATENCY_BUDGETS_MS}}


def paired_ratio(a: Sweep, b: Sweep, budget: float, resamples: int = 1000, seed: int = SEED,
                 confidence: float = CONFIDENCE) -> dict[str, Any]:
    """a's latency at `budget` false cut-offs over b's, on the same holds and eots; the interval from resampling
    them once for both (paired). ratio / ci None where either never reaches the budget (in over half the
    resamples)."""
    if a.cut.shape[1] != b.cut.shape[1] or a.latency_ms.shape[1] != b.latency_ms.shape[1]:
        raise ValueError("paired_ratio: the two sweeps are not on the same spans")
    n_h, n_e = a.cut.shape[1], a.latency_ms.shape[1]

    def best(sw: Sweep, wh: np.ndarray, we: np.ndarray) -> np.ndarray:
        rates = sw.cut.astype(np.float32) @ wh / n_h
        means = sw.latency_ms.astype(np.float32) @ we / n_e
        return np.where(rates <= budget + 1e-6, means, np.inf).min(axis=0)

    ones_h, ones_e = np.ones((n_h, 1), np.float32), np.ones((n_e, 1), np.float32)
    xa, xb = float(best(a, ones_h, ones_e)[0]), float(best(b, ones_h, ones_e)[0])
    point = xa / xb if np.isfinite(xa) and np.isfinite(xb) and xb > 0 else None
    out: dict[str, Any] = {"of": a.strategy, "over": b.strategy, "at": level_key(budget),
                           "ratio": None if point is None else round(point, 3), "ci": None}
    if point is None or n_h < 2 or n_e < 2 or resamples <= 0:
        return out
    rng = np.random.default_rng(seed)
    wh = np.stack([np.bincount(rng.integers(0, n_h, n_h), minlength=n_h) for _ in range(resamples)], 1)
    we = np.stack([np.bincount(rng.integers(0, n_e, n_e), minlength=n_e) for _ in range(resamples)], 1)
    ra, rb = best(a, wh.astype(np.float32), we.astype(np.float32)), best(b, wh.astype(np.float32), we.astype(np.float32))
    ok = np.isfinite(ra) & np.isfinite(rb) & (rb > 0)
    if ok.sum() >= resamples / 2:
        q = np.percentile(ra[ok] / rb[ok], [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
        out["ci"] = [round(float(q[0]), 3), round(float(q[1]), 3)]
    return out


def eot_row(group: str, sw: Sweep, *, default: bool, resamples: int, dataset: str) -> dict[str, Any]:
    """One `--json` row of the eot mode: the four operating points, their intervals and settings."""
    return {"group": group, "strategy": sw.strategy, "mode": "eot", "dataset": dataset,
            "pauses": int(sw.cut.shape[1]), "ends": int(sw.latency_ms.shape[1]), "latency_stat": "mean",
            **operating_points(sw), **bootstrap(sw, resamples), "default": default}


@dataclass
class ScoredCase:
    """One case's labelled silences and the model's scores at their instants (pass times in ms)."""

    id: str
    group: str
    spans: list[SilenceSpan]
    scores: list[np.ndarray]
    pass_ms: list[float] = field(default_factory=list)


MODEL = "smart"  # the scored strategy: smart-turn v3.2 (the turn kind `smart` runs the same model)
SILENCE = "timeout"  # silence only: the turn kind `timeout`


def group_sweeps(cases: Sequence[ScoredCase]) -> list[Sweep]:
    """The model's three-knob sweep and silence only, on the same labelled holds and eots."""
    holds = [(sp.duration_s, s) for c in cases for sp, s in zip(c.spans, c.scores, strict=True) if sp.label == "hold"]
    eots = [s for c in cases for sp, s in zip(c.spans, c.scores, strict=True) if sp.label == "eot"]
    return [policy_sweep(MODEL, holds, eots), silence_sweep([d for d, _ in holds], len(eots))]


def cpu_per_silence_s(cases: Sequence[ScoredCase]) -> dict[str, float | int | None]:
    """What listening through the silence costs: the passes' mean wall time and, at one pass per `STEP_MS`,
    the milliseconds of compute per second of silence."""
    ms = [m for c in cases for m in c.pass_ms]
    if not ms:
        return {"passes": 0, "pass_ms_mean": None, "pass_ms_p95": None, "ms_per_silence_s": None}
    mean = float(np.mean(ms))
    return {"passes": len(ms), "pass_ms_mean": round(mean, 1), "pass_ms_p95": round(float(np.percentile(ms, 95)), 1),
            "ms_per_silence_s": round(mean * 1000.0 / STEP_MS)}


def eot_result(cases: Sequence[ScoredCase], *, shipped: str, resamples: int, dataset: str) -> dict[str, Any]:
    """Every group's rows (the model and silence only), in the order the groups first appear."""
    groups = list(dict.fromkeys(c.group for c in cases))
    rows = []
    ratios: dict[str, list[dict[str, Any]]] = {}
    for g in groups:
        model, silence = group_sweeps([c for c in cases if c.group == g])
        for sw in (model, silence):
            rows.append(eot_row(g, sw, default=sw.strategy == shipped, resamples=resamples, dataset=dataset))
        ratios[g] = [paired_ratio(model, silence, b, resamples) for b in CUTOFF_BUDGETS]
        pts = operating_points(model)["setting"]
        for r, b in zip(ratios[g], CUTOFF_BUDGETS, strict=True):
            s = pts[level_key(b)]
            r["median_at_setting"] = None if s is None else _median_ratio(
                judged(ListenPolicy(s["threshold"], int(s["action_delay_ms"]), int(s["timeout_ms"])),
                       [c for c in cases if c.group == g], resamples))
    return {"rows": rows, "ratios": ratios,
            "cpu": {g: cpu_per_silence_s([c for c in cases if c.group == g]) for g in groups}}


def _median_ratio(j: dict[str, Any]) -> dict[str, Any]:
    """A setting's median dead air over silence only's at the same false cut-off rate (`judged`), paired."""
    return {"latency_ms_median": j["latency_ms_median"], "silence_only_ms": j["silence_only_ms_at_same_rate"],
            "ratio": j["ratio_median"], "ci": j["ratio_median_ci"]}


def _holds_eots(cases: Sequence[ScoredCase]) -> tuple[list[tuple[float, np.ndarray]], list[np.ndarray]]:
    holds = [(sp.duration_s, s) for c in cases for sp, s in zip(c.spans, c.scores, strict=True) if sp.label == "hold"]
    eots = [s for c in cases for sp, s in zip(c.spans, c.scores, strict=True) if sp.label == "eot"]
    return holds, eots


def judged(policy: ListenPolicy, cases: Sequence[ScoredCase], resamples: int = 1000, seed: int = SEED,
           confidence: float = CONFIDENCE) -> dict[str, Any]:
    """One setting of the model judged on a group it was not fitted on: its false cut-off rate and its latency
    (mean and median) there, against silence only set to the same false cut-off rate on the same silences (its
    shortest silence with a rate no higher), with a paired bootstrap interval of each ratio."""
    holds, eots = _holds_eots(cases)
    one = policy_sweep(MODEL, holds, eots, [policy.threshold], [policy.action_delay_ms], [policy.timeout_ms])
    silence = silence_sweep([d for d, _ in holds], len(eots))
    cut, lat = one.cut[0].astype(np.float64), one.latency_ms[0]
    s_cut = silence.cut.astype(np.float64)
    s_ms = np.asarray([s["timeout_ms"] for s in silence.settings], dtype=np.float64)

    def figures(wh: np.ndarray, we: np.ndarray) -> tuple[float, float, float, float | None]:
        """On holds and eots weighted `wh`, `we` (ones: the group itself; counts: a resample)."""
        rate = float(cut @ wh / wh.sum())
        mean = float(lat @ we / we.sum())
        median = float(np.median(np.repeat(lat, we.astype(int))))
        ok = np.flatnonzero(s_cut @ wh / wh.sum() <= rate + EPS)  # silence only at no more cut-offs
        return rate, mean, median, (None if ok.size == 0 else float(s_ms[ok].min()))

    n_h, n_e = len(holds), len(eots)
    rate, mean, median, base = figures(np.ones(n_h), np.ones(n_e))
    out: dict[str, Any] = {"setting": policy.to_dict(), "pauses": n_h, "ends": n_e,
                           "false_cutoff_rate": round(rate, 4), "latency_ms_mean": round(mean),
                           "latency_ms_median": round(median), "silence_only_ms_at_same_rate": base,
                           "ratio_mean": None if not base else round(mean / base, 3),
                           "ratio_median": None if not base else round(median / base, 3),
                           "ratio_mean_ci": None, "ratio_median_ci": None}
    if base is None or n_h < 2 or n_e < 2 or resamples <= 0:
        return out
    rng = np.random.default_rng(seed)
    rm, rd = [], []
    for _ in range(resamples):
        wh = np.bincount(rng.integers(0, n_h, n_h), minlength=n_h).astype(np.float64)
        we = np.bincount(rng.integers(0, n_e, n_e), minlength=n_e).astype(np.float64)
        _, m, md, b = figures(wh, we)
        if b:
            rm.append(m / b)
            rd.append(md / b)
    lo, hi = 100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2
    if len(rm) >= resamples / 2:
        out["ratio_mean_ci"] = [round(float(x), 3) for x in np.percentile(rm, [lo, hi])]
        out["ratio_median_ci"] = [round(float(x), 3) for x in np.percentile(rd, [lo, hi])]
    return out


def fitted_setting(cases: Sequence[ScoredCase], budget: float) -> ListenPolicy | None:
    """The model's setting reaching `budget` false cut-offs with the least mean latency on `cases`."""
    holds, eots = _holds_eots(cases)
    s = operating_points(policy_sweep(MODEL, holds, eots))["setting"][level_key(budget)]
    return None if s is None else ListenPolicy(s["threshold"], s["action_delay_ms"], s["timeout_ms"])


def fit_and_judge(by_group: dict[str, Sequence[ScoredCase]], budget: float = CUTOFF_BUDGETS[0],
                  resamples: int = 1000) -> dict[str, Any]:
    """Per group: the model's setting fitted there (least mean latency at `budget` false cut-offs) and that one
    setting judged on every group (`judged`; on its own group in-sample, on the others held out)."""
    out: dict[str, Any] = {}
    for g, cases in by_group.items():
        pol = fitted_setting(cases, budget)
        out[g] = {"setting": None if pol is None else pol.to_dict(),
                  "judged": {} if pol is None else {h: judged(pol, c, resamples) for h, c in by_group.items()}}
    return out
