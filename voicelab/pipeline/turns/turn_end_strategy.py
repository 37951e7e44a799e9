"""The turn end of `--turn decide`: smart-turn (audio) and the tiny decision model (words), re-scored as the
caller's silence grows.

A pipecat user-turn stop strategy around the pure, stateful rule `voicelab.rules.turn_end.DecideTurnEnd`, the
same object the turn bench replays (`voicelab.turnbench.replay.DecideTurnEndReplay`): this adapter feeds it the
VAD's frames, the transcripts and the models' scores at `time.monotonic()`, and ends the user turn when it says
so. While the caller speaks it feeds smart-turn v3 the audio; at the VAD's stop it asks smart-turn once for
P(complete) from the audio and the decision model for P(complete) from the words recognised so far (again
whenever a newer transcript arrives). Every `tick_ms`, and at the very moment the silence reaches what the
current scores need (a tick alone would end a turn up to `tick_ms` late), it asks the rule for a verdict. The
rule's documented thresholds (`decide_turn`) say how much silence those scores need (200 ms when both say
complete, up to 2.5 s when neither does; a wait above the floor lasts at least the longest pause the caller
already went on after in this turn); the silence counts from the caller's estimated speech end (the VAD stop
minus its `stop_secs`), and every wait longer than the floor also covers the VAD's `start_secs`, since resumed
speech shows only that late.

With `preemptive`, the strategy also tells the engine what it has heard before the turn is confirmed: at
the VAD stop (the words recognised so far) and again when a final transcript lands while the rule still
waits, it pushes a `PreemptFrame`; a VAD start withdraws it (an empty `PreemptFrame`). Only while
pipecat's user turn is open: a backchannel under the bot's reply never starts an answer.

No verdict is given before the stretch's final transcript is in, or `final_wait_s` after the VAD stop without
one (the context needs the words, and the last words decide a cut-off; with streamed Whisper the final lands
about when smart-turn answers). A VAD start before that discards the verdict: the caller went on. Each verdict
is logged (`turn_decision`) with both scores and the rule's reason, so a run says why each turn ended when it
did.

A transcript frame's `result` carries Whisper's confidence (`avg_logprob`, `compression_ratio`,
`no_speech_prob`; `stt_whisper.SttConfidence`); with `TurnThresholds.drop_unreliable_words` (off by default, by
measurement: voicelab/rules/turn_end.py) words that fail Whisper's decode-failure test
(`voicelab.speech.reliability.words_reliable`) leave the decision model's verdict out of the rule (text P = None: the
audio decides alone). Frames without figures (pocketsphinx, the fixture transcript) count as reliable. The log
row says which (`words_reliable`, `words_used`, `stt_avg_logprob`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameProcessorSetup
from pipecat.turns.types import ProcessFrameResult
from pipecat.turns.user_stop.base_user_turn_stop_strategy import BaseUserTurnStopStrategy

from engines.decision.model import DecisionModel
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind
from voicelab.pipeline.frames import PreemptFrame
from voicelab.rules.turn_end import DecideTurnEnd, Weighing, text_p_complete
from voicelab.speech.reliability import confidence_figure, result_unreliable_reason

K = EventKind


class DecideTurnEndStopStrategy(BaseUserTurnStopStrategy):
    """End the user's turn when `DecideTurnEnd`, on audio and words, says the silence is enough."""

    def __init__(self, *, analyzer: LocalSmartTurnAnalyzerV3, decision: DecisionModel | None,
                 log: CallLog | None = None, thresholds: Weighing | None = None, tick_ms: float = 50.0,
                 preemptive: bool = False, final_wait_s: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._analyzer = analyzer
        self._decision = decision
        self._log = log
        self.rule = DecideTurnEnd(thresholds, final_wait_s)
        self._tick_s = tick_ms / 1000.0
        self._text = ""  # the latest transcript of this turn (interim or final)
        self._scored_text: str | None = None
        self._conf: Any = None  # the recogniser's confidence in `_text` (the frame's `result`)
        self._scored_conf: Any = None  # ... in the words the rule's text P was scored on
        self._wake = asyncio.Event()  # a transcript landed: decide now rather than at the next tick
        self._due_s: float | None = None  # seconds until the silence reaches what the current scores need
        self._task: asyncio.Task[None] | None = None
        self._preemptive = preemptive
        self._turn_open = False  # pipecat's user turn is open
        self._preempted: str | None = None  # the words the engine was last told

    async def setup(self, setup: FrameProcessorSetup) -> None:
        await super().setup(setup)
        self._analyzer.set_sample_rate(setup.audio_in_sample_rate)

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._stop_ticking()
        await self._analyzer.cleanup()

    async def handle_user_turn_started(self) -> None:
        await self._new_turn()
        self._turn_open = True

    async def handle_user_turn_stopped(self) -> None:
        await self._new_turn()
        self._turn_open = False
        self._preempted = None
        self._analyzer.clear()

    async def _new_turn(self) -> None:
        self._text, self._scored_text = "", None
        self._conf = self._scored_conf = None
        self.rule.new_turn()
        await self._stop_ticking()

    async def _stop_ticking(self) -> None:
        if self._task is not None:
            await self.task_manager.cancel_task(self._task)
            self._task = None

    async def process_frame(self, frame: Frame) -> ProcessFrameResult:
        await super().process_frame(frame)
        if isinstance(frame, InputAudioRawFrame):
            self._analyzer.append_audio(frame.audio, self.rule.speaking)
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self._analyzer.update_vad_start_secs(frame.start_secs)
            self.rule.vad_started(time.monotonic(), frame.start_secs, in_turn=self._turn_open)
            await self._stop_ticking()  # the caller speaks (again): whatever was concluded is stale
            await self._preempt("")  # the caller goes on: an answer started on the words so far is stale
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self.rule.vad_stopped(time.monotonic(), frame.stop_secs, in_turn=self._turn_open)
            await self._stop_ticking()
            await self._preempt(self._text)
            self._task = self.task_manager.create_task(self._decide(), f"{self}::decide")
        elif isinstance(frame, TranscriptionFrame):
            self._text = f"{self.rule.final_words} {frame.text}".strip()
            self.rule.final_heard(time.monotonic(), self._text)
            self._conf = frame.result  # a Whisper final re-reads the whole turn: its figures cover these words
            if not self.rule.speaking:
                await self._preempt(self._text)  # the final words: a better start than the partial
            self._wake.set()
        elif isinstance(frame, InterimTranscriptionFrame):
            self._text = f"{self.rule.final_words} {frame.text}".strip()
            self._conf = frame.result
        return ProcessFrameResult.CONTINUE

    async def _decide(self) -> None:
        """From the VAD stop: score once from the audio, then re-decide as the silence grows and as words land."""
        _, metrics = await self._analyzer.analyze_end_of_turn()  # its own threshold is not used: the rule decides
        p = getattr(metrics, "probability", None)
        self.rule.audio_scored(float(p) if p is not None else None)
        while not self.rule.speaking:
            self._wake.clear()
            self._due_s = None
            if self.rule.may_decide(time.monotonic()):
                await self._score_text()
                if await self._verdict():
                    return
            wait = self._tick_s if self._due_s is None else min(self._tick_s, max(0.001, self._due_s))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)

    async def _verdict(self) -> bool:
        """Ask the rule about the silence so far; True once the turn was ended."""
        logprob = confidence_figure(self._scored_conf, "avg_logprob")
        # Whisper's own decode test, plus a decoder loop in the words scored ("wait wait wait wait wait")
        why_unreliable = result_unreliable_reason(self._scored_conf, text=self._scored_text)
        reliable = why_unreliable is None
        v = self.rule.verdict(time.monotonic(), words_reliable=reliable)
        # a final in: the verdict is due when the silence reaches what is needed (else only a transcript decides)
        self._due_s = v.due_s
        if not v.end:
            return False
        if self._log is not None:
            self._log.log(K.TURN_DECISION, self._log.caller_turn_at(self._log.now_ns()), {
                "audio_p": _r(self.rule.audio_p), "text_p": _r(self.rule.text_p), "text": self._text,
                "silence_ms": round(v.silence_ms, 1), "required_ms": v.required_ms, "reason": v.reason,
                "resumed_pause_ms": round(self.rule.resumed_pause_ms, 1),
                "stt_avg_logprob": None if logprob is None else round(logprob, 3), "words_reliable": reliable,
                "unreliable_reason": why_unreliable, "words_used": v.words_used})
        await self.trigger_user_turn_stopped()
        return True

    async def _score_text(self) -> None:
        if self._decision is not None and self._text != self._scored_text:
            text = self._scored_text = self._text
            d = await asyncio.to_thread(self._decision.ask, "turn_complete", text)
            if text == self._text:  # a newer transcript may have landed meanwhile
                self.rule.text_scored(text_p_complete(d.answer, d.confidence))
        if self._decision is None or self._scored_text == self._text:
            self._scored_conf = self._conf  # the newest reading of the scored words (the same words may come twice)

    async def _preempt(self, text: str) -> None:
        """Tell the engine the words heard so far ('' withdraws what it was told)."""
        if not self._preemptive or not self._turn_open:
            return
        if text == (self._preempted or "") or (not text and self._preempted is None):
            return
        self._preempted = text or None
        await self.push_frame(PreemptFrame(text=text))


def _r(p: float | None) -> float | None:
    return None if p is None else round(p, 3)
