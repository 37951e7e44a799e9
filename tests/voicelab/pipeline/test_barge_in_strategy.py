"""`PauseThenDecide` driven frame by frame: it waits for the final reading once the caller stops, a looping
reading is no evidence, a final that lands after the resume does not open the next turn, and each verdict
is logged."""

from __future__ import annotations

import asyncio
from typing import Any

from pipecat.clocks.system_clock import SystemClock
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    InterimTranscriptionFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameProcessorSetup
from pipecat.utils.asyncio.task_manager import TaskManager, TaskManagerParams

from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind as K
from voicelab.pipeline.frames import PlayoutPauseFrame, PlayoutResumeFrame
from voicelab.pipeline.services.stt_whisper import SttConfidence
from voicelab.pipeline.turns.barge_in_strategy import PauseThenDecide
from voicelab.rules.barge_in import PauseThresholds

# final_wait_ms far above the tests' sleeps, so that a slow event loop cannot make a wait look decided
TH = PauseThresholds(settle_ms=50.0, resume_ms=100.0, max_hold_ms=2000.0, final_wait_ms=800.0)
SETTLED_S = 0.3  # well past settle_ms (the ticker decides every 10 ms)
JUDGE = {"all": 0.99, "all right": 0.01, "i b i b i b i": 1.0, "i p": 1.0, "no wait i meant tuesday": 0.98}.get
DOUBTFUL = SttConfidence(avg_logprob=-1.22, compression_ratio=0.3, no_speech_prob=0.14)  # "i see" read "i p"
CLEAR = SttConfidence(avg_logprob=-0.3, compression_ratio=0.9, no_speech_prob=0.1)


class Probe:
    """A strategy set up for a test, with what it pushed, started and reset."""

    def __init__(self, strategy: PauseThenDecide, log: CallLog) -> None:
        self.strategy, self.log = strategy, log
        self.pushed: list[Any] = []
        self.started = 0
        self.resets = 0

        async def on_push(_: Any, frame: Any, *__: Any) -> None:
            self.pushed.append(frame)

        async def on_started(*_: Any, **__: Any) -> None:
            self.started += 1

        async def on_reset(*_: Any) -> None:
            self.resets += 1

        strategy.add_event_handler("on_push_frame", on_push)
        strategy.add_event_handler("on_user_turn_started", on_started)
        strategy.add_event_handler("on_reset_aggregation", on_reset)

    async def send(self, *frames: Any) -> None:
        for f in frames:
            await self.strategy.process_frame(f)

    def kinds(self) -> list[str]:
        return [type(f).__name__ for f in self.pushed]

    def decisions(self) -> list[dict[str, Any]]:
        return [e.payload for e in self.log.events if e.kind == K.PAUSE_DECISION]


async def _probe(judge: Any = JUDGE, complete: Any = None) -> Probe:
    tm = TaskManager()
    tm.setup(TaskManagerParams(loop=asyncio.get_running_loop()))
    log = CallLog("c")
    strategy = PauseThenDecide(judge=judge, complete=complete, thresholds=TH, tick_s=0.01, log=log)
    await strategy.setup(FrameProcessorSetup(clock=SystemClock(), task_manager=tm, pipeline_worker=None,  # type: ignore[arg-type]
                                             audio_in_sample_rate=16000))
    probe = Probe(strategy, log)
    await probe.send(BotStartedSpeakingFrame())
    return probe


async def test_the_final_decides_not_the_partial_read_at_the_stop() -> None:
    """'all' (the partial) is an interruption, 'all right' (the final, 150 ms after the stop) a backchannel."""
    pr = await _probe()
    try:
        await pr.send(VADUserStartedSpeakingFrame(start_secs=0.4), InterimTranscriptionFrame("all", "u", "t"),
                      VADUserStoppedSpeakingFrame(stop_secs=0.0))
        await asyncio.sleep(0.15)  # past settle and resume: before, the partial's verdict stopped the bot here
        assert pr.started == 0 and PlayoutResumeFrame.__name__ not in pr.kinds()
        await pr.send(TranscriptionFrame("all right", "u", "t", finalized=True))
        assert pr.kinds() == [PlayoutPauseFrame.__name__, PlayoutResumeFrame.__name__] and pr.started == 0
        (row,) = pr.decisions()
        assert row["action"] == "resume" and row["reason"] == "backchannel or noise" and row["words_final"]
        assert row["text"] == "all right" and row["interruption_p"] == 0.01 and row["judge"] == "custom"
        assert row["speech_ms"] >= 400.0
    finally:
        await pr.strategy.cleanup()


async def test_a_looping_reading_of_a_short_sound_resumes() -> None:
    """Seven words in 0.3 s of speech is a recogniser loop, not an interruption (the model said 1.0)."""
    pr = await _probe()
    try:
        await pr.send(VADUserStartedSpeakingFrame(start_secs=0.3), VADUserStoppedSpeakingFrame(stop_secs=0.0),
                      TranscriptionFrame("i b i b i b i", "u", "t", finalized=True))
        await asyncio.sleep(SETTLED_S)
        assert pr.started == 0 and pr.kinds()[-1] == PlayoutResumeFrame.__name__
        (row,) = pr.decisions()
        assert row["plausible"] is False and row["reason"] == "untrusted reading: no words"
    finally:
        await pr.strategy.cleanup()


async def test_the_same_words_over_a_long_stretch_stop_the_bot() -> None:
    pr = await _probe()
    try:
        await pr.send(VADUserStartedSpeakingFrame(start_secs=1.5), VADUserStoppedSpeakingFrame(stop_secs=0.0),
                      TranscriptionFrame("no wait i meant tuesday", "u", "t", finalized=True))
        assert pr.started == 1 and PlayoutResumeFrame.__name__ not in pr.kinds()
        (row,) = pr.decisions()
        assert row["action"] == "stop" and row["plausible"] is True
    finally:
        await pr.strategy.cleanup()


async def test_a_final_after_the_resume_does_not_open_the_next_turn() -> None:
    """No final within `final_wait_ms`: the bot resumes; when the late final lands it is dropped from the
    aggregation (a reset), and it starts no turn. A final of new speech is the caller's again."""
    pr = await _probe()
    try:
        await pr.send(VADUserStartedSpeakingFrame(start_secs=0.4), VADUserStoppedSpeakingFrame(stop_secs=0.0))
        await asyncio.sleep(TH.final_wait_ms / 1000.0 + SETTLED_S)
        assert pr.kinds()[-1] == PlayoutResumeFrame.__name__ and pr.resets == 1
        assert pr.decisions()[0]["reason"] == "no words"
        await pr.send(TranscriptionFrame("all right", "u", "t", finalized=True))
        assert pr.resets == 2 and pr.started == 0
        await pr.send(TranscriptionFrame("all right", "u", "t", finalized=True))  # only the one due is dropped
        assert pr.resets == 2
    finally:
        await pr.strategy.cleanup()


async def test_a_dropped_fragment_resumes_and_is_logged() -> None:
    """"i b": the interruption judge says yes (the start of "i would like ..."), the completeness judge says it is
    no whole utterance, and the caller stopped after it."""
    pr = await _probe(judge=lambda w: 1.0, complete={"i b": 0.27, "wait": 0.98}.get)
    try:
        for words in ("i b", "wait"):
            await pr.send(BotStartedSpeakingFrame(), VADUserStartedSpeakingFrame(start_secs=0.5),
                          VADUserStoppedSpeakingFrame(stop_secs=0.0),
                          TranscriptionFrame(words, "u", "t", result=CLEAR, finalized=True))
            await asyncio.sleep(SETTLED_S)
        first, second = pr.decisions()
        assert first["action"] == "resume" and first["reason"] == "the caller dropped out after a fragment"
        assert first["complete_p"] == 0.27
        assert second["action"] == "stop" and pr.started == 1
    finally:
        await pr.strategy.cleanup()


async def test_a_reading_whisper_itself_doubts_does_not_stop_the_bot() -> None:
    """Two words the model calls an interruption, but Whisper's decode-failure test fails them: resume; the
    same words read with confidence stop the bot."""
    for conf, action in ((DOUBTFUL, "resume"), (CLEAR, "stop")):
        pr = await _probe()
        try:
            await pr.send(VADUserStartedSpeakingFrame(start_secs=0.5), VADUserStoppedSpeakingFrame(stop_secs=0.0),
                          TranscriptionFrame("i p", "u", "t", result=conf, finalized=True))
            await asyncio.sleep(SETTLED_S)
            (row,) = pr.decisions()
            assert row["action"] == action and row["reliable"] is (conf is CLEAR)
            assert row["stt_avg_logprob"] == conf.avg_logprob
        finally:
            await pr.strategy.cleanup()
