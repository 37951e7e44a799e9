"""Barge-in by pause, decide, resume, as a pipecat user-turn start strategy (`--barge-in pause`).

While the bot speaks, the VAD's start of speech pauses playout at once: the strategy pushes a
`PlayoutPauseFrame` (a system frame, so it overtakes the queued audio) to the output transport, which holds
the rest of the bot's audio while the engine and the TTS keep their place. It then decides, each time the
words, the VAD or the clock (every `tick_s`) change, with `voicelab.rules.barge_in.PausedBot`:

- STOP: a real interruption. The user turn starts (pipecat broadcasts its `InterruptionFrame`: the engine is
  cancelled, the held audio dropped, and the context keeps only the words heard before the pause);
- RESUME: a backchannel, a cough or nothing. A `PlayoutResumeFrame` lets the speaker continue at the exact
  sample where it paused, and the words of the backchannel are dropped from the user aggregation so they do
  not open the caller's next turn.

The VAD that ends turns needs `start_secs` (0.2 s) of speech, plus its own lag, before it says "started"; a
pause is cheap to undo, so an optional `onset_vad` (a second analyzer with a short start window, run only
while the bot talks) pauses earlier; the caller counts as speaking while either VAD hears them. The onset VAD
runs through `LevelGatedVAD`: its loudness floor is taken on the window the model scores, not on pipecat's
smoothed 400 ms loudness, whose climb after silence (not the model) used to set when the bot paused.

The rule waits for the recogniser's final reading once the caller stops (it is due: the STT runs a final pass
at every VAD stop), and the turn VAD's start and stop tell it how long the caller spoke, against which a
reading is judged: words that do not fit in the speech, or that fail Whisper's own decode-failure test, are
no evidence (`voicelab.rules.turn_end`: rule 4, `words_plausible`, `words_reliable`), and a final reading of a
word or two that is not a whole utterance is a fragment the caller dropped, which does not stop the bot. A
pause resumed before its final landed (the final was late, or the pause was settled otherwise) drops that
final from the aggregation when it lands, so a backchannel's words never open the caller's next turn. Each
verdict is logged (`pause_decision`: action, reason, the words, P(interruption) and P(complete), Whisper's
log probability, the pause and speech lengths).

While the bot is silent a VAD start starts the user turn at once, as `WordsWhileBotSpeaks` does. To use it in
any pipecat pipeline: `UserTurnStrategies(start=[PauseThenDecide()], stop=[...])` in the user aggregator's
params, and an output transport that honours the two playout frames (`RecordingOutput` here).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import numpy as np
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADState
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.turns.types import ProcessFrameResult
from pipecat.turns.user_start.base_user_turn_start_strategy import BaseUserTurnStartStrategy

from engines.decision.model import DEFAULT_FOLDER, installed, load_decision_model
from engines.errors import CheckpointError
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind
from voicelab.measure.onset import RULE
from voicelab.pipeline.frames import PlayoutPauseFrame, PlayoutResumeFrame
from voicelab.rules.barge_in import (
    Judge,
    PauseAction,
    PausedBot,
    PauseDecision,
    PauseThresholds,
    word_count_p,
)
from voicelab.speech.reliability import confidence_figure, result_reliable


def model_judges(dm: Any) -> tuple[Judge, Judge]:
    """The decision model's P(interruption) and P(the words are a whole utterance: `turn_complete`)."""
    return (lambda words: dm.ask("interruption", words).p_yes, lambda words: dm.ask("turn_complete", words).p_yes)


def default_judge() -> tuple[str, Judge, Judge | None]:
    """(name, P(interruption), P(complete) or None): the decision model's when its weights are installed, else
    the word rule (which judges no completeness)."""
    if not installed(DEFAULT_FOLDER):
        return "word_count", word_count_p, None
    try:
        dm = load_decision_model()
    except (CheckpointError, OSError, ValueError):
        return "word_count", word_count_p, None
    return ("decision_model", *model_judges(dm))


class LevelGatedVAD(VADAnalyzer):
    """`inner`'s model and start / stop windows, with a loudness floor taken on the model's own window.

    pipecat's `VADAnalyzer` calls a window speech when the model's confidence passes and the smoothed volume
    does too: the BS.1770 loudness of the last 400 ms, exponentially smoothed (factor 0.2) from window to
    window, against `min_volume` 0.6 (-50 LUFS). After silence that volume needs about five 32 ms windows of
    speech to climb past the floor, so on a caller cutting in it, not the model, decided when the bot paused
    (~120 to 160 ms after Silero was already sure). Here the floor is the lab's audibility gate (RMS above
    `gate_dbfs`, -40 dBFS: the onset rule (docs/metrics.md)) on the window the model scored: a level floor no
    lower than before, applied without the lag. The start and stop windows and the confidence are `inner`'s.
    """

    def __init__(self, inner: VADAnalyzer, *, gate_dbfs: float = RULE.gate_dbfs) -> None:
        # min_volume 0: the floor is applied per window in voice_confidence instead
        super().__init__(sample_rate=inner.sample_rate or None,
                         params=inner.params.model_copy(update={"min_volume": 0.0}))
        self._inner = inner
        self._gate_rms = 32768.0 * 10.0 ** (gate_dbfs / 20.0)
        if inner.sample_rate:
            self.set_sample_rate(inner.sample_rate)

    def set_sample_rate(self, sample_rate: int) -> None:
        self._inner.set_sample_rate(sample_rate)
        super().set_sample_rate(sample_rate)

    def num_frames_required(self) -> int:
        return self._inner.num_frames_required()

    def voice_confidence(self, buffer: bytes) -> float:
        # every window goes to the model: its recurrent state follows the stream (Silero gives a 1-element array)
        confidence = float(np.asarray(self._inner.voice_confidence(buffer)).item())
        pcm = np.frombuffer(buffer, dtype=np.int16).astype(np.float64)
        return confidence if pcm.size and float(pcm.std()) > self._gate_rms else 0.0

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._inner.cleanup()


class PauseThenDecide(BaseUserTurnStartStrategy):
    """User-turn start strategy: pause the bot on the VAD, then stop for good or resume (module doc)."""

    def __init__(self, *, judge: Judge | None = None, complete: Judge | None = None,
                 thresholds: PauseThresholds | None = None, tick_s: float = 0.02, onset_vad: VADAnalyzer | None = None,
                 log: CallLog | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._log = log  # gets each pause's verdict (`pause_decision`)
        self._onset_vad = None if onset_vad is None else LevelGatedVAD(onset_vad)
        self._vad_speaking = False  # the turn VAD hears the caller
        # judge: words -> P(interruption); complete: words -> P(a whole utterance), for short final readings
        self.judge_name, self.judge, self.complete = (("custom", judge, complete) if judge is not None
                                                      else default_judge())
        self.thresholds = thresholds or PauseThresholds()
        self._tick_s = tick_s
        self._bot_talking = False
        self._pause: PausedBot | None = None
        self._ticker: asyncio.Task[None] | None = None
        # a pause resumed before the final reading of its speech landed: that final is the backchannel's, not
        # the opening of the caller's next turn, and is dropped from the aggregation when it lands
        self._late_final_due = False
        self.decisions: list[tuple[str, str]] = []  # (action, reason) of each pause, for tests and logs

    @staticmethod
    def _now_ms() -> float:
        return time.monotonic() * 1000.0

    async def handle_user_turn_started(self) -> None:
        await super().handle_user_turn_started()
        await self._end_pause()
        self._bot_talking = False

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._end_pause()
        if self._onset_vad is not None:
            await self._onset_vad.cleanup()  # its model thread

    async def process_frame(self, frame: Frame) -> ProcessFrameResult:
        if isinstance(frame, BotStartedSpeakingFrame):
            self._bot_talking = True
        elif isinstance(frame, BotStoppedSpeakingFrame):
            self._bot_talking = False
        elif isinstance(frame, InputAudioRawFrame):
            await self._onset(frame)
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self._vad_speaking = True
            self._late_final_due = False  # new speech: its reading is the caller's
            if self._pause is None and self._bot_talking:
                await self._start_pause()
            if self._pause is not None:
                self._pause.vad_started(self._now_ms(), frame.start_secs)
            else:
                await self.trigger_user_turn_started()
            return ProcessFrameResult.STOP
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self._vad_speaking = False
            if self._pause is not None:
                self._pause.vad_stopped(self._now_ms(), frame.stop_secs)
                await self._decide()
        elif isinstance(frame, TranscriptionFrame) and self._pause is None and self._late_final_due:
            # the aggregator has just appended it (it handles a frame before its strategies see it)
            self._late_final_due = False
            await self._call_event_handler("on_reset_aggregation")
            return ProcessFrameResult.STOP
        elif isinstance(frame, (TranscriptionFrame, InterimTranscriptionFrame)) and self._pause is not None:
            conf = frame.result  # the recogniser's own figures (Whisper's `SttConfidence`; None for others)
            self._pause.hear(frame.text, self.judge, final=isinstance(frame, TranscriptionFrame),
                             reliable=result_reliable(conf, text=frame.text),  # a decoder loop is no evidence either
                             # P(complete) of any reading short of the safety rule's count: a short sound read
                             # as three words is judged by what the speech can hold (rules.barge_in)
                             complete=self.complete, fragment_words=self.thresholds.safety_words - 1,
                             avg_logprob=confidence_figure(conf, "avg_logprob"))
            return await self._decide()
        return ProcessFrameResult.CONTINUE

    async def _onset(self, frame: InputAudioRawFrame) -> None:
        """The early VAD: pause on its start while the bot talks; its quiet ends a pause the turn VAD never
        confirmed (a click or a breath)."""
        if self._onset_vad is None:
            return
        # fed all the time: an analyzer fed only while the bot talks keeps stale speech from the last turn
        state = await self._onset_vad.analyze_audio(frame.audio)
        if state == VADState.SPEAKING and self._pause is None and self._bot_talking:
            await self._start_pause("onset_vad")
        elif state == VADState.QUIET and self._pause is not None:
            self._pause.onset_quiet(self._vad_speaking)

    async def _start_pause(self, reason: str = "vad") -> None:
        self._pause = PausedBot(paused_at_ms=self._now_ms())
        await self.push_frame(PlayoutPauseFrame(reason=reason))
        self._ticker = self.create_task(self._tick(), "pause_ticker")

    async def _tick(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            while self._pause is not None:
                await asyncio.sleep(self._tick_s)
                await self._decide()

    async def _decide(self) -> ProcessFrameResult:
        pause = self._pause
        if pause is None:
            return ProcessFrameResult.CONTINUE
        now = self._now_ms()
        d = pause.decide(now, self.thresholds)
        if d.action == PauseAction.WAIT:
            return ProcessFrameResult.CONTINUE
        self.decisions.append((d.action.value, d.reason))
        self._pause = None
        self._log_decision(pause, d, now)
        self._late_final_due = d.action == PauseAction.RESUME and pause.stopped_at_ms is not None
        if d.action == PauseAction.STOP:
            # the turn starts: pipecat interrupts the bot, whose held audio is then dropped
            await self.trigger_user_turn_started()
            return ProcessFrameResult.STOP
        await self.push_frame(PlayoutResumeFrame(reason=d.reason))
        await self._call_event_handler("on_reset_aggregation")  # a backchannel is not the next turn's start
        return ProcessFrameResult.CONTINUE

    def _log_decision(self, pause: PausedBot, d: PauseDecision, now_ms: float) -> None:
        if self._log is None:
            return
        speech = pause.speech_ms(now_ms)
        p = pause.interruption_p
        self._log.log(EventKind.PAUSE_DECISION, self._log.caller_turn_at(self._log.now_ns()), {
            "action": d.action.value, "reason": d.reason, "text": pause.words, "words_final": pause.words_final,
            "interruption_p": None if p is None else round(p, 4), "judge": self.judge_name,
            "complete_p": None if pause.complete_p is None else round(pause.complete_p, 4),
            "plausible": pause.plausible(now_ms, self.thresholds), "reliable": pause.reliable,
            "stt_avg_logprob": None if pause.avg_logprob is None else round(pause.avg_logprob, 3),
            "since_pause_ms": round(now_ms - pause.paused_at_ms, 1),
            "speech_ms": None if speech is None else round(speech, 1)})

    async def _end_pause(self) -> None:
        self._pause = None
        task, self._ticker = self._ticker, None
        if task is not None and task is not asyncio.current_task():
            await self.cancel_task(task)
