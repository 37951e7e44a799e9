"""Fixture format, loader and validator (voicelab/fixtures.py), and the committed suite."""

from __future__ import annotations

import json
import random
import re
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
import typer
from typer.testing import CliRunner

from voicelab.cli.fixtures import fixtures_app
from voicelab.fixtures.format import (
    FIXTURES_ROOT,
    Fixture,
    FixtureError,
    check_fixture,
    default_names,
    discover,
    load_fixture,
    select,
)
from voicelab.fixtures.schedule import CallerScheduler, ScheduledClip

SR = 16000


# --- helpers ---------------------------------------------------------------------------------

def speechlike(sr: int = SR, lead: float = 0.25, speech: float = 0.8, tail: float = 0.35,
               level: float = 0.3) -> np.ndarray:
    """A stand-in utterance: silence, a harmonic tone, silence."""
    t = np.arange(round(speech * sr)) / sr
    voiced = level * (np.sin(2 * np.pi * 180 * t) + 0.5 * np.sin(2 * np.pi * 540 * t)) / 1.5
    return np.concatenate([np.zeros(round(lead * sr)), voiced, np.zeros(round(tail * sr))]).astype(np.float32)


def write(path: Path, x: np.ndarray, sr: int = SR) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), x, sr, subtype="PCM_16")


def make_fixture(root: Path, doc: dict[str, Any] | str, clips: dict[str, np.ndarray] | None = None,
                 sr: int = SR, name: str = "fx") -> Path:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    for fname, x in (clips or {}).items():
        write(d / fname, x, sr)
    (d / "fixture.json").write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return d


def good_doc() -> dict[str, Any]:
    return {
        "name": "fx", "description": "ask, cut in, backchannel, goodbye",
        "turns": [
            {"audio": "a.wav", "text": "what time do you open on saturday",
             "start": {"after": "call_start", "delay_s": 0.5}},
            {"audio": "b.wav", "text": "sorry i meant sunday",
             "start": {"after": "bot_audio_start", "delay_s": 1.2}, "expect": "interrupt"},
            {"audio": "c.wav", "text": "mm hmm", "start": {"after": "bot_audio_start", "delay_s": 0.8},
             "expect": "no_interrupt"},
            {"audio": "d.wav", "text": "thanks bye", "start": {"after": "bot_audio_end", "delay_s": 0.6}},
        ],
    }


def good_clips() -> dict[str, np.ndarray]:
    return {n: speechlike() for n in ("a.wav", "b.wav", "c.wav", "d.wav")}


# --- loading ---------------------------------------------------------------------------------

def test_load_reactive_fixture(tmp_path: Path) -> None:
    d = make_fixture(tmp_path, good_doc(), good_clips())
    fx = load_fixture(d)
    assert isinstance(fx, Fixture)
    assert (fx.name, fx.sample_rate, fx.recording, len(fx.turns)) == ("fx", SR, False, 4)
    assert fx.path == d / "fixture.json"
    t1 = fx.turns[1]
    assert (t1.index, t1.text, t1.start.after, t1.start.delay_s, t1.expect) == (
        1, "sorry i meant sunday", "bot_audio_start", 1.2, "interrupt")
    assert t1.audio.dtype == np.float32 and t1.audio.ndim == 1
    assert t1.duration_s == pytest.approx(1.4)
    assert t1.speech_onset_s == pytest.approx(0.25, abs=0.006)
    assert t1.speech_offset_s == pytest.approx(1.05, abs=0.006)
    assert fx.turns[3].expect is None
    # the fixture file itself works too
    assert load_fixture(d / "fixture.json").name == "fx"


@pytest.mark.parametrize("rate", [8000, 22050, 44100])
def test_clips_at_any_rate_are_resampled(tmp_path: Path, rate: int) -> None:
    doc = {"name": "fx", "description": "d", "sample_rate": rate,
           "turns": [{"audio": "a.wav", "text": "hi", "start": {"after": "call_start", "delay_s": 0}}]}
    d = make_fixture(tmp_path, doc, {"a.wav": speechlike(sr=rate)}, sr=rate)
    fx = load_fixture(d, sample_rate=16000)
    t = fx.turns[0]
    assert t.audio.size == pytest.approx(1.4 * 16000, abs=2)
    assert t.speech_onset_s == pytest.approx(0.25, abs=0.008)
    assert t.speech_offset_s == pytest.approx(1.05, abs=0.008)
    assert load_fixture(d, sample_rate=24000).turns[0].audio.size == pytest.approx(1.4 * 24000, abs=2)


def test_explicit_speech_bounds_win(tmp_path: Path) -> None:
    doc = good_doc()
    doc["turns"][0]["speech"] = [0.3, 1.0]
    fx = load_fixture(make_fixture(tmp_path, doc, good_clips()))
    assert (fx.turns[0].speech_onset_s, fx.turns[0].speech_offset_s) == (0.3, 1.0)


def test_underscore_keys_are_comments(tmp_path: Path) -> None:
    doc = good_doc()
    doc["_note"] = "recorded by hand"
    doc["turns"][0]["_why"] = "opening question"
    assert check_fixture(make_fixture(tmp_path, doc, good_clips())) == []


def test_recording_form_maps_to_call_start_turns(tmp_path: Path) -> None:
    utt = speechlike(lead=0.0, tail=0.0, speech=1.0)
    x = np.zeros(10 * SR, dtype=np.float32)
    for at in (1.0, 4.0, 7.5):
        x[round(at * SR):round(at * SR) + utt.size] = utt
    doc = {"name": "rec", "description": "fixed timeline",
           "recording": "call.wav",
           "segments": [{"start_s": 1.0, "end_s": 2.0, "text": "one"},
                        {"start_s": 4.0, "end_s": 5.0, "text": "two", "expect": "interrupt"},
                        {"start_s": 7.5, "end_s": 8.5, "text": "three"}]}
    d = make_fixture(tmp_path, doc, {"call.wav": x})
    fx = load_fixture(d)
    assert fx.recording
    assert [t.start.after for t in fx.turns] == ["call_start"] * 3
    assert [t.start.delay_s for t in fx.turns] == [0.0, 3.0, 6.25]  # cuts half way through silences
    assert [t.expect for t in fx.turns] == [None, "interrupt", None]
    # clips back to back are the recording again
    assert sum(t.audio.size for t in fx.turns) == x.size
    assert np.allclose(np.concatenate([t.audio for t in fx.turns]), x, atol=1 / 32768)
    # the player's truth on the call clock is the segments
    s = fx.scheduler()
    clips = s.due(100.0)
    assert [c.start_s for c in clips] == [0.0, 3.0, 6.25]
    truth = s.truth()
    assert [(u.speech_start_s, u.speech_end_s) for u in truth] == [
        pytest.approx((1.0, 2.0)), pytest.approx((4.0, 5.0)), pytest.approx((7.5, 8.5))]


def test_fixture_plans_drive_the_scheduler(tmp_path: Path) -> None:
    fx = load_fixture(make_fixture(tmp_path, good_doc(), good_clips()))
    s = fx.scheduler(no_reply_timeout_s=4.0)
    assert isinstance(s, CallerScheduler)
    assert [c.turn for c in s.due(0.5)] == [0]
    s.bot_audio_started(2.5)
    assert [c.start_s for c in s.due(3.7)] == [pytest.approx(3.7)]


# --- broken fixtures: each refused with the file and field named -----------------------------

def _drop(d: dict[str, Any], *path: Any) -> dict[str, Any]:
    node: Any = d
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]
    return d


def _set(d: dict[str, Any], value: Any, *path: Any) -> dict[str, Any]:
    node: Any = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return d


def _garbage_wav(d: Path) -> None:
    (d / "a.wav").write_bytes(b"RIFF\x00\x00\x00\x00this is not audio at all")


def _stereo_wav(d: Path) -> None:
    x = speechlike()
    write(d / "b.wav", np.stack([x, x], axis=1))


def _empty_wav(d: Path) -> None:
    with wave.open(str(d / "c.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes(b"")


def _silent_wav(d: Path) -> None:
    write(d / "d.wav", np.zeros(SR, dtype=np.float32))


def _quiet_wav(d: Path) -> None:
    write(d / "a.wav", speechlike(level=0.005))  # all below the -40 dBFS gate


def _wav_at_8k(d: Path) -> None:
    write(d / "a.wav", speechlike(sr=8000), sr=8000)


Case = tuple[str, Callable[[], dict[str, Any] | str], Callable[[Path], None] | None, str, str]

BROKEN: list[Case] = [
    # (id, doc, clip mutation, file the message names, field + words it must hold)
    ("missing_wav", lambda: good_doc(), lambda d: (d / "b.wav").unlink(), "b.wav",
     "turns[1].audio: file not found"),
    ("unreadable_wav", good_doc, _garbage_wav, "a.wav", "turns[0].audio: unreadable audio"),
    ("stereo", good_doc, _stereo_wav, "b.wav", "turns[1].audio: stereo audio (2 channels)"),
    ("empty_audio", good_doc, _empty_wav, "c.wav", "turns[2].audio: empty audio"),
    ("no_speech", good_doc, _silent_wav, "d.wav", "turns[3].audio: no speech found"),
    ("speech_below_gate", good_doc, _quiet_wav, "a.wav", "turns[0].audio: no speech found"),
    ("unknown_after", lambda: _set(good_doc(), "bot_start", "turns", 1, "start", "after"), None,
     "fixture.json", "turns[1].start.after: unknown value 'bot_start'"),
    ("negative_delay", lambda: _set(good_doc(), -0.5, "turns", 1, "start", "delay_s"), None,
     "fixture.json", "turns[1].start.delay_s: negative delay"),
    ("delay_not_number", lambda: _set(good_doc(), "soon", "turns", 1, "start", "delay_s"), None,
     "fixture.json", "turns[1].start.delay_s: expected a number"),
    ("reply_to_backchannel", lambda: _set(good_doc(), "bot_audio_start", "turns", 3, "start", "after"), None,
     "fixture.json", "turns[3].start.after: bot_audio_start refers to the bot's reply to turns[2], which cannot exist"),
    ("prev_turn_end_first", lambda: _set(good_doc(), "prev_turn_end", "turns", 0, "start", "after"), None,
     "fixture.json", "turns[0].start.after: prev_turn_end needs a previous turn"),
    ("malformed_json", lambda: '{"name": "fx",\n  "turns": [\n    {"audio": "a.wav",,}\n]}', None,
     "fixture.json", "line 3 column"),
    ("not_an_object", lambda: "[1, 2]", None, "fixture.json", "top level: expected a JSON object"),
    ("missing_text", lambda: _drop(good_doc(), "turns", 0, "text"), None, "fixture.json",
     "turns[0].text: missing or empty"),
    ("missing_description", lambda: _drop(good_doc(), "description"), None, "fixture.json",
     "description: missing or empty"),
    ("missing_start", lambda: _drop(good_doc(), "turns", 2, "start"), None, "fixture.json",
     "turns[2].start: missing"),
    ("bad_expect", lambda: _set(good_doc(), "interupt", "turns", 1, "expect"), None, "fixture.json",
     "turns[1].expect: unknown value 'interupt'"),
    ("typo_field", lambda: _set(good_doc(), "interrupt", "turns", 1, "expects"), None, "fixture.json",
     "turns[1].expects: unknown field"),
    ("speech_outside_clip", lambda: _set(good_doc(), [0.2, 9.0], "turns", 0, "speech"), None, "fixture.json",
     "turns[0].speech: [0.2, 9] must satisfy"),
    ("speech_not_pair", lambda: _set(good_doc(), [0.2], "turns", 0, "speech"), None, "fixture.json",
     "turns[0].speech: expected [onset_s, offset_s]"),
    ("audio_outside_folder", lambda: _set(good_doc(), "../a.wav", "turns", 0, "audio"), None, "fixture.json",
     "turns[0].audio: '../a.wav' must be a file inside the fixture folder"),
    ("empty_turns", lambda: _set(good_doc(), [], "turns"), None, "fixture.json", "turns: expected a non-empty list"),
    ("rate_mismatch", lambda: _set(good_doc(), 16000, "sample_rate"), _wav_at_8k, "a.wav",
     "turns[0].audio: stored at 8000 Hz but fixture.json sample_rate is 16000"),
    ("overlapping_timeline", lambda: _set(_set(good_doc(), "call_start", "turns", 1, "start", "after"),
                                          1.0, "turns", 1, "start", "delay_s"), None, "fixture.json",
     "turns[1].start.delay_s: 1 s is before turns[0] ends"),
    ("turns_and_recording", lambda: _set(good_doc(), "a.wav", "recording"), None, "fixture.json",
     "recording: give either turns or recording"),
]


@pytest.mark.parametrize("case", BROKEN, ids=[c[0] for c in BROKEN])
def test_broken_fixture_is_refused_with_file_and_field(tmp_path: Path, case: Case) -> None:
    _, doc, mutate, file, message = case
    d = make_fixture(tmp_path, doc(), good_clips())
    if mutate is not None:
        mutate(d)
    problems = check_fixture(d)
    assert len(problems) == 1, problems  # that problem and nothing else
    assert problems[0].startswith(f"{d / file}: "), problems[0]
    assert message in problems[0]
    assert "\n" not in problems[0]
    with pytest.raises(FixtureError) as err:
        load_fixture(d)
    assert str(err.value) == problems[0]


def _recording_doc(segments: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "rec", "description": "d", "recording": "call.wav", "segments": segments}


def _recording_clip() -> dict[str, np.ndarray]:
    x = np.zeros(6 * SR, dtype=np.float32)
    u = speechlike(lead=0, tail=0, speech=1.0)
    x[SR:SR + u.size] = u
    return {"call.wav": x}


@pytest.mark.parametrize("segments,field,words", [
    ([{"start_s": 1.0, "end_s": 2.0, "text": "one"}, {"start_s": 5.0, "end_s": 7.0, "text": "two"}],
     "segments[1].end_s", "past the end of the recording"),
    ([{"start_s": 3.0, "end_s": 4.0, "text": "one"}], "segments[0]", "no speech found between 3 and 4 s"),
    ([{"start_s": 2.0, "end_s": 1.0, "text": "one"}], "segments[0].end_s", "needs 0 <= start_s < end_s"),
    ([{"start_s": 1.0, "end_s": 2.0, "text": "one"}, {"start_s": 1.5, "end_s": 2.5, "text": "two"}],
     "segments[1].start_s", "overlaps the previous segment"),
    ([], "segments", "expected a non-empty list"),
])
def test_broken_recording_is_refused(tmp_path: Path, segments: list[dict[str, Any]], field: str,
                                     words: str) -> None:
    d = make_fixture(tmp_path, _recording_doc(segments), _recording_clip())
    problems = check_fixture(d)
    assert len(problems) == 1, problems
    assert f": {field}: " in problems[0] and words in problems[0]
    assert problems[0].startswith(str(d))


def test_missing_fixture_json(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    problems = check_fixture(tmp_path / "empty")
    assert problems == [f"{tmp_path / 'empty' / 'fixture.json'}: fixture.json: file not found"]
    with pytest.raises(FixtureError, match="file not found"):
        load_fixture(tmp_path / "empty")


def test_every_problem_is_listed_and_load_names_the_first(tmp_path: Path) -> None:
    doc = good_doc()
    doc["turns"][1]["start"]["after"] = "whenever"
    doc["turns"][2]["start"]["delay_s"] = -1
    d = make_fixture(tmp_path, doc, good_clips())
    (d / "d.wav").unlink()
    problems = check_fixture(d)
    assert len(problems) == 3
    assert [re.search(r"turns\[\d\][.\w]*", p).group(0) for p in problems] == [  # type: ignore[union-attr]
        "turns[1].start.after", "turns[2].start.delay_s", "turns[3].audio"]
    with pytest.raises(FixtureError) as err:
        load_fixture(d)
    assert str(err.value).startswith(problems[0]) and "+2 more" in str(err.value)


# --- discovery and selection -----------------------------------------------------------------

def test_discover(tmp_path: Path) -> None:
    a = make_fixture(tmp_path / "suite", good_doc(), good_clips(), name="a")
    b = make_fixture(tmp_path / "suite", good_doc(), good_clips(), name="b")
    files = [a / "fixture.json", b / "fixture.json"]
    assert discover([tmp_path / "suite"]) == files
    assert discover([a, a / "fixture.json", tmp_path / "suite"]) == files  # no duplicates
    with pytest.raises(FixtureError, match="no such file or folder"):
        discover([tmp_path / "nope"])
    (tmp_path / "bare").mkdir()
    with pytest.raises(FixtureError, match="no fixture.json"):
        discover([tmp_path / "bare"])


def test_select(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    for n in ("a", "b", "c"):
        make_fixture(root, good_doc(), good_clips(), name=n)
    (root / "default.txt").write_text("# mine\nc\n\na  # first call\n")
    assert default_names(root) == ["c", "a"]
    assert select(["default"], root) == [root / "c" / "fixture.json", root / "a" / "fixture.json"]
    assert select(["b"], root) == [root / "b" / "fixture.json"]
    assert len(select(["all"], root)) == 3
    assert select([str(root / "a")], root) == [root / "a" / "fixture.json"]
    with pytest.raises(FixtureError, match="no fixture of that name"):
        select(["zzz"], root)


# --- command line ----------------------------------------------------------------------------

def _cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(fixtures_app, name="fixtures")
    return app


def test_cli_check(tmp_path: Path) -> None:
    good = make_fixture(tmp_path, good_doc(), good_clips(), name="good")
    bad = make_fixture(tmp_path, _set(good_doc(), -1, "turns", 1, "start", "delay_s"), good_clips(), name="bad")
    runner = CliRunner()
    ok = runner.invoke(_cli(), ["fixtures", "check", str(good)])
    assert ok.exit_code == 0 and "1 of 1 fixtures pass" in ok.output
    res = runner.invoke(_cli(), ["fixtures", "check", str(tmp_path)])
    assert res.exit_code == 1
    assert f"FAIL {bad / 'fixture.json'}" in res.output
    assert "turns[1].start.delay_s: negative delay" in res.output
    assert "1 of 2 fixtures pass" in res.output
    missing = runner.invoke(_cli(), ["fixtures", "check", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such file or folder" in missing.output
    assert "Traceback" not in missing.output


def test_cli_list(tmp_path: Path) -> None:
    root = tmp_path / "suite"
    make_fixture(root, good_doc(), good_clips(), name="a")
    res = CliRunner().invoke(_cli(), ["fixtures", "list", "all", "--root", str(root)])
    assert res.exit_code == 0 and "4 turns" in res.output and "ask, cut in" in res.output


# --- the committed suite ---------------------------------------------------------------------

SUITE_FILES = select(["all"])  # the call suite; the human set's callers: tests/test_human_set.py
SCENARIOS = {"single_question", "booking_multi_turn", "readback_long", "barge_in_early", "barge_in_late",
             "backchannel_mm_hmm", "mid_sentence_pause", "talk_over_first_syllable", "no_input_after_greeting",
             "noisy_line", "recording_fixed_timeline", "telephone_8k"}


def test_suite_is_complete_and_small() -> None:
    names = {f.parent.name for f in SUITE_FILES}
    assert len(names) >= 12
    assert SCENARIOS <= names
    # the call suite; the human speech set has its own budget (tests/test_human_set.py)
    human = FIXTURES_ROOT / "human"
    size = sum(p.stat().st_size for p in FIXTURES_ROOT.rglob("*") if p.is_file() and not p.is_relative_to(human))
    assert size < 8 * 1024 * 1024
    assert set(default_names()) <= names and len(default_names()) >= 10


@pytest.mark.parametrize("path", SUITE_FILES, ids=[f.parent.name for f in SUITE_FILES])
def test_committed_fixture_passes_validator(path: Path) -> None:
    assert check_fixture(path) == []
    fx = load_fixture(path)
    assert fx.name == path.parent.name
    assert len(fx.description) > 30
    for wav in path.parent.glob("*.wav"):
        info = sf.info(str(wav))
        assert (info.channels, info.subtype) == (1, "PCM_16")
        assert info.samplerate in (8000, 16000)  # telephone lines stay at 8 kHz; loading resamples


def _corpus_vocabulary() -> set[str]:
    corpus = pytest.importorskip("engines.shop.corpus")
    words: set[str] = set()
    for ex in corpus.generate(4000, seed=1):
        for m in ex.messages:
            if m["role"] == "user":
                words.update(m["content"].split())
    for gen in corpus.GENERATORS.values():  # every intent at least a few times
        for i in range(50):
            ex = gen(random.Random(i))
            words.update(w for m in ex.messages if m["role"] == "user" for w in m["content"].split())
    return words


def test_callers_say_what_the_engines_know() -> None:
    """Every word a built caller says appears in the engines' training corpus (backchannels aside).

    The real recordings (hr_*) are what real people said, not what the shop's callers ask: exempt."""
    vocab = _corpus_vocabulary() | {"mm", "hmm", "uh", "huh", "um", "and", "great", "thank", "you", "no", "yes"}
    for f in SUITE_FILES:
        if f.parent.name.startswith("hr_"):
            continue
        for t in load_fixture(f).turns:
            # "[cough]": the label of a non-speech sound, not a word
            unknown = [w for w in t.text.split() if w not in vocab and not w.isdigit() and not w.startswith("[")]
            assert not unknown, f"{f.parent.name} turn {t.index}: {unknown}"


def _simulate(fx: Fixture, greeting_s: float | None, latency_s: float = 0.8, reply_s: float = 3.5,
              stop_s: float = 0.3) -> tuple[float, list[tuple[ScheduledClip, bool, bool]]]:
    """Play a fixture against a fake bot; per clip: (clip, bot talking at speech onset, at offset)."""
    sch = fx.scheduler()
    pending: list[tuple[float, str]] = [(0.3, "start"), (0.3 + greeting_s, "stop")] if greeting_s else []
    spans: list[tuple[float, float]] = []
    since: float | None = None
    fired: list[tuple[ScheduledClip, float, float]] = []
    t = 0.0
    while t < 120.0:
        for ev in sorted(e for e in pending if e[0] <= t):
            pending.remove(ev)
            if ev[1] == "start" and since is None:
                since = ev[0]
                sch.bot_audio_started(ev[0])
            elif ev[1] == "stop" and since is not None:
                spans.append((since, ev[0]))
                since = None
                sch.bot_audio_stopped(ev[0])
        for clip in sch.due(t):
            turn = fx.turns[clip.turn]
            on, off = clip.start_s + turn.speech_onset_s, clip.start_s + turn.speech_offset_s
            fired.append((clip, on, off))
            if turn.expect == "no_interrupt":
                continue
            if since is not None or pending:
                pending[:] = [e for e in pending if e[0] < on] + [(on + stop_s, "stop")]
            pending += [(off + latency_s, "start"), (off + latency_s + reply_s, "stop")]
        if sch.done(t):
            if since is not None:
                spans.append((since, t))

            def talking(x: float) -> bool:
                return any(a <= x < b for a, b in spans)

            return t, [(c, talking(on), talking(off)) for c, on, off in fired]
        t = round(t + 0.01, 6)
    raise AssertionError(f"{fx.name} never finished")


@pytest.mark.parametrize("path", SUITE_FILES, ids=[f.parent.name for f in SUITE_FILES])
def test_committed_fixture_plays_against_a_simulated_bot(path: Path) -> None:
    """With replies of 3.5 s after 0.8 s, interruptions and backchannels land while the bot talks,
    ordinary turns while it is silent, and nothing falls back to a timeout."""
    fx = load_fixture(path)
    end, clips = _simulate(fx, greeting_s=2.5)
    assert end < 60.0
    for clip, talking_at_onset, _ in clips:
        turn = fx.turns[clip.turn]
        assert clip.reason == "rule", (clip.turn, clip.note)
        if fx.recording:
            continue
        if turn.expect in ("interrupt", "no_interrupt"):
            assert talking_at_onset, f"turn {clip.turn} should overlap the bot"
        elif clip.turn > 0 or turn.start.after != "call_start":
            assert not talking_at_onset, f"turn {clip.turn} talks over the bot"
