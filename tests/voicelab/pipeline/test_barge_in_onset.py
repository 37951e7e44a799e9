"""The pause trigger's VAD (`LevelGatedVAD`): the model decides when the bot pauses, not a smoothed loudness.

The inner model is a stand-in that is sure of speech on any window with sound, so what is measured is the
analyzer's own timing: how many 32 ms windows after the caller's first sound it says SPEAKING.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams, VADState

from voicelab.pipeline.turns.barge_in_strategy import LevelGatedVAD

SR = 16000
WINDOW = 512  # Silero's window at 16 kHz


class SureOfSound(VADAnalyzer):
    """Confidence 1 on any window with a non-zero sample, 0 on digital silence; a 1-element array, as Silero's."""

    def __init__(self, params: VADParams) -> None:
        super().__init__(sample_rate=SR, params=params)
        self.windows = 0

    def num_frames_required(self) -> int:
        return WINDOW

    def voice_confidence(self, buffer: bytes) -> Any:
        self.windows += 1
        return np.array([1.0 if np.frombuffer(buffer, dtype=np.int16).any() else 0.0], dtype=np.float32)


def _noise(seconds: float, dbfs: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(int(seconds * SR))
    return np.round(x / x.std() * 32768 * 10 ** (dbfs / 20)).astype(np.int16)


async def _speaking_after_ms(vad: VADAnalyzer, sound: np.ndarray, lead_s: float = 0.96) -> float | None:
    """Feed lead_s of silence then `sound` in 20 ms frames; ms of sound before the VAD said SPEAKING.

    0.96 s is 30 model windows and 48 frames: the sound starts on a window's first sample."""
    x = np.concatenate([np.zeros(int(lead_s * SR), dtype=np.int16), sound])
    frame = SR // 50
    for i in range(0, x.size - frame + 1, frame):
        if await vad.analyze_audio(x[i:i + frame].tobytes()) == VADState.SPEAKING:
            return ((i + frame) / SR - lead_s) * 1000
    return None


def _vad(params: VADParams) -> VADAnalyzer:
    vad = SureOfSound(params)
    vad.set_sample_rate(SR)
    return vad


async def test_gated_vad_starts_on_the_models_start_window() -> None:
    params = VADParams(start_secs=0.064, stop_secs=0.2)  # the onset VAD's: two windows
    loud = _noise(1.0, -20.0)
    gated = LevelGatedVAD(_vad(params))
    plain = _vad(params)
    t_gated = await _speaking_after_ms(gated, loud)
    t_plain = await _speaking_after_ms(plain, loud)
    assert t_gated is not None and t_plain is not None
    # two windows of sound (64 ms) plus the wait for the 20 ms frame that completes the second window
    assert 64 <= t_gated <= 64 + 20
    # pipecat's smoothed 400 ms loudness holds the plain analyzer back by windows, not by frames
    assert t_plain - t_gated >= 2 * WINDOW / SR * 1000
    await gated.cleanup()
    await plain.cleanup()


async def test_gated_vad_ignores_sound_below_the_audibility_gate() -> None:
    params = VADParams(start_secs=0.064, stop_secs=0.2)
    inner = _vad(params)
    gated = LevelGatedVAD(inner)
    assert await _speaking_after_ms(gated, _noise(1.0, -50.0)) is None  # the model was sure; the floor says no
    assert inner.windows > 0  # the model still saw every window (its recurrent state follows the stream)
    assert await _speaking_after_ms(gated, _noise(0.5, -30.0, seed=1), lead_s=0.0) is not None
    await gated.cleanup()


def test_gated_vad_keeps_the_inner_windows_and_confidence() -> None:
    params = VADParams(confidence=0.6, start_secs=0.1, stop_secs=0.3)
    gated = LevelGatedVAD(_vad(params))
    assert gated.params.confidence == 0.6 and gated.params.start_secs == 0.1 and gated.params.stop_secs == 0.3
    assert gated.params.min_volume == 0.0  # replaced by the per-window floor
    assert gated.sample_rate == SR and gated.num_frames_required() == WINDOW
