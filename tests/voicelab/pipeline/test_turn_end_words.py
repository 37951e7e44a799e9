"""Words the recogniser does not trust are no evidence for the turn end.

The pure rule `words_reliable` on Whisper's own decode-failure thresholds, and the `--turn decide` adapter
(`DecideTurnEndStopStrategy`) with a fake smart-turn and a fake decision model: an unreliable transcript leaves
the decision model's verdict out (the turn ends on the audio's verdict after the one-source silence), a
reliable one keeps today's behaviour. Thresholds are scaled down so each call lasts well under a second.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from pipecat.clocks.system_clock import SystemClock
from pipecat.frames.frames import (
    InterimTranscriptionFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameProcessorSetup
from pipecat.utils.asyncio.task_manager import TaskManager, TaskManagerParams

from engines.decision.model import Decision
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind as K
from voicelab.pipeline.services.stt_whisper import SttConfidence
from voicelab.pipeline.turns.turn_end_strategy import DecideTurnEndStopStrategy
from voicelab.rules.turn_end import TurnThresholds
from voicelab.speech.reliability import (
    WHISPER_COMPRESSION_RATIO_THRESHOLD,
    WHISPER_LOGPROB_THRESHOLD,
    WHISPER_NO_SPEECH_THRESHOLD,
    words_reliable,
)

# ---- the pure rule -----------------------------------------------------------------------------------------


def test_whisper_thresholds_are_its_transcribe_defaults() -> None:
    assert (WHISPER_LOGPROB_THRESHOLD, WHISPER_COMPRESSION_RATIO_THRESHOLD, WHISPER_NO_SPEECH_THRESHOLD) == \
        (-1.0, 2.4, 0.6)


def test_words_reliable_on_fixed_values() -> None:
    assert words_reliable(-0.3, 0.7, 0.1)  # "or where is the sharp": a confident reading
    assert not words_reliable(-1.07, 0.67, 0.38)  # "and happy ball" for "thanks that is all"
    # Whisper fails a decode when avg_logprob < -1.0 (strictly): -1.0 itself passes
    assert words_reliable(-1.0, 1.0, 0.1)
    assert not words_reliable(-1.0001, 1.0, 0.1)
    # ... and when the compression ratio > 2.4 (strictly): a looping decoder
    assert words_reliable(-0.2, 2.4, 0.1)
    assert not words_reliable(-0.2, 2.41, 0.1)
    # silence: P(no speech) > 0.6 and a log probability not above -1.0 (at exactly -1.0 Whisper skips it)
    assert not words_reliable(-1.0, 1.0, 0.61)
    assert words_reliable(-1.0, 1.0, 0.6)
    assert words_reliable(-0.99, 1.0, 0.99)  # a confident decode is kept whatever P(no speech) says


def test_no_figure_means_reliable() -> None:
    assert words_reliable(None, None, None)  # pocketsphinx, the fixture transcript
    assert words_reliable(None, 1.0, 0.99)  # the silence test needs its log probability
    assert not words_reliable(None, 3.0, None)
    assert not words_reliable(-2.0, None, None)


# ---- the adapter -------------------------------------------------------------------------------------------

TH = TurnThresholds(floor_ms=20, single_sure_ms=60, medium_ms=80, disputed_ms=120, vetoed_ms=500, cap_ms=600,
                    drop_unreliable_words=True)
UNRELIABLE = SttConfidence(avg_logprob=-1.068, compression_ratio=0.667, no_speech_prob=0.384)
RELIABLE = SttConfidence(avg_logprob=-0.323, compression_ratio=0.733, no_speech_prob=0.075)


class FakeSmartTurn:
    def __init__(self, p: float) -> None:
        self.p = p

    def set_sample_rate(self, rate: int) -> None: ...

    def append_audio(self, audio: bytes, speaking: bool) -> None: ...

    def update_vad_start_secs(self, secs: float) -> None: ...

    def clear(self) -> None: ...

    async def analyze_end_of_turn(self) -> tuple[None, Any]:
        return None, SimpleNamespace(probability=self.p)

    async def cleanup(self) -> None: ...


class FakeDecision:
    """Says "cut off" (P(complete) 0.04) to everything, as the decision model does on recogniser garbage."""

    def __init__(self, p_complete: float = 0.04) -> None:
        self.p = p_complete
        self.asked: list[str] = []

    def ask(self, task: str, text: str, context: str | None = None) -> Decision:
        self.asked.append(text)
        return Decision(answer=self.p >= 0.5, confidence=max(self.p, 1 - self.p), ms=0.0)


async def _turn(stretches: list[tuple[float, str, Any]], audio_p: float = 0.886,
                wait_s: float = 2.0, th: TurnThresholds = TH, tick_ms: float = 5.0,
                text_p: float = 0.04) -> tuple[dict[str, Any], float, FakeDecision]:
    """Speak the stretches (pause before each, words, the frame's `result`); the turn_decision payload and the
    silence after the last stretch at which the turn ended."""
    loop = asyncio.get_running_loop()
    tm = TaskManager()
    tm.setup(TaskManagerParams(loop=loop))
    log, decision = CallLog("c"), FakeDecision(text_p)
    strategy = DecideTurnEndStopStrategy(analyzer=FakeSmartTurn(audio_p), decision=decision,  # type: ignore[arg-type]
                                        log=log, thresholds=th, tick_ms=tick_ms)
    await strategy.setup(FrameProcessorSetup(clock=SystemClock(), task_manager=tm, pipeline_worker=None,  # type: ignore[arg-type]
                                             audio_in_sample_rate=16000))
    stopped = asyncio.Event()

    async def on_stopped(*_: Any) -> None:
        stopped.set()

    strategy.add_event_handler("on_user_turn_stopped", on_stopped)
    await strategy.handle_user_turn_started()
    try:
        for pause_s, words, result in stretches:
            await asyncio.sleep(pause_s)
            await strategy.process_frame(VADUserStartedSpeakingFrame(start_secs=0.0))
            await strategy.process_frame(InterimTranscriptionFrame(words, "u", "t", result=result))
            await strategy.process_frame(VADUserStoppedSpeakingFrame(stop_secs=0.0))
            end = loop.time()
            await strategy.process_frame(TranscriptionFrame(words, "u", "t", result=result, finalized=True))
        await asyncio.wait_for(stopped.wait(), wait_s)
        ended_ms = (loop.time() - end) * 1000.0
    finally:
        await strategy.cleanup()
    rows = [e.payload for e in log.events if e.kind == K.TURN_DECISION]
    assert len(rows) == 1
    return rows[0], ended_ms, decision


async def test_unreliable_words_leave_the_decision_model_out() -> None:
    row, ended_ms, decision = await _turn([(0.0, "and happy ball", UNRELIABLE)])
    assert decision.asked  # the model was asked; its verdict is logged but not used
    assert row["text_p"] == pytest.approx(0.04) and row["words_used"] is False
    assert row["stt_avg_logprob"] == pytest.approx(-1.068)
    assert row["required_ms"] == TH.single_sure_ms and row["reason"] == "one source, sure: complete"
    assert TH.single_sure_ms <= ended_ms < TH.vetoed_ms


async def test_by_default_unreliable_words_still_count_and_are_flagged() -> None:
    row, ended_ms, _ = await _turn([(0.0, "and happy ball", UNRELIABLE)], th=replace(TH, drop_unreliable_words=False))
    assert row["words_reliable"] is False and row["words_used"] is True
    assert row["required_ms"] == TH.vetoed_ms and ended_ms >= TH.vetoed_ms


async def test_reliable_words_keep_the_veto() -> None:
    row, ended_ms, _ = await _turn([(0.0, "and happy ball", RELIABLE)])
    assert row["words_used"] is True and row["stt_avg_logprob"] == pytest.approx(-0.323)
    assert row["required_ms"] == TH.vetoed_ms and ended_ms >= TH.vetoed_ms


async def test_words_without_figures_count_as_reliable() -> None:
    row, _, _ = await _turn([(0.0, "i would like to book a", None)])  # pocketsphinx, the transcript STT
    assert row["words_used"] is True and row["stt_avg_logprob"] is None
    assert row["required_ms"] == TH.vetoed_ms


async def test_a_resumed_pause_still_sets_the_least_wait_on_the_audio_alone() -> None:
    """The caller went on after a 250 ms pause (the words so far cut off: a 500 ms wait); then garbage words:
    the one-source wait (60 ms) still lasts at least that pause."""
    row, ended_ms, _ = await _turn([(0.0, "please cancel my", RELIABLE), (0.25, "thunk spied", UNRELIABLE)])
    assert row["words_used"] is False
    assert row["resumed_pause_ms"] >= 240
    assert row["required_ms"] == pytest.approx(row["resumed_pause_ms"], abs=0.2)
    assert ended_ms >= 240


async def test_the_turn_ends_when_the_silence_is_enough_not_at_the_next_tick() -> None:
    """Both sources say complete: the turn ends at the floor (200 ms), not at a coarse tick after it."""
    th = TurnThresholds()
    row, ended_ms, _ = await _turn([(0.0, "what time do you open", RELIABLE)], th=th, text_p=0.97, tick_ms=1000.0)
    assert row["required_ms"] == th.floor_ms and row["reason"] == "audio and text agree: complete"
    assert th.floor_ms <= ended_ms < th.floor_ms + 60  # a 1 s tick would have ended it at 1000 ms
