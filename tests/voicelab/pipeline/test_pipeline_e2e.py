"""End to end, in real time: fixture audio → Silero + smart-turn → STT → engine → gate → Piper → speaker.

Slow (each call runs at the speed of speech). Few and short on purpose: one plain question with the tiny
engine, one barge-in, one call where the engine and then the TTS crash mid-turn.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import soundfile as sf

from engines.trace import ReplayEngine
from tests.voicelab.pipeline.test_pipeline import FailingEngine, write_trace
from tests.voicelab.pipeline.test_tts_piper import CrashingPiper
from voicelab.cli.common import quiet_pipecat_logs
from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture
from voicelab.measure.events import EventKind as K
from voicelab.measure.events import read_events
from voicelab.measure.metrics import spoken_words, turn_table
from voicelab.measure.onset import segments
from voicelab.pipeline.config import PipelineConfig
from voicelab.runs.calls import run_config

pytestmark = pytest.mark.slow

SUMMARY_KEYS = {"run_id", "engine", "sampler", "policy", "calls", "turns", "far_ms", "far_breakdown_ms",
                "stop_latency_ms", "recovery_ms", "heard_text_word_errors", "false_barge_ins", "revisions",
                "engine_figures", "truth"}
LONG = ("we are at 42 harbor lane in millbrook, right next to the old train station, and there is parking "
        "behind the shop for bikes and cars.")


def _need(name: str) -> Path:
    path = FIXTURES_ROOT / name
    if not (path / "fixture.json").is_file():
        pytest.skip(f"audio_fixtures/{name} not built")
    return path


def _assert_complete(run: Path) -> dict[str, Any]:
    for name in ("config.json", "events.jsonl", "summary.json", "turns.csv"):
        assert (run / name).is_file(), name
    summary = json.loads((run / "summary.json").read_text())
    assert SUMMARY_KEYS <= set(summary)
    config = json.loads((run / "config.json").read_text())
    assert config["fixtures"] and all(len(f["sha256"]) == 64 for f in config["fixtures"])
    assert config["versions"]["pipecat-ai"] == "1.14.0"
    read_events(run / "events.jsonl")  # every row valid
    wavs = sorted((run / "calls").glob("*.wav"))
    assert wavs and len(wavs) == len(list((run / "calls").glob("*.json")))
    return summary


def test_single_question_tiny_engine(tmp_path: Path) -> None:
    _need("single_question")
    tiny = Path(__file__).parents[3] / "engines" / "tiny"
    engine = next((m for m in ("diffusion", "ar") if (tiny / m / "config.json").is_file()), None)
    if engine is None:
        pytest.skip("engines/tiny holds no trained model yet")
    quiet_pipecat_logs("ERROR")
    policy = "pinned" if engine == "diffusion" else "prefix"
    run = run_config(PipelineConfig(engine=engine, policy=policy), ["single_question"], tmp_path)
    summary = _assert_complete(run)
    assert summary["far_ms"]["n"] == 1
    assert 150 < summary["far_ms"]["p50"] < 3000  # the bot answered, after the caller, within seconds
    assert summary["revisions"]["audible"] == 0
    diff = summary["truth"]["far_abs_diff_ms_p95"]
    assert diff is not None and diff <= 20  # events and recording agree


def test_caller_answers_the_greeting_after_it_ends(tmp_path: Path) -> None:
    """The bot greets at call start (default --greeting); the committed caller waits for the greeting's end,
    so its speech starts after the greeting's audio is over and the greeting is played whole, not cut."""
    fx = load_fixture(_need("single_question"))
    assert fx.turns[0].start.after == "bot_audio_end"
    trace = write_trace(tmp_path / "trace.jsonl", [(fx.turns[0].text, "we open at 9 am on saturday.")])
    quiet_pipecat_logs("ERROR")
    cfg = PipelineConfig(engine=f"replay:{trace}", stt="transcript")
    greeting = cfg.greeting
    assert greeting
    run = run_config(cfg, [fx], tmp_path / "out")
    assert (run / "summary.json").is_file()
    events = read_events(run / "events.jsonl")
    # Piper's pause at the comma may split the greeting into two audible stretches: its end is the last one
    greet_end = [e.t_ns / 1e9 for e in events if e.kind == K.BOT_AUDIBLE_END and e.turn == -1]
    speech = [e.t_ns / 1e9 for e in events if e.kind == K.CALLER_SPEECH_START and e.turn == 0]
    assert greet_end and len(speech) == 1
    delay = fx.turns[0].start.delay_s
    # the clip starts delay_s after the greeting's audible end; its speech begins LEAD_S (0.25 s) later
    assert greet_end[-1] + delay <= speech[0] <= greet_end[-1] + delay + 0.25 + 0.2
    # the greeting was played whole: every chunk to its last word, kept whole in the context
    stops = [e.payload for e in events if e.kind == K.PLAYOUT_STOP and e.turn == -1]
    assert stops and not any(p["interrupted"] for p in stops)
    assert " ".join(p["played"] for p in stops).split() == greeting.split()
    ctx = [e.payload for e in events if e.kind == K.CONTEXT_UPDATE and e.turn == -1]
    assert [(c["content"], c["interrupted"]) for c in ctx] == [(greeting, False)]
    assert not [e for e in events if e.kind == K.INTERRUPTION and e.payload.get("bot_speaking")]
    meta = json.loads(next((run / "calls").glob("*.json")).read_text())
    assert [(c["reason"], c["note"]) for c in meta["scheduled"]] == [("rule", "bot finished the greeting")]
    # the recording agrees: the bot's audio before the caller speaks is the greeting (Piper says it in about
    # 2.2 s), whole, and it is over before the caller's speech starts
    stereo, sr = sf.read(str(next((run / "calls").glob("*.wav"))), dtype="int16")
    bot = segments(stereo[:, 1], sr)
    before = [seg for seg in bot if seg[0] < speech[0]]
    assert before and before[-1][1] - before[0][0] > 1.8
    assert before[-1][1] < speech[0] and before[-1][1] == pytest.approx(greet_end[-1], abs=0.05)


def test_barge_in_stops_the_bot_and_keeps_heard_words(tmp_path: Path) -> None:
    fx = load_fixture(_need("barge_in_early"))
    trace = write_trace(tmp_path / "trace.jsonl", [(fx.turns[0].text, LONG), (fx.turns[1].text, "we close at 8 pm."),
                                                   (fx.turns[2].text, "goodbye.")])
    quiet_pipecat_logs("ERROR")
    cfg = PipelineConfig(engine=f"replay:{trace}", stt="transcript", barge_in="words:3")
    run = run_config(cfg, [fx], tmp_path / "out")
    summary = _assert_complete(run)
    events = read_events(run / "events.jsonl")
    cut = [e for e in events if e.kind == K.CONTEXT_UPDATE and e.turn == 0]
    assert cut and cut[-1].payload["interrupted"] is True
    kept = spoken_words(cut[-1].payload["content"])
    assert 0 < len(kept) < len(spoken_words(LONG))  # truncated to what was played
    assert spoken_words(LONG)[:len(kept)] == kept
    rows = {r["turn"]: r for r in turn_table(events)}
    assert rows[0]["heard_word_errors"] is not None and rows[0]["heard_word_errors"] <= 1
    stop = rows[1]["stop_latency_ms"]
    # the bot went quiet once the caller cut in: measured, and before its reply was over (the words kept above);
    # how many ms that took is the machine's (2,292 ms once under a load average of 9-13 on two cores)
    assert stop is not None and stop > 0
    assert rows[1]["far_ms"] is not None  # and answered the new question
    assert summary["stop_latency_ms"]["n"] == 1


def test_engine_and_tts_crash_mid_turn_call_carries_on(tmp_path: Path) -> None:
    single, early = _need("single_question"), _need("barge_in_early")
    fdir = tmp_path / "crashy"
    fdir.mkdir()
    shutil.copy(single / "t0_hi_what_time.wav", fdir / "a.wav")
    shutil.copy(early / "t0_where_are_you.wav", fdir / "b.wav")
    shutil.copy(early / "t2_okay_thanks_goodbye.wav", fdir / "c.wav")
    texts = ["hi what time do you open on saturday", "where are you located", "okay thanks goodbye"]
    (fdir / "fixture.json").write_text(json.dumps({
        "name": "crashy", "description": "engine crash in turn 0, TTS crash in turn 1, turn 2 must be answered",
        "turns": [{"audio": "a.wav", "text": texts[0], "start": {"after": "call_start", "delay_s": 0.3}},
                  {"audio": "b.wav", "text": texts[1], "start": {"after": "prev_turn_end", "delay_s": 3.0}},
                  {"audio": "c.wav", "text": texts[2], "start": {"after": "prev_turn_end", "delay_s": 4.0}}]}))
    trace = write_trace(tmp_path / "trace.jsonl", [
        (texts[0], "on saturday we are open from 10 am to 4 pm."),
        (texts[1], "we are open. we are at 42 harbor lane."),  # TTS fails on the chunk with "harbor"
        (texts[2], "goodbye and thanks for calling.")])
    engine = FailingEngine(ReplayEngine(trace), fail_at=5, fail_generations=(1,))

    class CrashOnHarbor(CrashingPiper):
        fail_when, fail_sentence = "harbor", 0

    def tts(**kw: Any) -> CrashingPiper:
        return CrashOnHarbor(**kw)

    quiet_pipecat_logs("ERROR")
    # one generation per caller turn (no preemptive starts, no greeting), so fail_generations hits turn 0
    cfg = PipelineConfig(engine=f"replay:{trace}", stt="transcript", barge_in="words:3", preemptive=False,
                         greeting="")
    run = run_config(cfg, [load_fixture(fdir)], tmp_path / "out", engine=engine, tts_factory=tts)
    summary = _assert_complete(run)
    events = read_events(run / "events.jsonl")
    errors = [(e.turn, e.payload["where"]) for e in events if e.kind == K.ERROR]
    assert (0, "engine") in errors and (1, "tts") in errors
    rows = {r["turn"]: r for r in turn_table(events)}
    assert rows[2]["far_ms"] is not None and rows[2]["errors"] == 0, [(e.turn, e.payload) for e in events
                                                                      if e.kind == K.ERROR]
    assert summary["turns"] == 3


@pytest.mark.parametrize("name", ["mid_sentence_pause", "pause_mid_cancel"])
def test_a_mid_sentence_pause_never_gets_a_reply_before_the_turn_ends(tmp_path: Path, name: str) -> None:
    """`--turn decide`: the caller pauses about a second inside a sentence; the bot must wait it out.

    The fixture's own words stand in for the recogniser (`--stt transcript`), so the test checks the
    turn-end rule (smart-turn + decision model + silence) on the real audio, not Whisper's errors."""
    fx = load_fixture(_need(name))
    quiet_pipecat_logs("ERROR")
    cfg = PipelineConfig(stt="transcript", turn="decide", greeting="")
    run = run_config(cfg, [fx], tmp_path / "out")
    rows = [r for r in turn_table(read_events(run / "events.jsonl")) if r["expect"] is None]
    assert rows and not any(r["false_cut_in"] for r in rows), [(r["turn"], r["far_ms"]) for r in rows]
    assert rows[0]["far_ms"] is not None and rows[0]["far_ms"] > 0  # and it does answer, after the caller
