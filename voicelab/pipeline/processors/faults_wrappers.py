"""The wrappers behind `voicelab run --inject` (see `voicelab.rules.faults`): each makes one real component fail.

- `FaultyEngine`: the generation of the targeted reply raises before its first snapshot, or never yields one;
- `FaultyPiperTTS` (a TTS service, `voicelab.pipeline.services.faulty_tts`): Piper raises on the targeted
  reply's first sentence, or never delivers it;
- `SttFaults` (a processor right after the recogniser): the targeted final transcript is lost, with an `error`
  row (raise) or silently (stall: the recogniser never finalizes);
- `hang_up_when_due`: the caller hangs up (the call's pipeline is cancelled from the caller's side).

A stall waits for ever on purpose: ending it is the watchdogs' job (`voicelab.pipeline.processors.watchdog`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any

from pipecat.frames.frames import Frame, InterimTranscriptionFrame, TranscriptionFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from engines.protocol import EngineLike, EngineWrapper, GenerationLike, GenerationWrapper
from engines.snapshot import Snapshot
from voicelab.measure.calllog import CallLog
from voicelab.rules.faults import Fault, FaultPlan, InjectedFault


async def fail(fault: Fault) -> None:
    """Raise, or wait for ever (until cancelled by a watchdog or the end of the call)."""
    if fault.action == "raise":
        raise InjectedFault(f"{fault.spec} (injected)")
    await asyncio.Event().wait()


class _FaultyGeneration(GenerationWrapper):
    def __init__(self, inner: GenerationLike, fault: Fault) -> None:
        super().__init__(inner)
        self.fault = fault

    def __iter__(self) -> Iterator[Snapshot]:
        raise InjectedFault(f"{self.fault.spec} (injected)")

    async def __aiter__(self) -> AsyncIterator[Snapshot]:
        try:
            await fail(self.fault)
        finally:
            self.inner.cancel()
        async for snap in self.inner:  # pragma: no cover - fail never returns
            yield snap


class FaultyEngine(EngineWrapper):
    """An `EngineLike` whose targeted generation fails (see the module doc)."""

    def __init__(self, inner: EngineLike, plan: FaultPlan, log: CallLog) -> None:
        super().__init__(inner)
        self._plan = plan
        self._log = log

    def generate(self, messages: Sequence[dict[str, str]], **overrides: object) -> GenerationLike:
        gen = self.inner.generate(messages, **overrides)
        fault = self._plan.take("engine", self._log.request_turn)
        return gen if fault is None else _FaultyGeneration(gen, fault)


class SttFaults(FrameProcessor):
    """Right after the recogniser: loses the targeted final transcript (and the interims of that utterance)."""

    def __init__(self, plan: FaultPlan, log: CallLog, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._plan = plan
        self._log = log
        self._lost_turn: int | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame | InterimTranscriptionFrame):
            turn = self._log.caller_turn_at(self._log.now_ns())
            if turn == self._lost_turn:
                return
            if isinstance(frame, TranscriptionFrame):
                fault = self._plan.take("stt", turn)
                if fault is not None:
                    self._lost_turn = turn
                    if fault.action == "raise":
                        self._log.error("stt", InjectedFault(f"{fault.spec} (injected)"), turn)
                    return
        await self.push_frame(frame, direction)


async def hang_up_when_due(plan: FaultPlan, hang_up: Callable[[], Awaitable[None]], poll_s: float = 0.02) -> None:
    """Wait for the plan's caller-disconnect moment, then hang up (returns at once when there is none)."""
    if not any(f.kind == "caller-disconnect" for f in plan.faults):
        return
    while plan.disconnect_due() is None:
        await asyncio.sleep(poll_s)
    await hang_up()
