"""The suite builder (voicelab/fixtures/): deterministic, valid, and noise below the gate."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voicelab.fixtures.build import _Synth, _utterance, build_suite
from voicelab.fixtures.effects import SOUNDS, line_noise, reverb, telephone
from voicelab.fixtures.format import FIXTURES_ROOT, Fixture, check_fixture, load_fixture, select
from voicelab.fixtures.spec import BuildError, Line, Noise
from voicelab.fixtures.suite import ESPEAK_F5, HEAVY, SMALL_ROOM, SUITE
from voicelab.measure.onset import active_windows, speech_span

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None,
                                  reason="espeak-ng not installed (scripts/setup.sh installs it)")


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@needs_espeak
def test_build_is_deterministic_and_valid(tmp_path: Path) -> None:
    # espeak-ng callers (one in a seeded reverberant room, with a Klatt voice's rand() noise), and a
    # Piper caller on an 8 kHz telephone line with seeded noise
    only = ["single_question", "telephone_8k", "barge_in_reverb", "barge_in_order_klatt"]
    a = build_suite(tmp_path / "a", only)
    build_suite(tmp_path / "b", only)
    first, second = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert first.keys() == second.keys()
    assert len([k for k in first if k.endswith(".wav")]) == 9
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
    assert sum(s.recording for s in SUITE) == 1 and sum(s.telephone for s in SUITE) >= 3
    assert sum(s.room is not None for s in SUITE) >= 2
    assert len({s.voice.espeak_voice for s in SUITE if s.voice.engine == "espeak"}) >= 10
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


def test_reverb_is_seeded_keeps_the_peak_and_adds_a_tail() -> None:
    sr = 16000
    x = np.zeros(sr)
    x[1000:3000] = 0.5 * np.sin(2 * np.pi * 440.0 * np.arange(2000) / sr)
    y = reverb(x, sr, SMALL_ROOM, seed=7)
    assert y.size > x.size and np.max(np.abs(y)) == pytest.approx(0.5)
    assert np.array_equal(y, reverb(x, sr, SMALL_ROOM, seed=7))
    assert not np.array_equal(y, reverb(x, sr, SMALL_ROOM, seed=8))
    # energy after the tone has stopped: the room's tail (the dry tone stops at sample 3000)
    assert np.sqrt(np.mean(y[3300:4000] ** 2)) > 1e-3


REPLY_S = 2.5  # a typical bot reply
FAR_S = 0.6  # caller's end of speech to the bot's first audio
GREETING_S = (0.3, 2.5)  # the bot's greeting at call start: Piper joe says the default line in 2.2 s


def _call_s(fx: Fixture) -> float:
    """Call time from the fixture's scheduling, with a REPLY_S reply FAR_S after each answered turn;
    a barge-in cuts the reply 0.3 s after its speech starts."""
    reply = GREETING_S  # start and end of the bot's latest reply: first, the greeting
    clip_end = 0.0
    for turn in fx.turns:
        anchor = {"call_start": 0.0, "prev_turn_end": clip_end, "bot_audio_start": reply[0],
                  "bot_audio_end": reply[1]}[turn.start.after]
        start = anchor + turn.start.delay_s
        if turn.expect == "interrupt":
            reply = (reply[0], min(reply[1], start + turn.speech_onset_s + 0.3))
        clip_end = start + turn.duration_s
        if turn.expect != "no_interrupt":
            begin = start + turn.speech_offset_s + FAR_S
            reply = (begin, begin + REPLY_S)
    return max(clip_end, reply[1])


def test_default_list_is_worth_its_percentiles() -> None:
    paths = select(["default"])
    assert all(check_fixture(p) == [] for p in paths)
    fixtures = [load_fixture(p) for p in paths]
    turns = [t for fx in fixtures for t in fx.turns]
    assert sum(t.expect != "no_interrupt" for t in turns) >= 30  # timed replies
    assert sum(t.expect == "interrupt" for t in turns) >= 6  # barge-ins
    assert any(t.expect == "no_interrupt" for t in turns)
    assert 150.0 <= sum(_call_s(fx) for fx in fixtures) <= 210.0  # about three minutes of calls


def test_first_turns_wait_for_the_greeting() -> None:
    """Every caller answers the bot's greeting 0.3-0.6 s after it ends instead of talking over it, except the
    fixed-timeline recording (it ignores the bot) and no_input_after_greeting (silent for 8 s after it)."""
    exempt = {"recording_fixed_timeline", "no_input_after_greeting"}
    for spec in SUITE:
        first = spec.lines[0]
        if spec.name in exempt:
            continue
        assert first.after == "bot_audio_end" and 0.3 <= first.delay_s <= 0.6, spec.name
    assert len({s.lines[0].delay_s for s in SUITE if s.name not in exempt}) >= 4  # not one fixed reflex
    no_input = next(s for s in SUITE if s.name == "no_input_after_greeting").lines[0]
    assert (no_input.after, no_input.delay_s) == ("bot_audio_end", 8.0)
    # the committed files agree, real recordings included
    checked = set()
    for path in select(["all"]):
        fx = load_fixture(path)
        first = fx.turns[0].start
        if fx.name in exempt:
            assert fx.recording or first.after == "bot_audio_end", fx.name
            continue
        assert first.after == "bot_audio_end" and 0.3 <= first.delay_s <= 0.6, fx.name
        checked.add(fx.name)
    assert {p.parent.name for p in select(["real"])} <= checked and len(checked) == len(SUITE) - 2 + 5


def test_real_list_names_the_five_recordings() -> None:
    paths = select(["real"])
    assert sorted(p.parent.name for p in paths) == [
        "hr_barge_in", "hr_long_jfk", "hr_phone_8k", "hr_question_close", "hr_two_speakers"]
    assert all(check_fixture(p) == [] for p in paths)
    assert (paths[0].parents[1] / "REAL_CALLS.md").is_file()  # sources and licences travel with them


def test_any_list_file_selects_like_default(tmp_path: Path) -> None:
    build_src = select(["single_question"])[0].parent
    shutil.copytree(build_src, tmp_path / "single_question")
    (tmp_path / "mine.txt").write_text("# my calls\nsingle_question  # the one\n\n", encoding="utf-8")
    assert select(["mine"], tmp_path) == [tmp_path / "single_question" / "fixture.json"]
    (tmp_path / "single_question.txt").write_text("nope\n", encoding="utf-8")
    # a fixture folder of the same name wins over a list file
    assert select(["single_question"], tmp_path) == [tmp_path / "single_question" / "fixture.json"]


def test_sounds_are_seeded_audible_and_at_their_level(tmp_path: Path) -> None:
    synth = _Synth(tmp_path)  # a sound needs no synthesizer: nothing is run
    for name, (_, peak) in SOUNDS.items():
        line = Line(f"[{name}]", "bot_audio_start", 1.0, expect="no_interrupt", sound=name)
        x = _utterance(synth, ESPEAK_F5, line, seed=5)
        assert np.array_equal(x, _utterance(synth, ESPEAK_F5, line, seed=5))
        assert not np.array_equal(x, _utterance(synth, ESPEAK_F5, line, seed=6))
        assert np.max(np.abs(x)) == pytest.approx(peak)
        span = speech_span(x, 16000)
        assert span is not None, name  # the truth finds it: a sound the caller made, with an onset
        assert 0.1 < span[1] - span[0] < 1.0, (name, span)
    with pytest.raises(BuildError, match="unknown sound"):
        _utterance(synth, ESPEAK_F5, Line("[x]", "bot_audio_start", 1.0, sound="sneeze"))


def test_backchannels_list_holds_enough_backchannels_over_the_bot() -> None:
    paths = select(["backchannels"])
    assert all(check_fixture(p) == [] for p in paths)
    names = {p.parent.name for p in paths}
    assert len(names - {p.parent.name for p in select(["default"])}) >= 6  # the default list stays as it was
    turns = [t for p in paths for t in load_fixture(p).turns if t.expect == "no_interrupt"]
    words = [t for t in turns if not t.text.startswith("[")]
    sounds = [t for t in turns if t.text.startswith("[")]
    assert len(words) >= 10 and len(sounds) >= 3
    assert all(t.start.after == "bot_audio_start" for t in turns)  # each one over the bot's reply
    specs = [s for s in SUITE if s.name in names]
    assert len({s.voice.espeak_voice for s in specs}) >= 8  # varied espeak-ng voices
    assert {line.sound for s in specs for line in s.lines if line.sound} == set(SOUNDS)


@needs_espeak
def test_backchannel_fixture_build_is_deterministic(tmp_path: Path) -> None:
    only = ["backchannel_uh_huh_cough", "backchannel_alright_breath"]  # espeak, a cough; a breath on a phone line
    build_suite(tmp_path / "a", only)
    build_suite(tmp_path / "b", only)
    first, second = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert first.keys() == second.keys() and len(first) == 10
    assert [k for k in first if first[k] != second[k]] == []
    committed = _files(FIXTURES_ROOT)  # and the committed clips are these bytes
    assert all(committed[k] == v for k, v in first.items())
