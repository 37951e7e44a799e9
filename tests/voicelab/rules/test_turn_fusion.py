"""The fitted weighing: its closed-form wait is the silence at which P(end) reaches theta, it is monotone in the
evidence and the operating point, and the rule runs it as it runs the hand table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voicelab.rules.turn_end import DecideTurnEnd, required_silence_ms
from voicelab.rules.turn_fusion import FusedWeighing, FusionWeightsError, load_weighing

W = FusedWeighing(bias=-1.0, w_audio=0.8, w_text=0.6, w_no_text=-0.3, w_silence=1.5, theta=0.6)
P = st.one_of(st.none(), st.floats(0.0, 1.0))


@given(P, P)
def test_the_wait_is_where_p_end_reaches_theta(audio: float | None, text: float | None) -> None:
    need, why = W.evidence_silence_ms(audio, text)
    assert W.floor_ms <= need <= W.cap_ms and "fused" in why
    if W.floor_ms < need < W.cap_ms:
        assert W.p_end(need, audio, text) == pytest.approx(W.theta, abs=1e-6)
        assert W.p_end(need * 0.9, audio, text) < W.theta


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.05, 0.95), st.floats(0.05, 0.95))
def test_more_evidence_or_a_lower_theta_never_waits_longer(a: float, t: float, more: float, th1: float,
                                                           th2: float) -> None:
    a2, t2 = min(1.0, a + more), min(1.0, t + more)
    assert W.evidence_silence_ms(a2, t)[0] <= W.evidence_silence_ms(a, t)[0]
    assert W.evidence_silence_ms(a, t2)[0] <= W.evidence_silence_ms(a, t)[0]
    lo, hi = sorted((th1, th2))
    assert W.at(lo).evidence_silence_ms(a, t)[0] <= W.at(hi).evidence_silence_ms(a, t)[0]


def test_the_resumed_pause_bound_applies_and_can_be_switched_off() -> None:
    need = required_silence_ms(0.9, 0.9, W)[0]
    assert required_silence_ms(0.9, 0.9, W, resumed_pause_ms=need + 500)[0] == pytest.approx(need + 500)
    off = FusedWeighing(**{**W.to_json(), "resumed_bound": False})
    assert required_silence_ms(0.9, 0.9, off, resumed_pause_ms=need + 500)[0] == pytest.approx(need)


def test_the_rule_ends_the_turn_at_the_fitted_wait_without_the_start_lag() -> None:
    rule = DecideTurnEnd(W, final_wait_s=1.0, start_secs=0.2)
    rule.vad_started(0.5, 0.2)
    rule.vad_stopped(2.2, 0.2)  # speech ended at 2.0
    rule.audio_scored(0.7)
    rule.final_heard(2.3, "what time do you open")
    rule.text_scored(0.9)
    need = W.evidence_silence_ms(0.7, 0.9)[0]
    assert rule.end_at_s(rule.verdict_from_s()) == pytest.approx(max(2.0 + need / 1000.0, 2.3))


def test_bad_weights_are_refused_with_the_file_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="w_silence"):
        FusedWeighing(bias=0, w_audio=0, w_text=0, w_no_text=0, w_silence=0.0)
    bad = tmp_path / "w.json"
    bad.write_text(json.dumps({"bias": 1}))
    with pytest.raises(FusionWeightsError, match="w.json"):
        load_weighing(bad)
    with pytest.raises(FusionWeightsError, match="no such"):
        load_weighing(tmp_path / "missing.json")


def test_the_shipped_weights_load_and_say_what_they_were_fitted_on() -> None:
    w = load_weighing()
    assert w.fitted_on["groups"] and "human" not in w.fitted_on["groups"]  # the conversational group stays out
    assert w.fitted_on["command"].startswith("python -m voicelab.turnbench.fusion_fit")
    assert math.isfinite(w.evidence_silence_ms(0.5, 0.5)[0])
