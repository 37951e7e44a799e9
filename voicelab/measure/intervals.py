"""Bootstrap 95 % intervals for the figures of a run, and for the difference between two runs.

Pure: numpy and SciPy (`scipy.stats.bootstrap`, BCa by default, seeded), no pipecat, no torch. It lives
under `voicelab.measure` beside `metrics`, which calls it for every percentile of summary.json
(`voicelab.analysis` imports metrics, so metrics cannot import from there).

- `latency_stats(values)`: {"p50", "p95", "n", "p50_ci": [lo, hi], "p95_ci": [lo, hi]}; the intervals are
  None when n < 2 (one turn says nothing about the spread).
- `mean_stats(values)`, `proportion_stats(successes, n)`: a mean with its bootstrap interval; a proportion
  with its Wilson interval (a bootstrap of all-zero or all-one outcomes collapses to a point).
- `ratio_interval(num, den)`: sum over sum (a corpus word error rate), the pairs resampled together.
- `diff_interval(a, b, stat)`: the statistic of b minus that of a with its interval; `paired=True` resamples
  the pairs (a[i], b[i]) together (the same fixture turn in both runs), which removes the spread between
  turns from the difference.

Percentiles interpolate linearly between order statistics, as `voicelab.measure.metrics.percentile` does.
An upper percentile of few samples is hard to pin down: with under ~60 values the p95 interval covers the
truth less often than 95 % (it cannot reach past the largest value seen).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
RESAMPLES = 2000  # enough for stable 95 % bounds at the lab's sample sizes; tests pass fewer
SEED = 0  # summaries are reproducible: the same turns give the same intervals

Statistic = Callable[..., Any]


def _r(x: float | None, nd: int = 1) -> float | None:
    return None if x is None else round(float(x), nd)


def quantile_stat(q: float) -> Statistic:
    """A vectorised q-th percentile (0..100), linear between order statistics."""
    def stat(x: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.percentile(x, q, axis=axis)
    return stat


def mean_stat(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def _clean(values: Sequence[float | None]) -> np.ndarray:
    return np.asarray([float(v) for v in values if v is not None and not np.isnan(float(v))], dtype=float)


def _bootstrap(data: tuple[np.ndarray, ...], stat: Statistic, paired: bool, seed: int, n_resamples: int,
               confidence: float, method: str) -> tuple[float, float]:
    def run(m: str) -> tuple[float, float]:
        with warnings.catch_warnings():  # a degenerate resample (ties) warns; the NaN it gives is handled below
            warnings.simplefilter("ignore")
            res = stats.bootstrap(data, stat, n_resamples=n_resamples, paired=paired, vectorized=True,
                                  confidence_level=confidence, method=m, rng=np.random.default_rng(seed))
        lo, hi = res.confidence_interval
        return float(lo), float(hi)

    lo, hi = run(method)
    if (np.isnan(lo) or np.isnan(hi)) and method != "percentile":
        lo, hi = run("percentile")  # BCa's jackknife fails on heavily tied samples; percentile does not
    return lo, hi


def interval(values: Sequence[float | None], stat: Statistic, *, seed: int = SEED, n_resamples: int = RESAMPLES,
             confidence: float = CONFIDENCE, method: str = "BCa") -> tuple[float, float] | None:
    """The bootstrap interval of `stat` over `values`; None for fewer than two values."""
    x = _clean(values)
    if x.size < 2:
        return None
    if np.ptp(x) == 0:  # every value the same: every resample gives it
        v = float(stat(x))
        return v, v
    return _bootstrap((x,), stat, False, seed, n_resamples, confidence, method)


def ratio_interval(numerators: Sequence[float], denominators: Sequence[float], *, seed: int = SEED,
                   n_resamples: int = RESAMPLES, confidence: float = CONFIDENCE,
                   method: str = "BCa") -> tuple[float, float] | None:
    """The bootstrap interval of sum(numerators) / sum(denominators), the pairs resampled together (a corpus word
    error rate: each utterance's errors over its reference words); None for fewer than two pairs."""
    if len(numerators) != len(denominators):
        raise ValueError(f"ratio: {len(numerators)} numerators, {len(denominators)} denominators")
    num, den = np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float)
    if num.size < 2:
        return None

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.sum(x, axis=axis) / np.maximum(np.sum(y, axis=axis), 1e-12)

    if np.ptp(num / np.maximum(den, 1e-12)) == 0:  # every pair in the same proportion: every resample gives it
        v = float(ratio(num, den))
        return v, v
    return _bootstrap((num, den), ratio, True, seed, n_resamples, confidence, method)


def percentile_interval(values: Sequence[float | None], q: float, **kw: Any) -> tuple[float, float] | None:
    return interval(values, quantile_stat(q), **kw)


def _ci(pair: tuple[float, float] | None, nd: int = 1) -> list[float | None] | None:
    return None if pair is None else [_r(pair[0], nd), _r(pair[1], nd)]


def latency_stats(values: Sequence[float | None], **kw: Any) -> dict[str, Any]:
    """{"p50", "p95", "n", "p50_ci", "p95_ci"} in ms; figures None without values, intervals None when n < 2."""
    x = _clean(values)
    if x.size == 0:
        return {"p50": None, "p95": None, "n": 0, "p50_ci": None, "p95_ci": None}
    return {"p50": _r(np.percentile(x, 50)), "p95": _r(np.percentile(x, 95)), "n": int(x.size),
            "p50_ci": _ci(percentile_interval(x, 50, **kw)), "p95_ci": _ci(percentile_interval(x, 95, **kw))}


def mean_stats(values: Sequence[float | None], nd: int = 3, **kw: Any) -> dict[str, Any]:
    """{"mean", "n", "mean_ci"}; None figures without values, interval None when n < 2."""
    x = _clean(values)
    if x.size == 0:
        return {"mean": None, "n": 0, "mean_ci": None}
    return {"mean": _r(np.mean(x), nd), "n": int(x.size), "mean_ci": _ci(interval(x, mean_stat, **kw), nd)}


def proportion_stats(successes: int, n: int, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """{"rate", "n", "rate_ci"}: a share of successes with its Wilson score interval (None when n == 0)."""
    if n <= 0:
        return {"rate": None, "n": 0, "rate_ci": None}
    ci = stats.binomtest(int(successes), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return {"rate": _r(successes / n, 3), "n": int(n), "rate_ci": [_r(ci.low, 3), _r(ci.high, 3)]}


# ---- differences -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Difference:
    """stat(b) - stat(a) with its interval (None when either side has fewer than two values)."""

    a: float | None
    b: float | None
    diff: float | None
    ci: tuple[float, float] | None
    paired: bool
    n_a: int
    n_b: int


def diff_interval(a: Sequence[float], b: Sequence[float], stat: Statistic, *, paired: bool = False,
                  seed: int = SEED, n_resamples: int = RESAMPLES, confidence: float = CONFIDENCE,
                  method: str = "BCa") -> Difference:
    """The difference stat(b) - stat(a) and its bootstrap interval.

    paired=True needs len(a) == len(b), a[i] and b[i] being the same item (fixture turn) measured twice:
    the pairs are resampled together (a pair missing either value is dropped). Otherwise each sample is
    resampled on its own.
    """
    if paired:
        if len(a) != len(b):
            raise ValueError(f"paired samples differ in length ({len(a)} and {len(b)})")
        keep = [i for i in range(len(a)) if _clean([a[i]]).size and _clean([b[i]]).size]  # both measured
        a, b = [a[i] for i in keep], [b[i] for i in keep]
    xa, xb = _clean(a), _clean(b)
    va = float(stat(xa)) if xa.size else None
    vb = float(stat(xb)) if xb.size else None
    d = None if va is None or vb is None else vb - va
    if xa.size < 2 or xb.size < 2:
        return Difference(va, vb, d, None, paired, int(xa.size), int(xb.size))

    def delta(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return stat(y, axis=axis) - stat(x, axis=axis)

    if np.ptp(xa) == 0 and np.ptp(xb) == 0:
        ci: tuple[float, float] = (float(d), float(d))  # type: ignore[arg-type]
    else:
        ci = _bootstrap((xa, xb), delta, paired, seed, n_resamples, confidence, method)
    return Difference(va, vb, d, ci, paired, int(xa.size), int(xb.size))
