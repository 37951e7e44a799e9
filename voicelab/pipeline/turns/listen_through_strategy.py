"""`--turn listen[:P:DELAY_MS:TIMEOUT_MS]`: smart-turn listened through the silence, as eot-bench scores it.

After the VAD's stop, smart-turn v3.2 is run again at every 100 ms of silence (counted from the caller's
estimated end of speech, the VAD stop minus its `stop_secs`) on the window pipecat's analyzer holds (the turn's
audio from its first VAD start minus `pre_speech_ms` and `start_secs`, silence included, its last 8 s), and the
pure rule `voicelab.rules.listen_through.ListenThrough` ends the turn: once P(complete) has reached P and the
silence is DELAY_MS long, or at TIMEOUT_MS of silence whatever the score. A VAD start ends the listening.

One module for the kind: the pipecat stop strategy (`ListenThroughStopStrategy`, built by `listen_stop` from the
call's `TurnParts`) and the turn bench's replay (`ListenReplay`, fed the scores the bench caches at the same
instants: `voicelab.turnbench.eot_scores.listen_scores`); both drive the one rule. A pass that takes longer than
100 ms delays the next instant (the rule is told the silence at the instant it scores, so the timeout still
ends the turn on time).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipecat.audio.turn.smart_turn.base_smart_turn import SmartTurnParams
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameProcessorSetup
from pipecat.turns.types import ProcessFrameResult
from pipecat.turns.user_stop.base_user_turn_stop_strategy import BaseUserTurnStopStrategy

from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind
from voicelab.pipeline.turns.factory import TurnParts
from voicelab.rules.listen_through import STEP_MS, ListenPolicy, ListenThrough, parse_policy

VAD_STOP_S = 0.2  # the default VAD's stop_secs (PipelineConfig.vad_stop_secs): the bench's traces are its stops


def first_instant(stop_secs: float, step_ms: int = STEP_MS) -> int:
    """The first grid instant at or after the VAD's stop (the silence is `stop_secs` old by then)."""
    return max(1, math.ceil(round(stop_secs * 1000.0, 6) / step_ms))


class ListenThroughStopStrategy(BaseUserTurnStopStrategy):
    """End the user's turn when `ListenThrough`, fed smart-turn every 100 ms of silence, says so."""

    def __init__(self, *, analyzer: LocalSmartTurnAnalyzerV3, policy: ListenPolicy, log: CallLog | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._analyzer = analyzer
        self.rule = ListenThrough(policy)
        self._log = log
        self._speaking = False
        self._task: asyncio.Task[None] | None = None

    async def setup(self, setup: FrameProcessorSetup) -> None:
        await super().setup(setup)
        self._analyzer.set_sample_rate(setup.audio_in_sample_rate)

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._stop_listening()
        await self._analyzer.cleanup()

    async def handle_user_turn_started(self) -> None:
        await self._stop_listening()

    async def handle_user_turn_stopped(self) -> None:
        await self._stop_listening()
        self._analyzer.clear()

    async def _stop_listening(self) -> None:
        if self._task is not None:
            await self.task_manager.cancel_task(self._task)
            self._task = None

    async def process_frame(self, frame: Frame) -> ProcessFrameResult:
        await super().process_frame(frame)
        if isinstance(frame, InputAudioRawFrame):
            self._analyzer.append_audio(frame.audio, self._speaking)
        elif isinstance(frame, VADUserStartedSpeakingFrame):
            self._speaking = True
            self._analyzer.update_vad_start_secs(frame.start_secs)
            await self._stop_listening()  # the caller goes on: this silence is over
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self._speaking = False
            await self._stop_listening()
            speech_end = time.monotonic() - frame.stop_secs
            self._task = self.task_manager.create_task(self._listen(speech_end, frame.stop_secs),
                                                       f"{self}::listen")
        return ProcessFrameResult.CONTINUE

    async def _score(self) -> float | None:
        """smart-turn on the window the analyzer holds (its buffer left as it is: the silence goes on)."""
        _, metrics = await asyncio.to_thread(self._analyzer._process_speech_segment, list(self._analyzer._audio_buffer))
        p = getattr(metrics, "probability", None)
        return None if p is None else float(p)

    async def _listen(self, speech_end: float, stop_secs: float) -> None:
        """From the VAD stop: one score per grid instant of the silence, until the rule ends the turn."""
        self.rule.silence_started()
        k = first_instant(stop_secs, self.rule.step_ms)
        step_s = self.rule.step_ms / 1000.0
        while True:
            await asyncio.sleep(max(0.0, speech_end + k * step_s - time.monotonic()))
            timed_out = k * self.rule.step_ms >= self.rule.policy.timeout_ms
            p = None if timed_out else await self._score()
            if self.rule.scored(k, p):
                break
            # a pass longer than a step: the next instant is the first one not yet past
            k = max(k + 1, math.floor(round((time.monotonic() - speech_end) / step_s, 6)))
        if self._log is not None:
            self._log.log(EventKind.TURN_DECISION, self._log.caller_turn_at(self._log.now_ns()), {
                "audio_p": None if p is None else round(p, 3), "silence_ms": k * self.rule.step_ms,
                "reason": "timeout" if p is None else "score", **self.rule.policy.to_dict()})
        await self.trigger_user_turn_stopped()


def listen_stop(parts: TurnParts) -> list[Any]:
    """`listen[:P:DELAY_MS:TIMEOUT_MS]`: smart-turn's own silence fallback set past the policy's timeout (the
    rule ends every turn), so its buffer holds the whole silence."""
    policy = parse_policy(parts.cfg.turn.partition(":")[2])
    analyzer = parts.smart_turn(SmartTurnParams(stop_secs=policy.timeout_ms / 1000 + 1))
    return [ListenThroughStopStrategy(analyzer=analyzer, policy=policy, log=parts.log)]


@dataclass
class ListenReplay:
    """The bench's replay of `--turn listen`, swept over the threshold (the action delay and the timeout are the
    default spec's): at each VAD stop, the rule fed the cached scores at its instants (`trace.listen`: per stop,
    P(complete) at the first instant at or after the stop, then every 100 ms)."""

    name: str = "listen"
    knob: str = "threshold"
    values: Sequence[float] = tuple(round(0.02 * k, 2) for k in range(51))
    default: float = 0.0
    policy: ListenPolicy | None = None

    def __post_init__(self) -> None:
        if self.policy is None:
            self.policy = parse_policy("")
        self.default = self.policy.threshold
        self.values = tuple(sorted({*self.values, self.default}))

    def declarations(self, trace: Any, value: float, passes: bool) -> list[float]:
        assert self.policy is not None
        listen = getattr(trace, "listen", None)
        if listen is None:
            raise ValueError(f"case {trace.id}: no listen scores (the bench fills them with its score cache)")
        rule = ListenThrough(ListenPolicy(value, self.policy.action_delay_ms, self.policy.timeout_ms))
        k0 = first_instant(VAD_STOP_S, rule.step_ms)
        out = []
        for s, scores in zip(trace.stops, listen, strict=True):
            speech_end = s.t_s - VAD_STOP_S
            nxt = next((t for t in trace.starts if t > s.t_s), math.inf)
            rule.silence_started()
            k = k0
            while speech_end + k * rule.step_ms / 1000.0 < nxt:
                j = k - k0
                timed_out = k * rule.step_ms >= rule.policy.timeout_ms
                if rule.scored(k, None if timed_out or j >= len(scores) else float(scores[j])):
                    t = speech_end + k * rule.step_ms / 1000.0 + (s.smart_ms / 1000.0 if passes and not timed_out else 0.0)
                    if t < nxt:
                        out.append(t)
                    break
                k += 1
        return out
