"""The words ceiling (voicelab.turnbench.ceiling): perfect words, no hesitation cue."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from voicelab.turnbench import curve as cv
from voicelab.turnbench.ceiling import ceiling_report, words_ceiling
from voicelab.turnbench.replay import Point, Trace


def _trace(i: int, kind: str | None, pause_ms: float) -> Trace:
    t = 1.0 + pause_ms / 1000.0
    return Trace(f"g{i}", "generated", 5.0, np.zeros(10, bool),
                 [Point("pause", 1.0, t), Point("end", t + 1.0)], [], [], {} if kind is None else {"kind": kind})


def test_the_ceiling_waits_out_only_complete_prefix_pauses() -> None:
    traces = [_trace(0, "complete", 500), _trace(1, "complete", 1500), _trace(2, "content", 2000),
              _trace(3, "function", 2500)]
    c = words_ceiling(traces)
    assert c is not None and c.n_pauses == 4 and c.n_ends == 4
    rate = dict(zip(c.values, c.rate, strict=True))
    assert rate[0.0] == 0.5 and rate[1000.0] == 0.25 and rate[1500.0] == 0.0
    f = cv.figures(c)
    # no setting cuts fewer than 25 % below 1500 ms; at 1500 it cuts none, and its dead air is the wait itself
    assert f["dead_air_p50_ms_at"]["5%"] == 1500 and f["dead_air_p95_ms_at"]["5%"] == 1500
    assert f["false_cutoffs_at"]["300ms"] == 0.5 and f["false_cutoffs_at"]["800ms"] == 0.25
    report = ceiling_report(traces)
    assert report is not None and report["complete_prefix_pauses"] == 2


def test_no_kinds_no_ceiling() -> None:
    assert words_ceiling([_trace(0, None, 500)]) is None and ceiling_report([]) is None


@given(st.lists(st.tuples(st.booleans(), st.floats(100, 2900)), min_size=1, max_size=40))
def test_the_ceiling_is_the_quantile_of_the_complete_prefix_pauses(pauses: list[tuple[bool, float]]) -> None:
    traces = [_trace(i, "complete" if c else "content", ms) for i, (c, ms) in enumerate(pauses)]
    c = words_ceiling(traces)
    assert c is not None
    lengths = [(tr.points[0].resume_s - tr.points[0].t_s) * 1000.0 for tr in traces]  # as the traces hold them
    for level in cv.CUTOFF_LEVELS:
        _, p50, _ = cv.at_cutoff(c, level)
        assert p50 is not None
        # the shortest 10 ms wait that leaves at most `level` of all pauses cut off
        need = next(w for w in range(0, 3001, 10)
                    if sum(cm and ms > w for (cm, _), ms in zip(pauses, lengths, strict=True)) <= level * len(pauses) + 1e-12)
        assert p50 == need
