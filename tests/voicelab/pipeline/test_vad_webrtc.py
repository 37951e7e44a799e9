"""The webrtcvad analyzer: pipecat's VAD state machine driven by WebRTC's speech decisions."""

from __future__ import annotations

import numpy as np
import pytest
from pipecat.audio.vad.vad_analyzer import VADParams, VADState

from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture
from voicelab.pipeline.turns.vad_webrtc import WebrtcvadAnalyzer, WebrtcvadError

SR = 16000


def _speech() -> np.ndarray:
    fx_dir = FIXTURES_ROOT / "single_question"
    if not (fx_dir / "fixture.json").is_file():
        pytest.skip("audio_fixtures/single_question not built")
    fx = load_fixture(fx_dir)
    return (fx.turns[0].audio * 32767).astype(np.int16)


async def _states(vad: WebrtcvadAnalyzer, pcm: np.ndarray) -> list[VADState]:
    out = []
    for i in range(0, pcm.size - 320 + 1, 320):  # 20 ms frames, as the pipeline feeds them
        out.append(await vad.analyze_audio(pcm[i:i + 320].tobytes()))
    return out


async def test_speech_starts_and_stops() -> None:
    vad = WebrtcvadAnalyzer(sample_rate=SR, params=VADParams(start_secs=0.2, stop_secs=0.2))
    vad.set_sample_rate(SR)
    speech = _speech()
    pcm = np.concatenate([np.zeros(SR // 2, dtype=np.int16), speech, np.zeros(SR, dtype=np.int16)])
    states = await _states(vad, pcm)
    assert VADState.SPEAKING in states
    first = states.index(VADState.SPEAKING) * 0.02
    assert 0.5 < first < 0.5 + speech.size / SR  # not before the speech, during it
    assert states[-1] == VADState.QUIET


async def test_silence_is_quiet() -> None:
    vad = WebrtcvadAnalyzer(sample_rate=SR)
    vad.set_sample_rate(SR)
    states = await _states(vad, np.zeros(SR, dtype=np.int16))
    assert set(states) == {VADState.QUIET}
    assert vad.voice_confidence(b"\x00" * 10) == 0.0  # a partial frame is not speech


def test_bad_settings_name_the_field() -> None:
    with pytest.raises(WebrtcvadError, match="mode"):
        WebrtcvadAnalyzer(mode=7)
    with pytest.raises(WebrtcvadError, match="frame_ms"):
        WebrtcvadAnalyzer(frame_ms=25)
    vad = WebrtcvadAnalyzer()
    with pytest.raises(WebrtcvadError, match="sample_rate"):
        vad.set_sample_rate(22050)
