"""Dead air against false cut-offs: the trade-off curve of one strategy swept over its knob. Pure numpy.

The method of LiveKit's eot-bench (github.com/livekit/eot-bench): labelled points, each a true end of turn or a
pause inside a turn; a strategy is swept over its threshold; at each setting, the *false cut-off rate* is the
share of mid-turn pauses it declared an end, and the *dead air* is its delay after the true end of speech at
each true end (median and p95).

Reading figures off the curve:
- dead air at X % false cut-offs: among the settings whose false cut-off rate is <= X %, the one with the lowest
  median dead air (ties: the lower p95); its median and p95. None where no setting gets that low.
- false cut-offs at T ms: among the settings whose median dead air is <= T, the lowest false cut-off rate. None
  where no setting answers that fast.
The grid of settings is the strategy's own (fine enough that a step between settings moves the rate by less
than a point); no interpolation between settings, so every figure is one a real setting gives.

Intervals: a percentile bootstrap over the cases (pause points and end points resampled independently, seeded:
`voicelab.measure.intervals.SEED`), the whole curve recomputed per resample and the figure read off it again.
The project's `intervals` module bootstraps one statistic of one sample with BCa; a figure read off a swept
curve is a step function of two samples, for which BCa's jackknife is ill-defined, hence the plain percentile
method here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from voicelab.measure.intervals import CONFIDENCE, SEED

CUTOFF_LEVELS = (0.01, 0.02, 0.05, 0.10)
DELAY_LEVELS_MS = (300.0, 500.0, 800.0)


def level_key(x: float) -> str:
    return f"{round(x * 100)}%"


def ms_key(x: float) -> str:
    return f"{round(x)}ms"


@dataclass(frozen=True)
class Curve:
    """One strategy's sweep: per setting, the false cut-off rate and the dead air's median and p95 (ms)."""

    values: list[float]
    rate: np.ndarray  # (K,)
    p50: np.ndarray  # (K,)
    p95: np.ndarray  # (K,)
    n_pauses: int
    n_ends: int


def curve(values: Sequence[float], cut: np.ndarray, dead_ms: np.ndarray) -> Curve:
    """cut: (K, P) booleans (setting k declared an end at pause p); dead_ms: (K, E) dead air at each true end
    (`NEVER_MS` where the setting never ended the turn)."""
    cut = np.asarray(cut, dtype=bool).reshape(len(values), -1)
    dead = np.asarray(dead_ms, dtype=float).reshape(len(values), -1)
    rate = cut.mean(axis=1) if cut.shape[1] else np.full(len(values), np.nan)
    if dead.shape[1]:
        p50, p95 = np.percentile(dead, 50, axis=1), np.percentile(dead, 95, axis=1)
    else:
        p50 = p95 = np.full(len(values), np.nan)
    return Curve(list(values), rate, p50, p95, cut.shape[1], dead.shape[1])


def at_cutoff(c: Curve, level: float) -> tuple[int | None, float | None, float | None]:
    """(setting index, median, p95) of the fastest setting with a false cut-off rate <= level."""
    ok = np.flatnonzero((c.rate <= level + 1e-12) & (c.p50 < NEVER_MS / 10))
    if ok.size == 0:
        return None, None, None
    k = int(ok[np.lexsort((c.p95[ok], c.p50[ok]))[0]])
    return k, float(c.p50[k]), float(c.p95[k])


def at_delay(c: Curve, ms: float) -> tuple[int | None, float | None]:
    """(setting index, rate): the lowest false cut-off rate among settings with median dead air <= ms."""
    ok = np.flatnonzero(c.p50 <= ms)
    if ok.size == 0:
        return None, None
    k = int(ok[np.argmin(c.rate[ok])])
    return k, float(c.rate[k])


NEVER_MS = 1e7  # replay.NEVER_MS: a dead air this long means "never ended the turn"


def _r(x: float | None, nd: int = 0) -> float | None:
    if x is None or not np.isfinite(x) or x >= NEVER_MS / 10:
        return None
    return round(float(x), nd) if nd else float(round(float(x)))


def figures(c: Curve) -> dict[str, Any]:
    """The summary figures of a curve (ms rounded; rates to 4 places)."""
    p50, p95, knob = {}, {}, {}
    for lv in CUTOFF_LEVELS:
        k, a, b = at_cutoff(c, lv)
        p50[level_key(lv)], p95[level_key(lv)] = _r(a), _r(b)
        knob[level_key(lv)] = None if k is None else c.values[k]
    cut = {}
    for ms in DELAY_LEVELS_MS:
        _, r = at_delay(c, ms)
        cut[ms_key(ms)] = None if r is None else round(r, 4)
    return {"dead_air_p50_ms_at": p50, "dead_air_p95_ms_at": p95, "knob_at": knob, "false_cutoffs_at": cut}


def bootstrap(values: Sequence[float], cut: np.ndarray, dead_ms: np.ndarray, *, resamples: int = 1000,
              seed: int = SEED, confidence: float = CONFIDENCE, chunk: int = 100) -> dict[str, Any]:
    """Percentile intervals of every figure of `figures` (None where fewer than half the resamples give one)."""
    cut = np.asarray(cut, dtype=bool).reshape(len(values), -1)
    dead = np.asarray(dead_ms, dtype=float).reshape(len(values), -1)
    n_p, n_e = cut.shape[1], dead.shape[1]
    if n_p < 2 or n_e < 2:
        return {}
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {}
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        ip = rng.integers(0, n_p, size=(b, n_p))
        ie = rng.integers(0, n_e, size=(b, n_e))
        rates = cut[:, ip].mean(axis=2)  # (K, b)
        d = dead[:, ie]  # (K, b, E)
        p50s, p95s = np.percentile(d, 50, axis=2), np.percentile(d, 95, axis=2)
        for j in range(b):
            f = figures(Curve(list(values), rates[:, j], p50s[:, j], p95s[:, j], n_p, n_e))
            for group in ("dead_air_p50_ms_at", "dead_air_p95_ms_at", "false_cutoffs_at"):
                for key, v in f[group].items():
                    draws.setdefault(f"{group}/{key}", []).append(np.nan if v is None else float(v))
    lo_q, hi_q = 100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2
    out: dict[str, Any] = {}
    for name, xs in draws.items():
        group, key = name.split("/")
        a = np.asarray(xs)
        ok = a[np.isfinite(a)]
        ci = None if ok.size < resamples / 2 else [float(np.percentile(ok, lo_q)), float(np.percentile(ok, hi_q))]
        if ci is not None and group != "false_cutoffs_at":
            ci = [round(ci[0]), round(ci[1])]
        elif ci is not None:
            ci = [round(ci[0], 4), round(ci[1], 4)]
        out.setdefault(group.replace("_at", "_ci_at"), {})[key] = ci
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """Wilson score interval of a proportion k / n (None when n == 0)."""
    if n <= 0:
        return None
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, float(mid - half)), min(1.0, float(mid + half))


Sweep = tuple[list[float], np.ndarray, np.ndarray]


def _paired(a: tuple[Sequence[float], np.ndarray, np.ndarray], b: tuple[Sequence[float], np.ndarray, np.ndarray],
            who: str) -> tuple[Sweep, Sweep]:
    """Two sweeps as (values, cut (K, P), dead (K, E)) arrays; a ValueError naming `who` unless their points match."""
    (va, ca, da), (vb, cb, db) = [(list(v), np.asarray(c, dtype=bool).reshape(len(v), -1),
                                   np.asarray(d, dtype=float).reshape(len(v), -1)) for v, c, d in (a, b)]
    if ca.shape[1] != cb.shape[1] or da.shape[1] != db.shape[1]:
        raise ValueError(f"{who}: the two strategies were not swept over the same points")
    return (va, ca, da), (vb, cb, db)


def paired_ratio(a: tuple[Sequence[float], np.ndarray, np.ndarray], b: tuple[Sequence[float], np.ndarray, np.ndarray],
                 level: float, *, resamples: int = 1000, seed: int = SEED,
                 confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Strategy a's median dead air at `level` false cut-offs over strategy b's, on the same points: each given as
    (values, cut (K, P), dead (K, E)); the interval from resampling the points once for both (paired), the two
    curves recomputed and read again. ratio / ci None where a figure is missing (in over half the resamples)."""
    (va, ca, da), (vb, cb, db) = _paired(a, b, "paired_ratio")

    def ratio(ip: np.ndarray, ie: np.ndarray) -> float | None:
        xa = at_cutoff(curve(va, ca[:, ip], da[:, ie]), level)[1]
        xb = at_cutoff(curve(vb, cb[:, ip], db[:, ie]), level)[1]
        return None if xa is None or xb is None or xb <= 0 else xa / xb

    n_p, n_e = ca.shape[1], da.shape[1]
    point = ratio(np.arange(n_p), np.arange(n_e))
    out: dict[str, Any] = {"at": level_key(level), "ratio": None if point is None else round(point, 3), "ci": None}
    if point is None or n_p < 2 or n_e < 2 or resamples <= 0:
        return out
    rng = np.random.default_rng(seed)
    draws = [ratio(rng.integers(0, n_p, n_p), rng.integers(0, n_e, n_e)) for _ in range(resamples)]
    ok = np.asarray([d for d in draws if d is not None])
    if ok.size >= resamples / 2:
        lo, hi = np.percentile(ok, [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
        out["ci"] = [round(float(lo), 3), round(float(hi), 3)]
    return out


def matched_ratio(a: tuple[Sequence[float], np.ndarray, np.ndarray], default: float,
                  b: tuple[Sequence[float], np.ndarray, np.ndarray], *, resamples: int = 1000, seed: int = SEED,
                  confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Strategy a at its `default` setting against strategy b at the same false cut-off rate: a's median dead air
    there over b's least median dead air at a rate no higher than a's. Above 1, b reaches a's operating point
    with less dead air. Same points for both; the interval from resampling them once for both (paired)."""
    (va, ca, da), (vb, cb, db) = _paired(a, b, "matched_ratio")
    k = int(np.argmin([abs(v - default) for v in va]))

    def figures_at(ip: np.ndarray, ie: np.ndarray) -> tuple[float, float, float | None]:
        rate = float(ca[k, ip].mean())
        mine = float(np.percentile(da[k, ie], 50))
        theirs = at_cutoff(curve(vb, cb[:, ip], db[:, ie]), rate)[1]
        return rate, mine, theirs

    n_p, n_e = ca.shape[1], da.shape[1]
    rate, mine, theirs = figures_at(np.arange(n_p), np.arange(n_e))
    ratio = None if theirs is None or theirs <= 0 else mine / theirs
    out: dict[str, Any] = {"rate": round(rate, 4), "dead_air_p50_ms": _r(mine), "baseline_dead_air_p50_ms": _r(theirs),
                           "ratio": None if ratio is None else round(ratio, 3), "ci": None}
    if ratio is None or n_p < 2 or n_e < 2 or resamples <= 0:
        return out
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        _, m, t = figures_at(rng.integers(0, n_p, n_p), rng.integers(0, n_e, n_e))
        if t is not None and t > 0:
            draws.append(m / t)
    if len(draws) >= resamples / 2:
        lo, hi = np.percentile(draws, [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
        out["ci"] = [round(float(lo), 3), round(float(hi), 3)]
    return out
