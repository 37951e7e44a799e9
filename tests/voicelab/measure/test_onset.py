"""The onset rule of docs/metrics.md (voicelab/onset.py)."""

from __future__ import annotations

import numpy as np
import pytest

from voicelab.measure.onset import (
    OnsetRule,
    active_windows,
    first_onset,
    last_audible,
    onsets,
    segments,
    speech_span,
)

SR = 16000


def tone(seconds: float, dbfs: float = -12.0, hz: float = 220.0, sr: int = SR) -> np.ndarray:
    t = np.arange(round(seconds * sr)) / sr
    # RMS of a sine is peak/sqrt(2): scale so the RMS sits at dbfs
    return (np.sqrt(2) * 10 ** (dbfs / 20) * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def silence(seconds: float, sr: int = SR) -> np.ndarray:
    return np.zeros(round(seconds * sr), dtype=np.float32)


def cat(*parts: np.ndarray) -> np.ndarray:
    return np.concatenate(parts)


def test_silence_has_no_onset() -> None:
    x = silence(1.0)
    assert onsets(x, SR) == []
    assert speech_span(x, SR) is None
    assert first_onset(x, SR) is None


def test_burst_edges_within_half_a_window() -> None:
    x = cat(silence(0.5), tone(0.5), silence(0.5))
    span = speech_span(x, SR)
    assert span is not None
    on, off = span
    # the 10 ms window hears the burst up to 5 ms before its centre reaches it
    assert 0.494 <= on <= 0.5
    assert 1.0 <= off <= 1.006


def test_below_gate_is_silence() -> None:
    x = cat(silence(0.2), tone(0.5, dbfs=-45.0), silence(0.2))
    assert speech_span(x, SR) is None
    y = cat(silence(0.2), tone(0.5, dbfs=-35.0), silence(0.2))
    assert speech_span(y, SR) is not None


def test_dc_offset_carries_no_energy() -> None:
    assert speech_span(np.full(SR, 0.5, dtype=np.float32), SR) is None


def test_short_blip_is_not_an_onset() -> None:
    blip = cat(silence(0.3), tone(0.03), silence(0.3))
    assert onsets(blip, SR) == []
    # a blip just before speech does not move the onset either
    x = cat(silence(0.3), tone(0.02), silence(0.1), tone(0.4), silence(0.3))
    on = onsets(x, SR)
    assert len(on) == 1 and 0.414 <= on[0] <= 0.42


def test_short_pauses_join_long_ones_split() -> None:
    x = cat(silence(0.2), tone(0.3), silence(0.1), tone(0.3), silence(0.6), tone(0.3), silence(0.2))
    segs = segments(x, SR)
    assert len(segs) == 2
    assert segs[0][0] == pytest.approx(0.2, abs=0.006)
    assert segs[0][1] == pytest.approx(0.9, abs=0.006)
    assert segs[1][0] == pytest.approx(1.5, abs=0.006)
    span = speech_span(x, SR)
    assert span is not None and span[1] == pytest.approx(1.8, abs=0.006)
    assert len(segments(x, SR, min_gap_s=0.05)) == 3


def test_short_final_sound_counts_for_the_offset() -> None:
    # a 20 ms plosive 60 ms after the vowel is part of the word: it is the last audible sample
    x = cat(silence(0.2), tone(0.3), silence(0.06), tone(0.02, hz=2000), silence(0.3))
    span = speech_span(x, SR)
    assert span is not None and span[1] == pytest.approx(0.58, abs=0.006)


def test_first_onset_after() -> None:
    x = cat(silence(0.2), tone(0.3), silence(0.5), tone(0.3), silence(0.2))
    assert first_onset(x, SR, 0.0) == pytest.approx(0.2, abs=0.006)
    assert first_onset(x, SR, 0.6) == pytest.approx(1.0, abs=0.006)
    assert first_onset(x, SR, 1.5) is None


def test_last_audible_after_a_barge_in() -> None:
    x = cat(silence(0.2), tone(1.0), silence(0.1), tone(0.5), silence(1.0), tone(0.5), silence(0.2))
    # the caller cuts in at 0.7 s: the bot's sound goes on through a 100 ms pause until 1.8 s
    assert last_audible(x, SR, 0.7) == pytest.approx(1.8, abs=0.006)
    # at 1.25 s the bot is in that short pause: it is still the same stretch
    assert last_audible(x, SR, 1.25) == pytest.approx(1.8, abs=0.006)
    # a second reply after a long silence is a new sound, not the one playing at 0.7 s
    assert last_audible(x, SR, 2.2) is None
    assert last_audible(x, SR, 2.7) == pytest.approx(3.3, abs=0.006)


def test_last_audible_counts_short_sounds() -> None:
    # a bot cut off mid-syllable leaves a 20 ms tail: still audible, unlike for onsets
    x = cat(silence(0.2), tone(0.02), silence(0.5))
    assert onsets(x, SR) == []
    assert last_audible(x, SR, 0.2) == pytest.approx(0.22, abs=0.006)


def test_int16_and_float_agree() -> None:
    x = cat(silence(0.3), tone(0.4), silence(0.3))
    pcm = np.round(x * 32767).astype(np.int16)
    assert speech_span(pcm, SR) == pytest.approx(speech_span(x, SR), abs=1e-3)


def test_8khz() -> None:
    x = cat(silence(0.3, 8000), tone(0.4, sr=8000), silence(0.3, 8000))
    span = speech_span(x, 8000)
    assert span is not None
    assert span[0] == pytest.approx(0.3, abs=0.006) and span[1] == pytest.approx(0.7, abs=0.006)


def test_rule_is_configurable() -> None:
    x = cat(silence(0.3), tone(0.04), silence(0.3))
    assert onsets(x, SR) == []
    assert len(onsets(x, SR, rule=OnsetRule(min_voiced_ms=20.0))) == 1


def test_refuses_stereo_and_bad_rate() -> None:
    with pytest.raises(ValueError, match="mono"):
        active_windows(np.zeros((100, 2)), SR)
    with pytest.raises(ValueError, match="sample_rate"):
        active_windows(np.zeros(100), 0)


def test_shorter_than_a_window() -> None:
    assert active_windows(np.ones(10), SR).size == 0
    assert speech_span(np.ones(10, dtype=np.float32), SR) is None


def test_matches_pipecat_detector() -> None:
    """Same first onset, to the sample, as pipecat's TTFA onset detector."""
    utils = pytest.importorskip("pipecat.audio.utils")
    rng = np.random.default_rng(7)
    for sr in (8000, 16000, 24000):
        for _ in range(20):
            parts = []
            for _ in range(rng.integers(1, 6)):
                parts.append(silence(float(rng.uniform(0.0, 0.3)), sr))
                level = float(rng.choice([-60.0, -30.0, -15.0]))
                parts.append(tone(float(rng.uniform(0.01, 0.2)), level, float(rng.uniform(100, 3000)), sr))
            x = cat(*parts, silence(0.1, sr))
            pcm = np.round(x * 32767).astype(np.int16)
            ref = utils.detect_speech_onset(pcm.tobytes(), sr)
            ours = onsets(pcm, sr)
            if ref is None:
                assert ours == []
            else:
                assert ours and round(ours[0] * sr) == ref
