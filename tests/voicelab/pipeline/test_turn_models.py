"""`voicelab.pipeline.turns.turn_models`: analyzers around shared Silero / smart-turn sessions score as pipecat's own
do, keep their state per stream (interleaved and concurrent streams), and the strategies built with shared
models open no model of their own."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from pipecat.audio.turn.smart_turn.base_smart_turn import SmartTurnParams
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams

import voicelab.pipeline.turns.barge_in_strategy as barge_in
from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.turns.barge_in_strategy import PauseThenDecide
from voicelab.pipeline.turns.factory import turn_strategies, vad_analyzer
from voicelab.pipeline.turns.turn_end_strategy import DecideTurnEndStopStrategy
from voicelab.pipeline.turns.turn_models import TurnModels

SR = 16000
WINDOW = 512  # Silero's window at 16 kHz


def _turns() -> list[np.ndarray]:
    """The caller's turns of a fixture with silence around them, int16 at 16 kHz."""
    fx_dir = FIXTURES_ROOT / "barge_in_early"
    if not (fx_dir / "fixture.json").is_file():
        pytest.skip("audio_fixtures/barge_in_early not built")
    pad = np.zeros(SR // 4, dtype=np.int16)
    return [np.concatenate([pad, (t.audio * 32767).astype(np.int16), pad]) for t in load_fixture(fx_dir).turns]


def _confidences(vad: VADAnalyzer, pcm: np.ndarray) -> list[float]:
    return [float(np.asarray(vad.voice_confidence(pcm[i:i + WINDOW].tobytes())).item())
            for i in range(0, pcm.size - WINDOW + 1, WINDOW)]


def _silero(models: TurnModels | None) -> VADAnalyzer:
    vad = SileroVADAnalyzer(sample_rate=SR) if models is None else models.silero_vad(sample_rate=SR)
    vad.set_sample_rate(SR)
    return vad


@pytest.fixture(scope="module")
def models() -> TurnModels:
    return TurnModels()


def test_shared_silero_scores_as_its_own_model_and_keeps_state_per_stream(models: TurnModels) -> None:
    a, b = _turns()[:2]
    solo_a, solo_b = _confidences(_silero(None), a), _confidences(_silero(None), b)
    assert max(solo_a) > 0.5 and min(solo_a) < 0.1  # speech and silence: the recurrent state matters

    # two streams on one session, window by window in turn: each must score as if alone
    va, vb = _silero(models), _silero(models)
    assert va._model.session is vb._model.session is models.silero_session()
    got_a: list[float] = []
    got_b: list[float] = []
    for i in range(0, max(a.size, b.size) - WINDOW + 1, WINDOW):
        if i + WINDOW <= a.size:
            got_a += _confidences(va, a[i:i + WINDOW])
        if i + WINDOW <= b.size:
            got_b += _confidences(vb, b[i:i + WINDOW])
    np.testing.assert_allclose(got_a, solo_a, atol=1e-5)
    np.testing.assert_allclose(got_b, solo_b, atol=1e-5)


def test_shared_silero_from_threads_at_once(models: TurnModels) -> None:
    turns = _turns()
    solo = [_confidences(_silero(None), pcm) for pcm in turns]
    got: list[list[float]] = [[] for _ in turns]
    start = threading.Barrier(len(turns))

    def run(k: int) -> None:
        vad = _silero(models)
        start.wait()  # the streams run on the one session at the same time
        got[k] = _confidences(vad, turns[k])

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(turns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(len(turns)):
        np.testing.assert_allclose(got[k], solo[k], atol=1e-5)


def test_shared_smart_turn_predicts_as_its_own_model(models: TurnModels) -> None:
    params = SmartTurnParams(stop_secs=2.0)
    own = LocalSmartTurnAnalyzerV3(params=params)
    shared = models.smart_turn(params=params)
    assert shared._session is models.smart_turn_session() and shared.params.stop_secs == 2.0
    for pcm in _turns():
        audio = pcm.astype(np.float32) / 32768.0
        assert shared._predict_endpoint(audio) == pytest.approx(own._predict_endpoint(audio), abs=1e-5)


def test_strategies_on_shared_models_load_no_model_of_their_own(models: TurnModels,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = PipelineConfig(barge_in="pause", turn="decide")
    loads: list[Any] = []
    monkeypatch.setattr(barge_in, "load_decision_model", lambda *a, **k: loads.append(a) or None)

    class Decision:  # the turn end's decision model, as the pool passes it
        def ask(self, task: str, text: str) -> Any:
            return type("D", (), {"p_yes": 0.9 if task == "interruption" else 0.1})()

    built = [turn_strategies(cfg, decision=Decision(), models=models) for _ in range(2)]  # type: ignore[arg-type]
    for s in built:
        pause, stop = s.start[0], s.stop[0]
        assert isinstance(pause, PauseThenDecide) and isinstance(stop, DecideTurnEndStopStrategy)
        assert pause.judge_name == "decision_model" and pause.judge("stop please") == 0.9
        onset = pause._onset_vad
        inner = getattr(onset, "_inner", onset)  # the onset VAD may be wrapped (barge_in.LevelGatedVAD)
        assert inner._model.session is models.silero_session()
        assert stop._analyzer._session is models.smart_turn_session()
    assert built[0].start[0]._onset_vad is not built[1].start[0]._onset_vad  # the state is per call
    assert loads == []
    vad = vad_analyzer(cfg, models)
    assert isinstance(vad, SileroVADAnalyzer) and vad._model.session is models.silero_session()
    assert vad.params == VADParams(start_secs=cfg.vad_start_secs, stop_secs=cfg.vad_stop_secs)
