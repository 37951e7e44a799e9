"""The hold in front of the speaker that makes preemptive generation safe.

A preemptive reply (started at the VAD stop on the words recognised so far, before the turn is confirmed)
runs through the gate and the TTS like any other, but nothing of it may be heard, or reach the context,
before the turn is confirmed. The LLM service marks its start with a `HoldFrame`; from there this processor
holds every frame that is not a system frame (audio, playout marks, the TTS's word frames, the reply's
start and end) until the `ReleaseFrame` of that reply, then lets them go in order. A stale reply is
withdrawn with an `InterruptionFrame`: pipecat then flushes the gate's and the TTS's queues, and the hold
drops what it held, so not one sample or word of it reaches the speaker or the assistant context.
"""

from __future__ import annotations

from typing import Any

from pipecat.frames.frames import Frame, InterruptionFrame, SystemFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voicelab.pipeline.frames import HoldFrame, ReleaseFrame


class PreemptHold(FrameProcessor):
    """Holds a preemptive reply until it is released or withdrawn (see the module doc)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._holding: int | None = None  # gen_id of the reply being held
        self._held: list[tuple[Frame, FrameDirection]] = []
        self.dropped = 0  # frames of withdrawn replies (a test reads it)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, HoldFrame):
            self._holding = frame.gen_id
            return
        if isinstance(frame, ReleaseFrame):
            if frame.gen_id == self._holding:
                await self._release()
            return
        if isinstance(frame, InterruptionFrame):
            self.dropped += len(self._held)
            self._held.clear()
            self._holding = None
        elif (self._holding is not None and direction == FrameDirection.DOWNSTREAM
              and not isinstance(frame, SystemFrame)):
            self._held.append((frame, direction))
            return
        await self.push_frame(frame, direction)

    async def _release(self) -> None:
        held, self._held, self._holding = self._held, [], None
        for f, d in held:
            await self.push_frame(f, d)
