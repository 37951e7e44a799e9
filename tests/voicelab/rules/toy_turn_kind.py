"""A toy turn-end kind, `--turn toy:MS`: the turn ends MS after the caller's estimated end of speech, once a
final transcript of the turn is in. All a turn-end kind needs, in one module: the pure rule (`ToyTurnEnd`), the
pipecat stop strategy around it (`ToyTurnEndStopStrategy`, built by `toy_stop`), the bench replay around it
(`ToyTurnEndReplay`) and the table entry (`TOY`, added with `voicelab.rules.turn_kinds.register`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipecat.frames.frames import (
    Frame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.turns.types import ProcessFrameResult
from pipecat.turns.user_stop.base_user_turn_stop_strategy import BaseUserTurnStopStrategy

from voicelab.pipeline.turns.factory import TurnParts
from voicelab.rules.turn_kinds import TurnKind, silence_argument
from voicelab.turnbench.replay import DEFAULT_VAD, Trace


class ToyTurnEnd:
    """The pure rule, on timed events (seconds on any one clock)."""

    def __init__(self, silence_s: float) -> None:
        self.silence_s = silence_s
        self.speech_end_s: float | None = None  # the caller's estimated end of speech (None: speaking)
        self.final_at_s: float | None = None  # when the turn's latest final transcript landed

    def new_turn(self) -> None:
        self.speech_end_s = self.final_at_s = None

    def vad_started(self, now_s: float) -> None:
        self.speech_end_s = None

    def vad_stopped(self, now_s: float, stop_secs: float) -> None:
        self.speech_end_s = now_s - stop_secs

    def final_heard(self, now_s: float) -> None:
        self.final_at_s = now_s

    def end_at_s(self) -> float | None:
        """When the turn ends if nothing else happens (None: not on what has been heard)."""
        if self.speech_end_s is None or self.final_at_s is None:
            return None
        return max(self.speech_end_s + self.silence_s, self.final_at_s)


class ToyTurnEndStopStrategy(BaseUserTurnStopStrategy):
    """The pipecat side: `ToyTurnEnd` fed `time.monotonic()`; the turn ends at the rule's `end_at_s`."""

    def __init__(self, *, silence_s: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rule = ToyTurnEnd(silence_s)
        self._task: asyncio.Task[None] | None = None

    async def handle_user_turn_started(self) -> None:
        self.rule.new_turn()
        await self._cancel()

    async def handle_user_turn_stopped(self) -> None:
        self.rule.new_turn()
        await self._cancel()

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._cancel()

    async def process_frame(self, frame: Frame) -> ProcessFrameResult:
        await super().process_frame(frame)
        if isinstance(frame, VADUserStartedSpeakingFrame):
            self.rule.vad_started(time.monotonic())
            await self._cancel()
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            self.rule.vad_stopped(time.monotonic(), frame.stop_secs)
            await self._arm()
        elif isinstance(frame, TranscriptionFrame):
            self.rule.final_heard(time.monotonic())
            await self._arm()
        return ProcessFrameResult.CONTINUE

    async def _arm(self) -> None:
        await self._cancel()
        if self.rule.end_at_s() is not None:
            self._task = self.task_manager.create_task(self._end(), f"{self}::end")

    async def _end(self) -> None:
        end = self.rule.end_at_s()
        if end is not None:
            await asyncio.sleep(max(0.0, end - time.monotonic()))
            self._task = None
            await self.trigger_user_turn_stopped()

    async def _cancel(self) -> None:
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            with contextlib.suppress(asyncio.CancelledError):
                await self.task_manager.cancel_task(task)


def toy_stop(parts: TurnParts) -> list[Any]:
    return [ToyTurnEndStopStrategy(silence_s=parts.silence_s())]


@dataclass
class ToyTurnEndReplay:
    """The bench side: `ToyTurnEnd` fed the trace's VAD stops and final readings on the case's clock."""

    name: str = "toy"
    knob: str = "silence_ms"
    values: Sequence[float] = (100.0, 200.0, 300.0, 500.0, 800.0, 1200.0)
    default: float = 300.0

    def declarations(self, trace: Trace, value: float, passes: bool) -> list[float]:
        rule = ToyTurnEnd(value / 1000.0)
        out: list[float] = []
        for s in trace.stops:
            rule.vad_stopped(s.t_s, DEFAULT_VAD.stop_secs)
            if s.text:  # the final lands at the stop, or after Whisper's pass
                rule.final_heard(s.t_s + (s.stt_ms / 1000.0 if passes else 0.0))
            t = rule.end_at_s()
            if t is not None and t < min((x for x in trace.starts if x > s.t_s), default=float("inf")):
                out.append(t)
        return out


TOY = TurnKind("toy", "toy:MS (the turn ends MS after the speech)", silence_argument(), frozenset(), toy_stop,
               ToyTurnEndReplay)
