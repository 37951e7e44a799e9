"""The turn bench's pure half: the trade-off curve, the VAD replay, the strategies on a virtual clock, the case
generator and its data file, the barge-in replay. No models: every input is made up here."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicelab.rules.barge_in import PauseThresholds
from voicelab.rules.turn_end import TurnThresholds
from voicelab.turnbench import curve as cv
from voicelab.turnbench.bargein import replay_barge, summarise
from voicelab.turnbench.cases import (
    CORPUS_FILE,
    N_TURNS,
    PAUSE_RANGE_S,
    TURN_VOICES,
    corpus_document,
    load_corpus,
)
from voicelab.turnbench.replay import (
    NEVER_MS,
    WINDOW_S,
    DecideTurnEndReplay,
    Point,
    SmartReplay,
    StopScores,
    TimeoutReplay,
    Trace,
    VadParams,
    score_points,
    vad_events,
    window_seen_s,
)
from voicelab.turnbench.sentences import FUNCTION_WORDS, cut_sentence

# ---- curve ---------------------------------------------------------------------------------------------------


def test_figures_read_the_fastest_setting_under_each_level() -> None:
    values = [0.1, 0.2, 0.4, 0.8]
    # rates 20 %, 8 %, 3 %, 0 %; dead air grows with the setting
    cut = np.zeros((4, 100), bool)
    for k, n in enumerate((20, 8, 3, 0)):
        cut[k, :n] = True
    dead = np.array([[100.0] * 10, [200.0] * 10, [400.0] * 10, [800.0] * 10])
    f = cv.figures(cv.curve(values, cut, dead))
    assert f["dead_air_p50_ms_at"] == {"1%": 800, "2%": 800, "5%": 400, "10%": 200}
    assert f["knob_at"]["5%"] == 0.4
    assert f["false_cutoffs_at"] == {"300ms": 0.08, "500ms": 0.03, "800ms": 0.0}


def test_unreachable_levels_are_none() -> None:
    cut = np.ones((2, 10), bool)
    dead = np.full((2, 5), 1000.0)
    f = cv.figures(cv.curve([1.0, 2.0], cut, dead))
    assert f["dead_air_p50_ms_at"]["10%"] is None and f["false_cutoffs_at"]["300ms"] is None
    never = cv.figures(cv.curve([1.0], np.zeros((1, 4), bool), np.full((1, 4), NEVER_MS)))
    assert never["dead_air_p50_ms_at"]["1%"] is None  # a setting that never ends the turn is no answer


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 3000)), min_size=2, max_size=12), st.floats(0.005, 0.2))
def test_a_looser_level_never_costs_more_dead_air(rows: list[tuple[float, float]], level: float) -> None:
    rates = np.array([r for r, _ in rows])
    p50 = np.array([d for _, d in rows])
    c = cv.Curve(list(range(len(rows))), rates, p50, p50, 100, 100)
    _, a, _ = cv.at_cutoff(c, level)
    _, b, _ = cv.at_cutoff(c, level * 2)
    if a is not None:
        assert b is not None and b <= a


def test_bootstrap_brackets_the_point_figure() -> None:
    rng = np.random.default_rng(1)
    values = [0.2, 0.5, 1.0]
    cut = np.stack([rng.random(300) < p for p in (0.2, 0.06, 0.01)])
    dead = np.stack([rng.normal(m, 50, 300) for m in (300, 600, 1200)])
    point = cv.figures(cv.curve(values, cut, dead))["dead_air_p50_ms_at"]["10%"]
    ci = cv.bootstrap(values, cut, dead, resamples=200)["dead_air_p50_ms_ci_at"]["10%"]
    assert ci is not None and ci[0] <= point <= ci[1]


def _sweep(rng: np.random.Generator, scale: float) -> tuple[list[float], np.ndarray, np.ndarray]:
    values = [0.2, 0.5, 1.0]
    cut = np.stack([rng.random(200) < p for p in (0.2, 0.06, 0.01)])
    dead = np.stack([rng.normal(m, 50, 40) for m in (300, 600, 1200)])
    return values, cut, dead * scale


def test_a_strategy_over_itself_is_one_and_a_slower_copy_its_factor() -> None:
    values, cut, dead = _sweep(np.random.default_rng(2), 1.0)
    same = cv.paired_ratio((values, cut, dead), (values, cut, dead), 0.10, resamples=100)
    assert same == {"at": "10%", "ratio": 1.0, "ci": [1.0, 1.0]}  # paired: every resample reads both alike
    slower = cv.paired_ratio((values, cut, dead * 1.5), (values, cut, dead), 0.10, resamples=100)
    assert slower["ratio"] == pytest.approx(1.5) and slower["ci"] == pytest.approx([1.5, 1.5])
    never = cv.paired_ratio((values, np.ones_like(cut), dead), (values, cut, dead), 0.05, resamples=10)
    assert never["ratio"] is None and never["ci"] is None
    with pytest.raises(ValueError, match="same points"):
        cv.paired_ratio((values, cut[:, :10], dead), (values, cut, dead), 0.05)


def test_the_shipped_setting_against_a_baseline_at_the_same_rate() -> None:
    values, cut, dead = _sweep(np.random.default_rng(3), 1.0)
    same = cv.matched_ratio((values, cut, dead), 0.5, (values, cut, dead), resamples=50)
    assert same["ratio"] == 1.0 and same["ci"] == [1.0, 1.0] and same["rate"] == pytest.approx(cut[1].mean())
    # a baseline twice as quick at every setting: the shipped setting needs twice its dead air at that rate
    quick = cv.matched_ratio((values, cut, dead), 0.5, (values, cut, dead / 2), resamples=50)
    assert quick["ratio"] == pytest.approx(2.0) and quick["baseline_dead_air_p50_ms"] < quick["dead_air_p50_ms"]
    # a baseline that never gets as few cut-offs gives no ratio
    none = cv.matched_ratio((values, cut, dead), 1.0, (values, np.ones_like(cut), dead), resamples=10)
    assert none["ratio"] is None and none["ci"] is None
    with pytest.raises(ValueError, match="matched_ratio: .* same points"):
        cv.matched_ratio((values, cut[:, :10], dead), 0.5, (values, cut, dead))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.5, 3.0))
def test_the_paired_interval_brackets_the_ratio(seed: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    a, b = _sweep(rng, scale), _sweep(rng, 1.0)
    r = cv.paired_ratio((a[0], b[1], a[2]), b, 0.10, resamples=60, seed=seed)
    if r["ratio"] is not None and r["ci"] is not None:
        assert r["ci"][0] <= r["ratio"] + 1e-9 and r["ratio"] <= r["ci"][1] + 1e-9


def test_wilson() -> None:
    lo, hi = cv.wilson(20, 400)  # type: ignore[misc]
    assert lo == pytest.approx(0.0327, abs=1e-3) and hi == pytest.approx(0.0758, abs=1e-3)
    assert cv.wilson(0, 0) is None


# ---- the VAD and the strategies on a virtual clock ----------------------------------------------------------

def _flags(*runs: tuple[bool, int]) -> np.ndarray:
    return np.concatenate([np.full(n, v) for v, n in runs])


def test_vad_replay_follows_pipecats_counts() -> None:
    # 6 windows of speech start it (0.2 s / 32 ms, rounded); 6 of silence stop it; 5 do not
    f = _flags((False, 3), (True, 10), (False, 5), (True, 10), (False, 20))
    ev = vad_events(f)
    assert [e.kind for e in ev] == ["start", "stop"]
    assert ev[0].t_s == pytest.approx(window_seen_s(8))
    assert ev[1].t_s == pytest.approx(window_seen_s(28 + 5))
    assert ev[1].first_silent_s == pytest.approx(28 * WINDOW_S)
    # one speech window in the silence starts the count again
    f2 = _flags((True, 10), (False, 4), (True, 1), (False, 6))
    assert vad_events(f2, VadParams(start_secs=0.2))[-1].t_s == pytest.approx(window_seen_s(20))
    assert window_seen_s(0) == pytest.approx(0.04)  # a 32 ms window is seen with the 20 ms frame bringing it


def _trace(audio_p: float, text_p: float | None, pause_s: float = 1.0) -> Trace:
    """Speech 0.5-2.0 s, a pause, speech again for 1 s, then silence; scores at both VAD stops."""
    w = int(round(1 / WINDOW_S))
    a, b = int(0.5 / WINDOW_S), int(2.0 / WINDOW_S)
    c = b + int(pause_s / WINDOW_S)
    flags = np.zeros(int(8 / WINDOW_S), bool)
    flags[a:b] = True
    flags[c:c + w] = True
    ev = vad_events(flags)
    starts = [e.t_s for e in ev if e.kind == "start"]
    stops = [StopScores(e.t_s, e.first_silent_s or e.t_s, audio_p, 60.0, f"words {i}", text_p, 150.0, 5.0)
             for i, e in enumerate(x for x in ev if x.kind == "stop")]
    points = [Point("pause", b * WINDOW_S, c * WINDOW_S), Point("end", (c + w) * WINDOW_S)]
    return Trace("t", "generated", 8.0, flags, points, stops, starts)


def test_timeout_cuts_a_pause_longer_than_its_stop() -> None:
    t = _trace(0.9, 0.9, pause_s=1.0)
    s = TimeoutReplay()
    short = score_points(t, s.declarations(t, 0.2, False))
    long = score_points(t, s.declarations(t, 1.6, False))
    assert short.cut == [True] and long.cut == [False]
    assert long.dead_ms[0] > short.dead_ms[0] >= 190  # 6 windows of 32 ms


def test_smart_ends_on_its_threshold_or_its_fallback() -> None:
    t = _trace(0.7, None)
    s = SmartReplay()
    low, high = score_points(t, s.declarations(t, 0.5, False)), score_points(t, s.declarations(t, 0.8, False))
    assert low.cut == [True] and high.cut == [False]
    assert high.dead_ms[0] == pytest.approx(low.dead_ms[0] + 3000.0)  # its 3 s silence fallback


def test_decide_replays_the_rule() -> None:
    s = DecideTurnEndReplay()
    agree = _trace(0.9, 0.9, pause_s=0.3)
    o = score_points(agree, s.declarations(agree, 1.0, False))
    # both sure: the floor (200 ms) after the estimated speech end, but never before the caller's own
    # resumed pause (about 0.3 s + the VAD's lag), plus start_secs above the floor
    assert o.cut == [True]
    vetoed = _trace(0.9, 0.05)
    ov = score_points(vetoed, s.declarations(vetoed, 1.0, False))
    # vetoed: the words say cut off, the voice complete: `vetoed_ms` (+ start_secs) after the estimated speech end
    assert ov.cut == [False] and ov.dead_ms[0] > TurnThresholds().vetoed_ms
    halved = score_points(vetoed, s.declarations(vetoed, 0.5, False))
    assert halved.dead_ms[0] < ov.dead_ms[0]
    # pass times only delay
    assert score_points(vetoed, s.declarations(vetoed, 1.0, True)).dead_ms[0] >= ov.dead_ms[0]


def test_decide_gives_no_verdict_without_words() -> None:
    t = _trace(0.99, None)
    t.stops = [StopScores(x.t_s, x.first_silent_s, x.audio_p, 0, "", None, 0, 0) for x in t.stops]
    assert DecideTurnEndReplay().declarations(t, 1.0, False) == []


def test_points_take_the_first_declaration_of_their_stretch() -> None:
    t = _trace(0.9, 0.9)
    o = score_points(t, [2.5, 2.6, 4.1, 4.2], [3.3, 8.0])
    assert o.cut == [True] and o.dead_ms == [pytest.approx((4.1 - t.points[1].t_s) * 1000)]
    early = score_points(t, [3.5], [3.3, 8.0])
    assert early.premature == 1 and early.dead_ms == [0.0]
    assert score_points(t, [], [3.3, 8.0]).dead_ms == [NEVER_MS]


# ---- cases ---------------------------------------------------------------------------------------------------

def test_the_corpus_file_is_the_generators_output() -> None:
    doc = json.loads(CORPUS_FILE.read_text(encoding="utf-8"))
    assert doc == json.loads(json.dumps(corpus_document()))


def test_the_corpus_has_its_documented_shape() -> None:
    turns, barge = load_corpus()
    assert len(turns) == N_TURNS
    complete = sum(t.kind == "complete" for t in turns) / len(turns)
    assert complete >= 0.30  # the hard case: the words before the pause are a sentence
    assert all(PAUSE_RANGE_S[0] <= t.pause_s <= PAUSE_RANGE_S[1] for t in turns)
    assert {t.voice for t in turns} == {v for v, _, _ in TURN_VOICES}
    assert {t.line for t in turns} == {"clean", "phone", "noisy", "reverb"}
    for t in turns:
        last = t.prefix.split()[-1]
        assert (t.kind == "function") == (last in FUNCTION_WORDS) or t.kind == "complete"
    kinds = {b.kind for b in barge}
    assert kinds == {"backchannel", "interruption"} and any(b.reading == "i make him" for b in barge)


def test_the_sentence_source_is_not_the_shops_corpus() -> None:
    src = Path(__file__).resolve().parents[3] / "voicelab" / "turnbench" / "sentences.py"
    imports = [n for n in ast.walk(ast.parse(src.read_text())) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert not any("engines" in (getattr(n, "module", "") or "") for n in imports)
    import random
    rng = random.Random(0)
    kinds = [cut_sentence(rng, 0.4).kind for _ in range(500)]
    assert 0.35 < kinds.count("complete") / 500 < 0.45


# ---- barge-in ------------------------------------------------------------------------------------------------

def _barge(text: str, reading: str, p_int: float, p_comp: float, speech_s: float, kind: str) -> dict:
    n = int(4 / WINDOW_S)
    conf = np.zeros(n, np.float32)
    a = int(0.3 / WINDOW_S)
    conf[a:a + int(speech_s / WINDOW_S)] = 0.95
    return {"id": text, "group": "generated", "conf": conf, "vol": np.ones(n), "rms_dbfs": np.full(n, -20.0),
            "reading": {"text": reading, "ms": 150.0, "avg_logprob": -0.5, "reliable": True},
            "interruption_p": p_int, "complete_p": p_comp,
            "meta": {"kind": kind, "text": text, "onset_s": 0.3}}


def test_a_short_sound_misread_as_three_words_does_not_stop_the_bot() -> None:
    mhm = replay_barge(_barge("mhm", "i make him", 0.85, 0.01, 0.4, "backchannel"))
    assert mhm.action == "resume" and not mhm.false_barge_in
    legacy = PauseThresholds(sentence_words_per_s=None)  # the rule before: three words stop the bot
    assert replay_barge(_barge("mhm", "i make him", 0.85, 0.01, 0.4, "backchannel"), legacy).false_barge_in
    wait = replay_barge(_barge("wait", "wait", 1.0, 0.98, 0.4, "interruption"))
    assert wait.action == "stop" and 0 < (wait.paused_ms or 0) < 200
    long = replay_barge(_barge("can you check my", "can you check my", 1.0, 0.0, 1.0, "interruption"))
    assert long.action == "stop"
    s = summarise([mhm, wait, long])
    assert s["false_barge_ins"] == 0 and s["missed_interruptions"] == 0 and s["stop_latency_ms"]["n"] == 2
