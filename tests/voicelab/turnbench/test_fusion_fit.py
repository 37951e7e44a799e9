"""The fusion fit: hazard examples at every 100 ms of silence while the caller is still silent, labelled by the
stretch's point; the fit recovers which score separates ends from pauses."""

from __future__ import annotations

import numpy as np

from voicelab.turnbench.fusion_fit import STEP_S, examples, fit, weighing
from voicelab.turnbench.replay import Point, StopScores, Trace


def _trace(i: int, audio_end: float, audio_pause: float, gap_s: float) -> Trace:
    # speech 0.5-1.5 s, a pause of gap_s, speech again, the end at 3.0 + gap_s
    flags = np.zeros(400, dtype=bool)
    t_res = 1.5 + gap_s
    end = t_res + 1.0
    flags[int(0.5 / 0.032):int(1.5 / 0.032)] = True
    flags[int(t_res / 0.032):int(end / 0.032)] = True
    stop = lambda t, p: StopScores(t + 0.2, t, p, 0.0, "words", 0.5, 0.0, 0.0)  # noqa: E731
    starts = [0.7, t_res + 0.2]
    return Trace(f"c{i}", "x", 12.0, flags, [Point("pause", 1.5, t_res), Point("end", end)],
                 [stop(1.5, audio_pause), stop(end, audio_end)], starts)


def test_examples_stop_when_the_caller_goes_on_and_ends_run_to_the_limit() -> None:
    ex = examples([_trace(0, 0.9, 0.1, gap_s=0.75)])
    pauses = ex.y == 0
    # the pause: silences 0.2, 0.3, ... while speech end + s is before the VAD's confirmed restart (2.45 s)
    assert np.allclose(np.exp(ex.x[pauses, 3]), [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
    assert (ex.y == 1).sum() == round((3.0 - 0.2) / STEP_S) + 1
    assert ex.n_pauses == 1 and ex.n_ends == 1


def test_the_fit_weights_the_score_that_separates_ends_from_pauses() -> None:
    rng = np.random.default_rng(0)
    traces = [_trace(i, float(rng.uniform(0.6, 0.99)), float(rng.uniform(0.01, 0.4)), float(rng.uniform(0.3, 1.5)))
              for i in range(30)]
    w = weighing(fit(examples(traces)), theta=0.5, groups=["x"])
    assert w.w_audio > 0.5 and w.w_silence > 0
    assert w.evidence_silence_ms(0.95, 0.5)[0] < w.evidence_silence_ms(0.05, 0.5)[0]
