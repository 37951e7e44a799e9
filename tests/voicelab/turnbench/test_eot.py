"""The eot mode's method (`voicelab.turnbench.eot`) against the rule it sweeps and against the labels alone."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicelab.rules.listen_through import STEP_MS, ListenPolicy, ListenPolicyError, ListenThrough, end_instant
from voicelab.turnbench import eot
from voicelab.turnbench.phone_calls import CALLS_DIR
from voicelab.turnbench.replay import Point

durations = st.lists(st.floats(0.1, 6.0, allow_nan=False), min_size=1, max_size=60)


def rederived_ms(hold_s: list[float], budget: float) -> float:
    """The shortest silence whose share of holds longer than it is at most `budget`, from the durations alone."""
    desc = sorted(hold_s, reverse=True)
    allowed = math.floor(budget * len(desc) + 1e-9)
    return 0.0 if allowed >= len(desc) else desc[allowed] * 1000.0


def bench_silence_ms(hold_s: list[float], budget: float) -> float | None:
    sw = eot.silence_sweep(hold_s, n_eots=3)
    return eot.operating_points(sw)["latency_ms_at"][eot.level_key(budget)]


def check_silence_only(hold_s: list[float]) -> None:
    for budget in eot.CUTOFF_BUDGETS:
        want = rederived_ms(hold_s, budget)
        got = bench_silence_ms(hold_s, budget)
        if want > eot.SILENCE_MS[-1] + 1e-6:
            assert got is None
            continue
        assert got is not None
        # equal to the grid's step: the first grid silence at or past the re-derived one
        assert want - 1e-6 <= got < max(want, eot.SILENCE_MS[0] - STEP_MS) + STEP_MS
        assert np.mean(np.asarray(hold_s) * 1000.0 > got + 1e-9) <= budget + 1e-9


@given(durations)
def test_silence_only_is_the_labels_quantile_to_the_grid_step(hold_s: list[float]) -> None:
    check_silence_only(hold_s)


@pytest.mark.skipif(not (CALLS_DIR / "labels.json").is_file(), reason="the phone calls are not here")
def test_silence_only_on_the_phone_calls_rederived_from_their_labels() -> None:
    doc = json.loads((CALLS_DIR / "labels.json").read_text(encoding="utf-8"))
    points = [Point(p["kind"], p["t_s"], p["resume_s"]) for c in doc["cases"] for p in c["points"]]
    holds = [sp.duration_s for sp in eot.spans_of(points) if sp.label == "hold"]
    assert len(holds) == sum(p.kind == "pause" for p in points)
    check_silence_only(holds)


scores = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=0, max_size=30)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.1, 4.0, allow_nan=False), scores), min_size=1, max_size=6),
       st.lists(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=30, max_size=30), min_size=1, max_size=4),
       st.data())
def test_the_sweep_is_the_rule_read_at_every_setting(holds: list[tuple[float, list[float]]],
                                                     eots: list[list[float]], data: st.DataObject) -> None:
    spans = [eot.SilenceSpan("hold", 0.0, d) for d, _ in holds]
    hold_scores = [np.asarray(s[:sp.instants], np.float32) for sp, (_, s) in zip(spans, holds, strict=True)]
    sw = eot.policy_sweep("m", [(d, s) for (d, _), s in zip(holds, hold_scores, strict=True)],
                          [np.asarray(e, np.float32) for e in eots])
    for k in data.draw(st.lists(st.integers(0, len(sw.settings) - 1), min_size=1, max_size=8)):
        pol = ListenPolicy(**sw.settings[k])
        for j, (sp, s) in enumerate(zip(spans, hold_scores, strict=True)):
            # past its last scored instant a hold gets no score; the timeout still runs
            padded = [*map(float, s), *[None] * (pol.timeout_ms // STEP_MS)]
            k_end = end_instant(padded, pol)
            assert k_end is not None
            assert sw.cut[k, j] == (sp.duration_s * 1000.0 > k_end * STEP_MS + 1e-9)
        for j, e in enumerate(eots):
            k_end = end_instant([float(x) for x in np.asarray(e, np.float32)], pol)
            assert k_end is not None and sw.latency_ms[k, j] == k_end * STEP_MS


def test_operating_points_pick_the_fastest_setting_within_the_budget() -> None:
    # one hold of 0.45 s; a model that reaches 0.9 at the eot's first instant and 0.6 on the hold's third
    holds = [(0.45, np.asarray([0.1, 0.2, 0.6, 0.3], np.float32))]
    eots = [np.asarray([0.9] * 30, np.float32), np.asarray([0.2] * 29 + [0.95], np.float32)]
    pts = eot.operating_points(eot.policy_sweep("m", holds, eots))
    # no cut-off: threshold above 0.6 (or an action delay past the hold); the second eot waits for its timeout
    s5 = pts["setting"]["5%"]
    assert s5["false_cutoff_rate"] == 0.0
    assert pts["latency_ms_at"]["5%"] == round((100 + 500) / 2)
    assert s5["threshold"] > 0.6 and s5["action_delay_ms"] == 100 and s5["timeout_ms"] == 500
    # the same setting answers within 300 ms on average, without a cut-off; within 200 ms only by cutting
    assert pts["false_cutoffs_at_ms"]["300"] == 0.0
    assert pts["setting"]["300"]["mean_latency_ms"] == 300
    pts200 = eot.operating_points(eot.policy_sweep("m", holds, eots[:1] * 3 + [eots[1]]))
    assert pts200["latency_ms_at"]["5%"] == round((3 * 100 + 500) / 4)


def test_bootstrap_is_seeded_and_brackets_a_figure() -> None:
    rng = np.random.default_rng(3)
    holds = [(float(d), rng.random(min(29, max(0, math.ceil(d * 10) - 1))).astype(np.float32))
             for d in rng.uniform(0.1, 2.0, 80)]
    eots = [np.clip(rng.random(30) + 0.3, 0, 1).astype(np.float32) for _ in range(20)]
    sw = eot.policy_sweep("m", holds, eots)
    a, b = eot.bootstrap(sw, resamples=200), eot.bootstrap(sw, resamples=200)
    assert a == b
    lo, hi = a["latency_ms_ci_at"]["10%"]
    assert lo <= hi
    assert lo <= eot.operating_points(sw)["latency_ms_at"]["10%"] <= hi + STEP_MS


def test_spans_hold_until_the_speaker_goes_on_and_the_end_runs_to_the_longest_timeout() -> None:
    spans = eot.spans_of([Point("pause", 1.0, 1.35), Point("pause", 2.0, 2.1), Point("end", 3.0)])
    assert [(s.label, s.instants) for s in spans] == [("hold", 3), ("hold", 0), ("eot", eot.END_SCORED_MS // STEP_MS)]


def test_the_rule_latches_a_reached_threshold_until_the_action_delay() -> None:
    pol = ListenPolicy(threshold=0.5, action_delay_ms=300, timeout_ms=1000)
    assert end_instant([0.9, 0.1, 0.1], pol) == 3  # reached at 100 ms, acted on at 300 ms
    assert end_instant([0.1] * 12, pol) == 10  # the timeout
    assert end_instant([0.1, 0.2], pol) is None  # the caller spoke first
    rule = ListenThrough(pol)
    rule.silence_started()
    rule.scored(1, 0.9)
    rule.silence_started()  # a new silence forgets the last one's score
    assert not rule.scored(3, 0.1)
    with pytest.raises(ValueError):
        rule.scored(2, 0.1)
    with pytest.raises(ListenPolicyError):
        ListenPolicy(threshold=0.5, action_delay_ms=900, timeout_ms=500)
    with pytest.raises(ListenPolicyError):
        ListenPolicy(threshold=1.5)


def test_paired_ratio_of_a_strategy_over_itself_is_one() -> None:
    rng = np.random.default_rng(5)
    holds = [(float(d), rng.random(min(29, max(0, math.ceil(d * 10) - 1))).astype(np.float32))
             for d in rng.uniform(0.1, 2.0, 60)]
    eots = [np.clip(rng.random(30) + 0.3, 0, 1).astype(np.float32) for _ in range(15)]
    model = eot.policy_sweep("m", holds, eots)
    silence = eot.silence_sweep([d for d, _ in holds], len(eots))
    same = eot.paired_ratio(model, model, 0.10, resamples=100)
    assert same["ratio"] == 1.0 and same["ci"] == [1.0, 1.0]
    r = eot.paired_ratio(model, silence, 0.10, resamples=100)
    want = eot.operating_points(model)["latency_ms_at"]["10%"] / eot.operating_points(silence)["latency_ms_at"]["10%"]
    assert r["ratio"] == pytest.approx(want, abs=0.01)


def test_the_listen_kind_s_spec_is_its_policy() -> None:
    from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
    from voicelab.rules.listen_through import DEFAULT_POLICY, parse_policy

    assert parse_policy("") == DEFAULT_POLICY
    assert parse_policy("0.5:200:3000") == ListenPolicy(0.5, 200, 3000)
    assert PipelineConfig(turn="listen:0.5:200:3000").turn_spec().kind == "listen"
    for bad in ("listen:0.5", "listen:0.5:250:3000", "listen:2:200:3000", "listen:0.5:900:500", "listen:a:b:c"):
        with pytest.raises(PipelineConfigError, match="turn: 'listen"):
            PipelineConfig(turn=bad)


def test_the_listen_replay_ends_at_the_rule_s_instant_unless_the_caller_goes_on() -> None:
    from types import SimpleNamespace

    from voicelab.pipeline.turns.listen_through_strategy import ListenReplay

    stop = SimpleNamespace(t_s=2.0, smart_ms=60.0)  # the VAD stop: speech ended at 1.8 s
    pol = ListenPolicy(0.5, 500, 1500)
    rising = np.asarray([0.1, 0.2, 0.6, 0.7, 0.9], np.float32)  # at 200, 300, 400, 500, 600 ms of silence
    trace = SimpleNamespace(id="c", stops=[stop], starts=[0.5], listen=[rising])
    replay = ListenReplay(policy=pol)
    assert replay.declarations(trace, 0.5, False) == pytest.approx([1.8 + 0.5])  # reached at 400, acted at 500
    assert replay.declarations(trace, 0.95, False) == pytest.approx([1.8 + 1.5])  # never reached: the timeout
    assert replay.declarations(trace, 0.5, True) == pytest.approx([1.8 + 0.5 + 0.06])
    went_on = SimpleNamespace(id="c", stops=[stop], starts=[0.5, 2.25], listen=[rising[:2]])
    assert replay.declarations(went_on, 0.5, False) == []


def _cases(seed: int, n: int) -> list[eot.ScoredCase]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        spans = [eot.SilenceSpan("hold", 1.0, float(rng.uniform(0.1, 2.0))), eot.SilenceSpan("eot", 3.0, math.inf)]
        scores = [rng.random(spans[0].instants).astype(np.float32) * 0.7,
                  np.clip(rng.random(30) + 0.2, 0, 1).astype(np.float32)]
        out.append(eot.ScoredCase(f"c{i}", "g", spans, scores))
    return out


def test_a_setting_judged_on_its_own_group_gives_its_operating_point() -> None:
    cases = _cases(7, 60)
    pol = eot.fitted_setting(cases, 0.10)
    assert pol is not None
    j = eot.judged(pol, cases, resamples=100)
    holds, ends = eot._holds_eots(cases)
    pts = eot.operating_points(eot.policy_sweep("m", holds, ends))
    assert j["false_cutoff_rate"] <= 0.10 and j["latency_ms_mean"] == pts["latency_ms_at"]["10%"]
    silence = eot.operating_points(eot.silence_sweep([d for d, _ in holds], len(ends)))
    # silence only at the same rate answers no faster than at the 10 % budget itself (the rate is <= 10 %)
    assert j["silence_only_ms_at_same_rate"] >= silence["latency_ms_at"]["10%"]
    assert j["ratio_mean_ci"][0] <= j["ratio_mean"] <= j["ratio_mean_ci"][1] + 0.05


def test_the_median_is_read_at_the_setting_the_mean_chooses() -> None:
    holds = [(0.45, np.asarray([0.1, 0.2, 0.6, 0.3], np.float32))]
    # two ends crossing at once, one never: the mean pays the timeout, the median does not
    eots = [np.asarray([0.9] * 30, np.float32)] * 2 + [np.asarray([0.2] * 30, np.float32)]
    pts = eot.operating_points(eot.policy_sweep("m", holds, eots))
    assert pts["latency_ms_at"]["5%"] == round((100 + 100 + 500) / 3)
    assert pts["latency_median_ms_at"]["5%"] == 100


def test_each_group_s_fit_is_judged_on_every_group() -> None:
    by = {"a": _cases(7, 40), "b": _cases(8, 40)}
    out = eot.fit_and_judge(by, 0.10, resamples=50)
    for g in by:
        assert set(out[g]["judged"]) == {"a", "b"}
        own = out[g]["judged"][g]
        assert own["false_cutoff_rate"] <= 0.10 and own["setting"] == out[g]["setting"]
