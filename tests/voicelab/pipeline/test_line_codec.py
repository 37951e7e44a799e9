"""`run --line mulaw8k`: the caller's clips pass through the phone line's codec, timing kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voicelab.fixtures import load_fixture
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.pipeline.transport.line_codec import LineUpsampler, on_line, through_line

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


def test_the_live_lines_upsampler_streams_20_ms_at_a_time_with_2_ms_of_delay() -> None:
    sr_in, sr_out = 8000, 16000
    t = np.arange(sr_in) / sr_in
    x = (10000 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    chunked = LineUpsampler()
    y = np.concatenate([chunked(x[i:i + 160]) for i in range(0, x.size, 160)])
    assert y.dtype == np.int16 and y.size == 2 * x.size  # every chunk out at once, nothing held back
    assert np.array_equal(y, LineUpsampler()(x))  # chunking changes nothing: the filter's state carries over
    delay = (LineUpsampler().taps - 1) // 2
    assert delay / sr_out <= 0.002
    ref = 10000 * np.sin(2 * np.pi * 440 * (np.arange(y.size) - delay) / sr_out)
    core = slice(200, -200)
    assert np.abs(y[core] - ref[core]).max() < 50  # a speech-band tone passes: 50 in 10000
    high = (10000 * np.sin(2 * np.pi * 3000 * t)).astype(np.int16)
    image = LineUpsampler()(high).astype(float)  # 3 kHz in; its image at 5 kHz must be gone
    spec = np.abs(np.fft.rfft(image[400:-400]))
    freqs = np.fft.rfftfreq(image[400:-400].size, 1 / sr_out)
    assert spec[np.argmin(np.abs(freqs - 5000))] < 0.01 * spec[np.argmin(np.abs(freqs - 3000))]
