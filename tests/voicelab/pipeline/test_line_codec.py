"""`run --line mulaw8k`: the caller's clips pass through the phone line's codec, timing kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voicelab.fixtures import load_fixture
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.pipeline.transport.line_codec import on_line, through_line

FIXTURES = Path(__file__).resolve().parents[3] / "audio_fixtures"


def _tone(hz: float, sr: int = 16000, s: float = 0.5) -> np.ndarray:
    t = np.arange(int(sr * s)) / sr
    return (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def test_speech_band_passes_with_the_codecs_error() -> None:
    x = _tone(440.0)
    y = through_line(x, 16000)
    assert y.dtype == np.float32 and y.size == x.size
    core = slice(800, -800)  # the resampler's edges aside
    err = y[core] - x[core]
    snr_db = 10 * np.log10(np.mean(x[core] ** 2) / np.mean(err ** 2))
    assert 25.0 < snr_db < 45.0  # G.711 µ-law: about 38 dB on a loud tone; never lossless


def test_what_a_line_cannot_carry_is_gone() -> None:
    y = through_line(_tone(6000.0), 16000)  # above the 4 kHz Nyquist limit of an 8 kHz line
    assert float(np.sqrt(np.mean(y[800:-800] ** 2))) < 0.01


def test_a_fixture_on_the_line_keeps_every_turns_timing_and_text() -> None:
    fx = load_fixture(FIXTURES / "single_question")
    heard = on_line(fx, "mulaw8k")
    assert on_line(fx, "direct") is fx
    assert [t.audio.size for t in heard.turns] == [t.audio.size for t in fx.turns]
    assert [(t.text, t.start, t.speech_onset_s) for t in heard.turns] == \
        [(t.text, t.start, t.speech_onset_s) for t in fx.turns]
    assert not np.array_equal(heard.turns[0].audio, fx.turns[0].audio)
    assert fx.turns[0].audio is not heard.turns[0].audio  # the loaded fixture itself is untouched


def test_the_config_names_the_line() -> None:
    assert PipelineConfig(line="mulaw8k").slug().endswith("-mulaw8k")
    assert "mulaw8k" not in PipelineConfig().slug()
    with pytest.raises(PipelineConfigError, match="line: 'gsm' is not one of direct, mulaw8k"):
        PipelineConfig(line="gsm")
