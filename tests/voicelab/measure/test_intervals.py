"""Bootstrap intervals: coverage on known distributions, null safety, reproducibility, differences."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from voicelab.measure.intervals import (
    diff_interval,
    latency_stats,
    mean_stats,
    percentile_interval,
    proportion_stats,
    quantile_stat,
)

SIMS = 200
# a FAR-like skewed distribution (ms): median 600, a long right tail
FAR = stats.lognorm(s=0.5, scale=600.0)


def _coverage(q: float, n: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    true = FAR.ppf(q / 100)
    hits = 0
    for i in range(SIMS):
        x = FAR.rvs(size=n, random_state=rng)
        lo, hi = percentile_interval(x, q, seed=i, n_resamples=999)
        hits += lo <= true <= hi
    return hits / SIMS


@pytest.mark.slow
@pytest.mark.parametrize(("q", "n"), [(50, 40), (95, 150)])
def test_intervals_cover_the_true_percentile_about_95_percent(q: float, n: int) -> None:
    # 200 simulations: the binomial spread of a 95 % coverage is about +-1.5 points, hence the band
    assert 0.88 <= _coverage(q, n, seed=q) <= 0.99


def test_mean_interval_covers_the_true_mean() -> None:
    rng = np.random.default_rng(3)
    hits = sum(lo <= FAR.mean() <= hi for lo, hi in
               (mean_stats(FAR.rvs(size=60, random_state=rng), n_resamples=999, seed=i)["mean_ci"]
                for i in range(SIMS)))
    assert 0.88 <= hits / SIMS <= 0.99


def test_null_safe_and_shape() -> None:
    assert latency_stats([]) == {"p50": None, "p95": None, "n": 0, "p50_ci": None, "p95_ci": None}
    one = latency_stats([412.0, None])
    assert (one["p50"], one["n"], one["p50_ci"], one["p95_ci"]) == (412.0, 1, None, None)
    same = latency_stats([500.0] * 5)
    assert same["p50_ci"] == [500.0, 500.0] and same["p95_ci"] == [500.0, 500.0]
    s = latency_stats(FAR.rvs(size=50, random_state=np.random.default_rng(0)))
    assert s["p50_ci"][0] <= s["p50"] <= s["p50_ci"][1]
    assert s["p95_ci"][0] <= s["p95"] <= s["p95_ci"][1]
    assert mean_stats([]) == {"mean": None, "n": 0, "mean_ci": None}
    assert proportion_stats(0, 0) == {"rate": None, "n": 0, "rate_ci": None}


def test_seeded_intervals_are_reproducible() -> None:
    x = FAR.rvs(size=30, random_state=np.random.default_rng(1))
    assert latency_stats(x) == latency_stats(x)
    assert latency_stats(x, seed=1) != latency_stats(x, seed=2)


def test_proportion_wilson_interval_is_not_degenerate_at_the_edges() -> None:
    p = proportion_stats(10, 10)
    assert p["rate"] == 1.0 and p["rate_ci"][0] < 1.0 and p["rate_ci"][1] == 1.0
    lo, hi = proportion_stats(7, 10)["rate_ci"]
    assert lo < 0.7 < hi


def test_paired_difference_is_tighter_than_unpaired() -> None:
    rng = np.random.default_rng(5)
    turns = FAR.rvs(size=40, random_state=rng)  # each fixture turn has its own typical FAR
    a = turns + rng.normal(0, 20, turns.size)
    b = turns + 50 + rng.normal(0, 20, turns.size)
    p50 = quantile_stat(50)
    paired = diff_interval(a, b, p50, paired=True, n_resamples=999)
    unpaired = diff_interval(a, b, p50, paired=False, n_resamples=999)
    assert paired.ci[0] > 0  # a 50 ms shift over turn-to-turn noise of 20 ms: found when paired
    assert paired.ci[1] - paired.ci[0] < unpaired.ci[1] - unpaired.ci[0]
    assert diff_interval([1.0], [2.0, 3.0], p50).ci is None
    with pytest.raises(ValueError, match="differ in length"):
        diff_interval([1.0, 2.0], [1.0], p50, paired=True)
