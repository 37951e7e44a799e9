"""The suite generator (voicelab/fixtures_build.py): deterministic, valid, and noise below the gate."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voicelab.fixtures.format import check_fixture, load_fixture
from voicelab.fixtures.build import HEAVY, SUITE, BuildError, Noise, build_suite, line_noise, telephone
from voicelab.measure.onset import active_windows

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None,
                                  reason="espeak-ng not installed (scripts/setup.sh installs it)")


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@needs_espeak
def test_build_is_deterministic_and_valid(tmp_path: Path) -> None:
    # one espeak-ng caller, one Piper caller on an 8 kHz telephone line with seeded noise
    only = ["single_question", "telephone_8k"]
    a = build_suite(tmp_path / "a", only)
    build_suite(tmp_path / "b", only)
    first, second = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert first.keys() == second.keys()
    assert len([k for k in first if k.endswith(".wav")]) == 3
    assert [k for k in first if first[k] != second[k]] == []
    for f in a:
        assert check_fixture(f) == []
    tel = load_fixture(tmp_path / "a" / "telephone_8k")
    assert all(sf.info(str(f)).samplerate == 8000 for f in (tmp_path / "a" / "telephone_8k").glob("*.wav"))
    assert tel.sample_rate == 16000 and tel.turns[0].speech_offset_s > tel.turns[0].speech_onset_s + 1.0


@needs_espeak
def test_rebuild_replaces_a_fixture_folder(tmp_path: Path) -> None:
    stale = tmp_path / "single_question" / "old.wav"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"x")
    mine = tmp_path / "my_call"
    mine.mkdir()
    build_suite(tmp_path, ["single_question"])
    assert not stale.exists() and mine.exists()


def test_unknown_fixture_name() -> None:
    with pytest.raises(BuildError, match="unknown fixture 'nope'"):
        build_suite(Path("/nonexistent"), ["nope"])


def test_suite_specs() -> None:
    names = [s.name for s in SUITE]
    assert len(names) == len(set(names)) >= 12
    assert sum(s.recording for s in SUITE) == 1 and sum(s.telephone for s in SUITE) == 1
    assert sum(s.noise is not None for s in SUITE) >= 3
    # both synthesizers are used, and no caller is the bot's unshifted Piper voice
    assert {s.voice.engine for s in SUITE} == {"espeak", "piper"}
    assert all(abs(s.voice.pitch_factor - 1.0) >= 0.1 for s in SUITE if s.voice.engine == "piper")


def test_line_noise_stays_below_the_onset_gate_and_is_seeded() -> None:
    n = line_noise(5 * 16000, 16000, HEAVY, seed=3)
    assert not active_windows(n, 16000).any()
    rms_db = 20 * np.log10(np.sqrt(np.mean(n**2)))
    assert -50.0 < rms_db < -44.0
    assert np.array_equal(n, line_noise(5 * 16000, 16000, HEAVY, seed=3))
    assert not np.array_equal(n, line_noise(5 * 16000, 16000, HEAVY, seed=4))
    with pytest.raises(BuildError, match="onset gate"):
        line_noise(16000, 16000, Noise(hiss_dbfs=-30.0, hum_dbfs=-30.0), seed=1)


def test_telephone_band() -> None:
    sr = 16000
    t = np.arange(sr) / sr
    low, mid, high = (0.3 * np.sin(2 * np.pi * f * t) for f in (100.0, 1000.0, 5000.0))
    rms = [float(np.sqrt(np.mean(telephone(x, sr)[800:-800] ** 2))) for x in (low, mid, high)]
    assert rms[1] == pytest.approx(0.3 / np.sqrt(2), rel=0.05)  # passband kept (through mu-law)
    assert rms[0] < 0.003 and rms[2] < 0.003  # hum and above-band energy gone
    assert telephone(mid, sr).size == sr // 2  # 8 kHz
