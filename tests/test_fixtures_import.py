"""`voicelab fixtures import` (voicelab/fixtures/importer.py and its pure parts segment.py, start_rules.py).

- pure logic: the VAD's hysteresis, pauses joined into turns, and start rules inferred from conversations played
  by the real caller scheduler against a fake bot (hypothesis): every kind, mark and delay comes back;
- synthetic stereo calls built from the suite's clips at known offsets: turns, marks, rule kinds, delays and
  speech edges exact to a few ms, and the imported fixture replays (scheduler) to the same clip starts;
- the real human recordings concatenated into a mono caller track with known pauses: edges within 100 ms;
- a live session's run folder, written the way `voicelab serve` writes it, imports into a fixture that replays;
- formats (8 kHz mu-law and A-law, FLAC, OGG), bad inputs (one line, exit 2, nothing written), the validator's
  new fields, and the recogniser read without the shop's language model.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from voicelab.cli.fixtures import fixtures_app
from voicelab.fixtures import importer as importer_mod
from voicelab.fixtures.format import FIXTURES_ROOT, check_fixture, load_fixture
from voicelab.fixtures.importer import ImportOptions, import_sources
from voicelab.fixtures.schedule import CallerScheduler, StartRule, TurnPlan
from voicelab.fixtures.segment import Span, active_spans, join_pauses, speech_spans
from voicelab.fixtures.sources import read_audio
from voicelab.fixtures.start_rules import AGENT_GAP_S, LEAD_S, CallerTurnIn, is_request, plan
from voicelab.measure.calllog import CallLog
from voicelab.measure.recording import Track
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.transport.mic_recorder import MicRecorder
from voicelab.web.recording import LiveRecording

SR = 16000
ROOT = Path(__file__).resolve().parents[1]


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(fixtures_app, name="fixtures")
    return app


# --- pure logic: the VAD's hysteresis and the pauses -----------------------------------------------------

def test_speech_spans_use_silero_hysteresis() -> None:
    w = 0.032
    # 0.3 s of speech, a 2-window dip to 0.4 (above the 0.35 off-threshold: still speech), 0.5 s of silence,
    # then a 0.13 s blip (under min_speech 0.25 s: dropped)
    probs = [0.0] * 5 + [0.9] * 10 + [0.4] * 2 + [0.9] * 5 + [0.0] * 16 + [0.8] * 4 + [0.0] * 10
    spans = speech_spans(probs, w, len(probs) * w)
    assert len(spans) == 1
    assert spans[0].start == pytest.approx(5 * w - 0.03) and spans[0].end == pytest.approx(22 * w + 0.03)


def test_a_pause_shorter_than_max_pause_stays_in_the_turn_unless_the_agent_spoke() -> None:
    spans = [Span(0.0, 1.0), Span(1.6, 2.0), Span(3.5, 4.0), Span(4.4, 5.0)]
    assert [len(t) for t in join_pauses(spans, 1.0)] == [2, 2]
    assert [len(t) for t in join_pauses(spans, 1.0, other_onsets=[4.1])] == [2, 1, 1]


@given(st.lists(st.tuples(st.floats(0.05, 3.0), st.floats(0.1, 2.0)), min_size=1, max_size=12),
       st.floats(0.2, 2.0), st.lists(st.floats(0.0, 40.0), max_size=5))
def test_join_pauses_partitions_in_order(parts: list[tuple[float, float]], max_pause: float,
                                        onsets: list[float]) -> None:
    spans, t = [], 0.0
    for gap, length in parts:
        spans.append(Span(t + gap, t + gap + length))
        t += gap + length
    turns = join_pauses(spans, max_pause, onsets)
    assert [s for turn in turns for s in turn] == spans
    for turn in turns:
        for a, b in zip(turn, turn[1:], strict=False):
            assert b.start - a.end < max_pause and not any(a.end <= o < b.start for o in onsets)
    for a, b in zip(turns, turns[1:], strict=False):
        gap = b[0].start - a[-1].end
        assert gap >= max_pause or any(a[-1].end <= o < b[0].start for o in onsets)


def test_requests_and_backchannels() -> None:
    assert not is_request("mm hmm") and not is_request("Oh, okay.") and not is_request("uh-huh")
    assert is_request("when do you close") and is_request("wait") and not is_request("ip")


# --- pure logic: conversations with a fake bot, then inferred back -----------------------------------------

@dataclass(frozen=True)
class Line:
    kind: str  # "ask" (after the bot's reply), "cut" (interrupt), "bc" (backchannel), "first" (before any bot)
    delay: float
    speech: float  # seconds of speech in the clip (LEAD_S before it, 0.35 s after)


def _converse(lines: list[Line], greeting_s: float | None = 3.0, latency: float = 0.7, reply_s: float = 3.0,
              stop_s: float = 0.15) -> tuple[list[Span], list[CallerTurnIn], list[StartRule]]:
    """Play the script through the real CallerScheduler against a fake bot; (agent stretches, caller turns,
    the rules the script used)."""
    rules = [StartRule({"ask": "bot_audio_end", "first": "call_start"}.get(ln.kind, "bot_audio_start"), ln.delay)
             for ln in lines]
    expects = [{"cut": "interrupt", "bc": "no_interrupt"}.get(ln.kind) for ln in lines]
    plans = [TurnPlan(r, LEAD_S + ln.speech + 0.35, LEAD_S, LEAD_S + ln.speech, e)  # type: ignore[arg-type]
             for r, ln, e in zip(rules, lines, expects, strict=True)]
    sch = CallerScheduler(plans, greeting=greeting_s is not None)
    bot: list[list[float]] = [[0.3, 0.3 + greeting_s]] if greeting_s else []
    told: set[tuple[int, int]] = set()
    turns: list[CallerTurnIn] = []
    t = 0.0
    while len(turns) < len(lines) and t < 200:
        for i, (a, b) in enumerate(bot):  # tell the scheduler what has happened by now
            if a <= t and (i, 0) not in told:
                sch.bot_audio_started(a)
                told.add((i, 0))
            if b <= t and (i, 1) not in told:
                sch.bot_audio_stopped(b)
                told.add((i, 1))
        for clip in sch.due(t):
            ln = lines[clip.turn]
            on, off = clip.start_s + LEAD_S, clip.start_s + LEAD_S + ln.speech
            words = {"bc": "mm hmm"}.get(ln.kind, "when do you close on friday")
            turns.append(CallerTurnIn(Span(on, off), words))
            if ln.kind == "cut" and bot and bot[-1][0] <= on < bot[-1][1]:
                bot[-1][1] = on + stop_s
            if ln.kind != "bc":
                bot.append([off + latency, off + latency + reply_s])
        # jump to the next thing that can happen: a bot event not yet told, or the next clip's start
        pending = [x for i, ab in enumerate(bot) for j, x in enumerate(ab) if (i, j) not in told and x > t]
        nxt = sch.next_start(t)
        t = min([*pending, *([nxt] if nxt is not None and nxt > t else [])], default=t + 0.5)
    assert len(turns) == len(lines)
    return [Span(a, b) for a, b in bot], turns, rules


def _script(draw: Any) -> list[Line]:
    n = draw(st.integers(1, 6))
    lines: list[Line] = []
    for k in range(n):
        after_reply = k > 0 and lines[-1].kind != "bc"
        kind = draw(st.sampled_from(["ask", "cut", "bc"] if (k == 0 or after_reply) else ["ask"]))
        # the bot's greeting and replies last 3 s: cuts and backchannels land inside them
        if kind == "ask":
            lines.append(Line("ask", draw(st.floats(0.0, 1.5)), draw(st.floats(0.6, 3.0))))
        elif kind == "cut":
            # (a cut at exactly the bot's onset makes that onset the scheduler's "reply" to it: a tie, not a case)
            lines.append(Line("cut", draw(st.floats(0.05, 1.5)), draw(st.floats(0.6, 3.0))))
        else:
            lines.append(Line("bc", draw(st.floats(0.1, 1.5)), draw(st.floats(0.25, 0.6))))
    return lines


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_inferred_rules_are_the_ones_that_played(data: st.DataObject) -> None:
    lines = _script(data.draw)
    agent, turns, rules = _converse(lines)
    planned = plan(turns, agent, duration_s=max(a.end for a in agent) + 5)
    for k, (p, r, ln, t) in enumerate(zip(planned, rules, lines, turns, strict=True)):
        assert p.start.after == r.after, (k, lines)
        assert p.expect == {"cut": "interrupt", "bc": "no_interrupt"}.get(ln.kind), (k, lines)
        # the speech starts where it did after its anchor (the delay to the speech onset: delay + lead)
        assert p.start.delay_s + (t.speech.start - p.clip.start) == pytest.approx(r.delay_s + LEAD_S, abs=0.002)
        assert p.guess is None


def test_a_caller_who_speaks_first_gets_a_call_start_rule() -> None:
    agent, turns, _ = _converse([Line("first", 0.8, 1.2), Line("ask", 0.4, 1.0)], greeting_s=None)
    planned = plan(turns, agent, 20.0)
    assert [p.start.after for p in planned] == ["call_start", "bot_audio_end"]
    assert planned[0].start.delay_s == pytest.approx(0.8, abs=0.002)


def test_a_caller_right_after_a_short_phrase_cut_into_the_reply() -> None:
    """The agent's first phrase, then its audio ran dry (a slow TTS) and the caller came in 0.29 s later: pipecat
    had not yet called the bot stopped, so it is a cut-in to the reply, marked as a guess; after a whole reply
    the same quick answer is an answer."""
    turns = [CallerTurnIn(Span(3.3, 4.3), "where are you located"),
             CallerTurnIn(Span(6.33, 8.05), "when do you close on friday")]
    short = plan(turns, [Span(0.4, 2.6), Span(5.68, 6.04), Span(9.4, 12.6)], 20.0)
    assert (short[1].start.after, short[1].expect) == ("bot_audio_start", "interrupt")
    assert "quiet 290 ms" in (short[1].guess or "")
    whole = plan(turns, [Span(0.4, 2.6), Span(4.8, 6.04), Span(9.4, 12.6)], 20.0)
    assert (whole[1].start.after, whole[1].expect, whole[1].guess) == ("bot_audio_end", None, None)


def test_agent_that_kept_talking_over_a_request_is_marked_a_guess() -> None:
    agent = [Span(0.0, 2.0), Span(3.0, 8.0)]
    turns = [CallerTurnIn(Span(2.3, 2.9), "how late are you open"), CallerTurnIn(Span(4.0, 4.5), "hours please")]
    planned = plan(turns, agent, 10.0)
    assert planned[1].expect == "interrupt" and "request" in (planned[1].guess or "")
    mono = plan(turns, None, 10.0)
    assert all(p.start.after == "bot_audio_end" and p.guess and "mono" in p.guess for p in mono)


# --- synthetic stereo calls from the suite's clips ------------------------------------------------------------

def _clip(fixture: str, turn: int) -> tuple[np.ndarray, float, float, str]:
    t = load_fixture(FIXTURES_ROOT / fixture).turns[turn]
    return t.audio, t.speech_onset_s, t.speech_offset_s, t.text


def _voice(seconds: float, seed: int = 0) -> np.ndarray:
    """The agent: a buzz with syllable-rate loudness (audible to the onset rule, never below it for 0.35 s)."""
    t = np.arange(round(seconds * SR)) / SR
    env = 0.6 + 0.4 * np.sin(2 * np.pi * 3.7 * t + seed)
    return (0.2 * env * np.sign(np.sin(2 * np.pi * 140 * t))).astype(np.float32)


@dataclass
class Built:
    wav: Path
    onsets: list[float]  # caller speech truth on the call clock
    offsets: list[float]
    texts: list[str]
    agent: list[tuple[float, float]]


def _stereo_call(wav: Path, script: list[tuple[str, int, float]], agent: list[tuple[float, float]],
                 seconds: float = 24.0) -> Built:
    """The suite's clips placed at known times (clip starts), the agent audible over known stretches."""
    n = round(seconds * SR)
    caller, voice = np.zeros(n, np.float32), np.zeros(n, np.float32)
    b = Built(wav, [], [], [], agent)
    for fixture, turn, at in script:
        audio, on, off, text = _clip(fixture, turn)
        caller[round(at * SR):round(at * SR) + audio.size] += audio
        b.onsets.append(at + on)
        b.offsets.append(at + off)
        b.texts.append(text)
    for k, (a, e) in enumerate(agent):
        v = _voice(e - a, seed=k)
        voice[round(a * SR):round(a * SR) + v.size] = v
    sf.write(str(wav), np.stack([caller, voice], axis=1), SR, subtype="PCM_16")
    return b


def _barge_and_backchannel_call(folder: Path) -> Built:
    """greeting; ask (0.45 after it); the reply, cut into 0.4 s after it starts; the reply to the cut, with an
    'mm hmm' 1.2 s into it; a closing 0.6 s after that reply ends."""
    script = [("barge_in_early", 0, 2.85), ("barge_in_early", 1, 6.4), ("backchannel_mm_hmm", 1, 11.7),
              ("barge_in_early", 2, 15.6)]
    cut_on = 6.4 + _clip("barge_in_early", 1)[1]
    cut_off = 6.4 + _clip("barge_in_early", 1)[2]
    return _stereo_call(folder / "call.wav", script, [(0.3, 2.4), (6.0, cut_on + 0.15), (cut_off + 0.7, 15.0)])


def _given(tmp: Path, name: str, texts: list[str]) -> ImportOptions:
    f = tmp / "texts.json"
    f.write_text(json.dumps({name: texts}), encoding="utf-8")
    return ImportOptions(texts=importer_mod.read_texts(f), text_file=f, caller_channel="left")


def _replay(fx_path: Path, wav: Path, agent_channel: int = 1, greeting: bool = True) -> list[float]:
    """Clip starts the scheduler gives the imported fixture against the recorded agent, its events found the
    way the recording speaker finds them (the onset rule)."""
    fx = load_fixture(fx_path)
    sch = fx.scheduler(greeting=greeting)
    audio, sr = sf.read(str(wav), dtype="float32", always_2d=True)
    for span in active_spans(audio[:, agent_channel], sr, AGENT_GAP_S):
        sch.bot_audio_started(span.start)
        sch.bot_audio_stopped(span.end)
    return [c.start_s for c in sch.due(1000.0)]


def test_stereo_call_round_trip_is_exact(tmp_path: Path) -> None:
    b = _barge_and_backchannel_call(tmp_path)
    out = tmp_path / "out"
    written = import_sources([b.wav], out, _given(tmp_path, "call", b.texts))
    assert written == [out / "call"] and check_fixture(out / "call") == []
    fx = load_fixture(out / "call")
    assert [t.start.after for t in fx.turns] == ["bot_audio_end", "bot_audio_start", "bot_audio_start",
                                                 "bot_audio_end"]
    assert [t.expect for t in fx.turns] == [None, "interrupt", "no_interrupt", None]
    assert [t.text_source for t in fx.turns] == ["given"] * 4 and not fx.guesses
    clips = fx.imported["clips_s"]
    for k, t in enumerate(fx.turns):
        assert clips[k][0] + t.speech_onset_s == pytest.approx(b.onsets[k], abs=0.01)
        assert clips[k][0] + t.speech_offset_s == pytest.approx(b.offsets[k], abs=0.01)
    # the fake bot's delays, to the speech onset: 0.45 after the greeting, 0.4 + lead into the reply, ...
    assert fx.turns[0].start.delay_s + fx.turns[0].speech_onset_s == pytest.approx(b.onsets[0] - 2.4, abs=0.01)
    starts = _replay(out / "call", b.wav)
    assert starts == pytest.approx([c[0] for c in clips], abs=0.002)


def test_recognised_text_is_marked_and_read_without_the_callers_language_model(tmp_path: Path,
                                                                             monkeypatch: Any) -> None:
    made: list[dict[str, Any]] = []

    class Fake:
        def transcribe(self, audio: np.ndarray) -> Any:
            return type("T", (), {"text": "when do you close on friday"})()

    def fake_make(kind: str, **kw: Any) -> Fake:
        made.append({"kind": kind, **kw})
        return Fake()

    monkeypatch.setattr(importer_mod, "make_recognizer", fake_make)
    b = _barge_and_backchannel_call(tmp_path)
    import_sources([b.wav], tmp_path / "out", ImportOptions(expect_fallback=True, caller_channel="left"))
    assert made == [{"kind": "whisper", "cpu_threads": 2, "beam_size": 1, "lm_weight": 0.0}]
    fx = load_fixture(tmp_path / "out" / "call")
    assert fx.turns[0].text_source == "asr" and fx.imported["recognizer"].endswith("(no callers' language model)")
    assert [t.expect_reply for t in fx.turns] == ["fallback", "fallback", None, "fallback"]


# --- mono: the real human recordings with known pauses ----------------------------------------------------------

REAL = [(f, k) for f in ("hr_question_close", "hr_two_speakers", "hr_barge_in", "hr_phone_8k", "hr_long_jfk")
        for k in range(len(load_fixture(FIXTURES_ROOT / f).turns))]


def test_mono_real_recordings_import_with_their_turn_edges(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    pieces, onsets, offsets, texts, t = [np.zeros(round(0.7 * SR), np.float32)], [], [], [], 0.7
    for f, k in REAL:
        audio, on, off, text = _clip(f, k)
        pieces.append(audio)
        onsets.append(t + on)
        offsets.append(t + off)
        texts.append(text)
        t += audio.size / SR
        gap = float(rng.uniform(1.5, 3.0))  # silence between the clips, beside their own pads
        pieces.append(np.zeros(round(gap * SR), np.float32))
        t += round(gap * SR) / SR
    wav = tmp_path / "caller.flac"
    sf.write(str(wav), np.concatenate(pieces), SR, format="FLAC")
    import_sources([wav], tmp_path / "out", _given(tmp_path, "caller", texts))
    fx = load_fixture(tmp_path / "out" / "caller")
    assert len(fx.turns) == len(REAL)
    clips = fx.imported["clips_s"]
    for k, turn in enumerate(fx.turns):
        assert abs(clips[k][0] + turn.speech_onset_s - onsets[k]) <= 0.1, (REAL[k], "onset")
        assert abs(clips[k][0] + turn.speech_offset_s - offsets[k]) <= 0.1, (REAL[k], "offset")
        assert turn.start.after == "bot_audio_end" and turn.guess and turn.expect is None
    assert fx.imported["caller_channel"] == "mono"


# --- a live session of `voicelab serve` -----------------------------------------------------------------------

def test_a_live_session_folder_imports_into_a_fixture_that_replays(tmp_path: Path) -> None:
    rec = LiveRecording.create(tmp_path / "runs", PipelineConfig(engine="diffusion", greeting=""), "pc-live")
    log = CallLog("pc-live", writer=rec.writer)
    mic = MicRecorder(log, SR)
    caller = np.zeros(round(12.0 * SR), np.float32)
    truth = []
    for (f, k), at in ((("hr_question_close", 0), 1.0), (("hr_two_speakers", 0), 6.2)):
        audio, on, off, _ = _clip(f, k)
        caller[round(at * SR):round(at * SR) + audio.size] = audio
        truth.append((at + on, at + off))
    pcm = (caller * 32767).astype(np.int16)
    for i in range(0, pcm.size, 320):  # 20 ms frames arriving in real time
        mic.put(pcm[i:i + 320], SR, 1, round((i + 320) / SR * 1e9))
    bot = Track(SR)
    replies = [(truth[0][1] + 0.8, truth[0][1] + 3.0), (truth[1][1] + 0.7, truth[1][1] + 2.5)]
    for a, e in replies:
        bot.put(round(a * SR), (_voice(e - a) * 32767).astype(np.int16))
    asyncio.run(rec.close(log, mic, bot, "test"))

    out = tmp_path / "fixtures"
    written = import_sources([rec.path], out, ImportOptions(texts={"pc-live": ["will we ever forget it",
                                                                              "for the twentieth time"]}))
    fx = load_fixture(written[0])
    assert fx.imported["kind"] == "live" and fx.imported["caller_channel"] == "left"
    # no greeting: the caller spoke first (call_start), then answered the bot's reply
    assert [t.start.after for t in fx.turns] == ["call_start", "bot_audio_end"]
    starts = _replay(written[0], next((rec.path / "calls").glob("*.wav")), greeting=False)
    assert starts == pytest.approx(fx.imported["clips_s"][0][:1] + fx.imported["clips_s"][1][:1], abs=0.002)
    for (on, _off), t, c in zip(truth, fx.turns, fx.imported["clips_s"], strict=True):
        assert c[0] + t.speech_onset_s == pytest.approx(on, abs=0.03)


# --- formats, bad inputs and the validator ----------------------------------------------------------------------

def test_auto_channel_takes_the_first_speaker_for_the_agent(tmp_path: Path) -> None:
    agent = _clip("hr_two_speakers", 0)[0]  # the agent answers the phone...
    caller = _clip("hr_question_close", 0)[0]  # ...and the caller answers it
    n = agent.size + caller.size + SR
    left, right = np.zeros(n, np.float32), np.zeros(n, np.float32)
    right[:agent.size] = agent
    left[agent.size + SR // 2:agent.size + SR // 2 + caller.size] = caller
    for name, (a, b), side in (("lr", (left, right), "left"), ("rl", (right, left), "right")):
        wav = tmp_path / f"{name}.wav"
        sf.write(str(wav), np.stack([a, b], axis=1), SR)
        options = ImportOptions(texts={name: ["will we ever forget it"]})
        fx = load_fixture(import_sources([wav], tmp_path / f"out_{name}", options)[0])
        assert fx.imported["caller_channel"] == side and "spoke first" in fx.imported["channel_rule"]
        assert [t.start.after for t in fx.turns] == ["bot_audio_end"]


@pytest.mark.parametrize(("fmt", "subtype", "sr", "suffix"), [("WAV", "ULAW", 8000, ".wav"),
                                                             ("WAV", "ALAW", 8000, ".wav"),
                                                             ("FLAC", "PCM_16", 44100, ".flac"),
                                                             ("OGG", "VORBIS", 48000, ".ogg")])
def test_recordings_in_any_format_are_read_at_16k(tmp_path: Path, fmt: str, subtype: str, sr: int,
                                                  suffix: str) -> None:
    t = np.arange(sr) / sr
    x = np.stack([0.3 * np.sin(2 * np.pi * 300 * t), np.zeros(sr)], axis=1)
    path = tmp_path / f"call{suffix}"
    sf.write(str(path), x, sr, format=fmt, subtype=subtype)
    rec = read_audio(path)
    assert len(rec.channels) == 2 and rec.source_rate == sr and rec.channels[0].size == pytest.approx(SR, abs=2)
    assert 0.2 < float(np.abs(rec.channels[0]).max()) < 0.4


def _run_cli(*args: str) -> Any:
    return CliRunner().invoke(_cli(), ["fixtures", "import", *args])


def test_bad_inputs_are_one_line_and_write_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    bad = tmp_path / "bad.wav"
    bad.write_text("not audio", encoding="utf-8")
    silent = tmp_path / "silent.wav"
    sf.write(str(silent), np.zeros(SR * 2, np.float32), SR)
    one_sided = tmp_path / "one_sided.wav"
    speech = _clip("hr_two_speakers", 0)[0]
    sf.write(str(one_sided), np.stack([speech, np.zeros_like(speech)], axis=1), SR)
    (tmp_path / "empty").mkdir()
    cases = [([str(bad)], "bad.wav: unreadable audio"), ([str(silent)], "silent.wav: no speech found"),
             ([str(one_sided), "--caller-channel", "left"], "the right channel (the agent) never speaks"),
             ([str(one_sided)], "the right channel never speaks"),
             ([str(tmp_path / "empty")], "not a run folder"),
             ([str(tmp_path / "nope.wav")], "no such file or folder")]
    for args, msg in cases:
        res = _run_cli(*args, "--out", str(out))
        assert res.exit_code == 2, (args, res.output)
        assert msg in res.output and "Traceback" not in res.output and res.output.count("\n") == 1, res.output
        assert not out.exists() and not any(p.name.startswith(".out.import") for p in tmp_path.iterdir())


def test_out_with_fixtures_is_refused_unless_overwrite(tmp_path: Path) -> None:
    b = _barge_and_backchannel_call(tmp_path)
    texts = tmp_path / "t.txt"
    texts.write_text("\n".join(b.texts) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    first = _run_cli(str(b.wav), "--out", str(out), "--name", "mine", "--text", str(texts), "--caller-channel", "left")
    assert first.exit_code == 0, first.output
    assert "imported" in first.output and (out / "mine" / "fixture.json").is_file()
    again = _run_cli(str(b.wav), "--out", str(out), "--name", "mine", "--text", str(texts), "--caller-channel", "left")
    assert again.exit_code == 2 and "already holds fixtures" in again.output
    short = tmp_path / "short.txt"
    short.write_text("one line\n", encoding="utf-8")
    wrong = _run_cli(str(b.wav), "--out", str(out), "--overwrite", "--text", str(short), "--caller-channel", "left")
    assert wrong.exit_code == 2 and "1 transcripts for" in wrong.output and (out / "mine").is_dir()
    ok = _run_cli(str(b.wav), "--out", str(out), "--overwrite", "--name", "theirs", "--text", str(texts), "--caller-channel", "left")
    assert ok.exit_code == 0 and not (out / "mine").exists() and (out / "theirs").is_dir()


def test_validator_accepts_the_import_fields_and_list_shows_guesses(tmp_path: Path) -> None:
    b = _barge_and_backchannel_call(tmp_path)
    out = tmp_path / "out"
    import_sources([b.wav], out, _given(tmp_path, "call", b.texts))
    doc = json.loads((out / "call" / "fixture.json").read_text(encoding="utf-8"))
    doc["turns"][2]["guess"] = "a test's guess"
    (out / "call" / "fixture.json").write_text(json.dumps(doc), encoding="utf-8")
    res = CliRunner().invoke(_cli(), ["fixtures", "list", str(out)])
    assert res.exit_code == 0 and "turn 2: guessed: a test's guess" in res.output
    doc["turns"][0]["text_source"] = "oracle"
    doc["turns"][1]["guess"] = ""
    doc["imported"] = "yesterday"
    (out / "call" / "fixture.json").write_text(json.dumps(doc), encoding="utf-8")
    problems = check_fixture(out / "call")
    assert any("turns[0].text_source: unknown value 'oracle'" in p for p in problems)
    assert any("turns[1].guess" in p for p in problems) and any(": imported: expected an object" in p
                                                                for p in problems)


@pytest.mark.slow
def test_an_imported_live_session_plays_through_the_pipeline(tmp_path: Path) -> None:
    """The live session's fixture, played by `voicelab run` (no greeting: the caller spoke first): both turns
    play by rule and the bot's reply to each is timed."""
    rec = LiveRecording.create(tmp_path / "runs", PipelineConfig(engine="diffusion", greeting=""), "pc-play")
    log = CallLog("pc-play", writer=rec.writer)
    mic = MicRecorder(log, SR)
    caller = np.zeros(round(12.0 * SR), np.float32)
    ends = []
    for (f, k), at in ((("hr_question_close", 0), 1.0), (("hr_two_speakers", 0), 6.2)):
        audio, _, off, _ = _clip(f, k)
        caller[round(at * SR):round(at * SR) + audio.size] = audio
        ends.append(at + off)
    mic.put((caller * 32767).astype(np.int16), SR, 1, round(caller.size / SR * 1e9))
    bot = Track(SR)
    for a, e in ((ends[0] + 0.8, ends[0] + 3.0), (ends[1] + 0.7, ends[1] + 2.5)):
        bot.put(round(a * SR), (_voice(e - a) * 32767).astype(np.int16))
    asyncio.run(rec.close(log, mic, bot, "test"))
    fixture = import_sources([rec.path], tmp_path / "fx", ImportOptions(texts={"pc-play": [
        "will we ever forget it", "for the twentieth time that evening the two men shook hands"]}))[0]
    out = tmp_path / "replay"
    done = subprocess.run([str(ROOT / ".venv/bin/voicelab"), "run", str(fixture), "--out", str(out), "--greeting", "",
                           "--stt", "transcript"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    run = next(p for p in out.iterdir() if (p / "summary.json").is_file())
    call = json.loads(next((run / "calls").glob("*.json")).read_text(encoding="utf-8"))
    assert [s["reason"] for s in call["scheduled"]] == ["rule", "rule"]
    assert json.loads((run / "summary.json").read_text(encoding="utf-8"))["far_ms"]["n"] == 2
