"""The bot's greeting at call start, spoken through the same gate -> TTS -> speaker path as any reply.

`GreetingProcessor` goes between the engine's LLM service and the gate. When the pipeline starts it pushes one
finished reply of its own: a done `Snapshot` of the greeting text inside `LLMFullResponseStart/EndFrame`, with
reply turn `GREETING_TURN` (-1, the call-level turn: the figures answer caller utterances only, so the
greeting never counts as a FAR). The gate releases it like any committed text, Piper speaks it, the speaker
logs its playout and tells the caller scheduler when it started and ended (`bot_audio_end` of turn 0 is the
greeting's end), and the assistant aggregator keeps it in the context.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pipecat.frames.frames import Frame, LLMFullResponseEndFrame, LLMFullResponseStartFrame, StartFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from engines.snapshot import Snapshot
from voicelab.pipeline.frames import SnapshotFrame

GREETING_TURN = -1
GREETING_GEN_ID = 0  # the engine service numbers its generations from 1


def greeting_snapshot(text: str) -> Snapshot:
    """A finished canvas holding `text`, one position per word (leading spaces after the first)."""
    words = text.split()
    pieces = tuple(w if i == 0 else " " + w for i, w in enumerate(words))
    n = len(pieces)
    return Snapshot(step=0, t_ns=time.monotonic_ns(), tokens=(0,) * n, masked=(False,) * n,
                    confidence=(1.0,) * n, guesses=(0,) * n, pieces=pieces, eos=n, block_size=max(n, 1),
                    blocks_done=n, pinned=n, forwards=0, done=True)


def _already_final(_tokens: int) -> None:
    """Pin callback for a pinned gate: the greeting's canvas is finished, nothing can change it."""


class GreetingProcessor(FrameProcessor):
    """Speaks `text` once when the pipeline starts (nothing when it is empty)."""

    def __init__(self, text: str, *, ack_timeout_s: float = 2.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.text = text.strip()
        self._ack_timeout_s = ack_timeout_s
        self._sent = False

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, StartFrame) and self.text and not self._sent:
            self._sent = True
            await self._greet()  # queued behind the StartFrame, so every processor has started

    async def _greet(self) -> None:
        await self.push_frame(LLMFullResponseStartFrame())
        snap = SnapshotFrame(snapshot=greeting_snapshot(self.text), gen_id=GREETING_GEN_ID, turn=GREETING_TURN,
                             pin=_already_final)
        await self.push_frame(snap)
        try:  # the gate has released it before the reply's end goes down
            await asyncio.wait_for(snap.ack.wait(), timeout=self._ack_timeout_s)
        except TimeoutError:
            pass
        await self.push_frame(LLMFullResponseEndFrame())
