"""The gate processor with speculative synthesis: confident text goes to TTS before it commits.

A `GateProcessor` that also keeps a `voicelab.rules.speculative.SpeculativeBook` per reply. After the gate has fed
a snapshot, the book proposes chunks that are not committed yet but whose positions pass the confidence
threshold: each is logged (`speculative_request`) and sent as a `SpeculativeTextFrame` (the TTS synthesizes
it and holds the audio). Each committed `ChunkTextFrame` is matched against the book on its way out: a
speculative chunk with the same span and text makes it a hit (`speculative_id` set: the TTS plays the held
audio); speculative chunks the commit passed, that were revised, or that are left when the reply ends get a
`SpeculativeDropFrame`. The TTS (`voicelab.pipeline.services.speculative_tts`) logs what became of each.
"""

from __future__ import annotations

from typing import Any

from pipecat.frames.frames import (
    Frame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
)
from pipecat.processors.frame_processor import FrameDirection

from voicelab.gate import Gate, GatePolicy, ShaperParams
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind
from voicelab.pipeline.frames import ChunkTextFrame, SnapshotFrame, SpeculativeDropFrame, SpeculativeTextFrame
from voicelab.pipeline.processors.gate_processor import GateProcessor
from voicelab.rules.speculative import Drop, SpeculativeBook, check_threshold

K = EventKind


class SpeculativeGateProcessor(GateProcessor):
    """Snapshots in; committed `ChunkTextFrame`s plus speculative frames out (see the module doc)."""

    def __init__(self, log: CallLog, policy: GatePolicy | str = "pinned", shaper: ShaperParams | None = None, *,
                 threshold: float, max_ahead: int = 2, **kwargs: Any) -> None:
        super().__init__(log, policy, shaper, **kwargs)
        self.threshold = check_threshold(threshold)
        self.max_ahead = max_ahead
        self._book: SpeculativeBook | None = None
        self._book_gate: Gate | None = None  # the gate (reply) the book belongs to
        self._spec_base = 0  # spec ids are unique within the call
        self._next_spec_id = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, (LLMFullResponseStartFrame, LLMFullResponseEndFrame)):
            async with self._lock:  # drops go out before the reply's end
                await self._push_drops(self._close_book())
        elif isinstance(frame, InterruptionFrame):
            self._book, self._book_gate = None, None  # the TTS drops everything it holds on an interruption
        await super().process_frame(frame, direction)

    async def _on_snapshot(self, f: SnapshotFrame) -> None:
        await super()._on_snapshot(f)  # the gate feeds; its commits are matched in push_frame
        gate = self._gate
        if gate is None or f.snapshot is None:
            return
        async with self._lock:
            if gate is not self._gate:
                return
            book = await self._book_for(gate)
            up = book.observe(f.snapshot, gate.released_chars, len(gate.chunks), self._log.now_ns())
            await self._push_drops(up.dropped)
            for s in up.new:
                sid = self._spec_base + s.spec_id
                self._next_spec_id = max(self._next_spec_id, sid + 1)
                self._log.log(K.SPECULATIVE_REQUEST, self._turn,
                              {"spec_id": sid, "text": s.text, "start_char": s.start_char, "end_char": s.end_char,
                               "confidence": round(s.confidence, 3)})
                await super().push_frame(SpeculativeTextFrame(spec_id=sid, text=s.text, turn=self._turn))

    async def push_frame(self, frame: Frame, direction: FrameDirection = FrameDirection.DOWNSTREAM) -> None:
        gate = self._gate
        if isinstance(frame, ChunkTextFrame) and gate is not None:
            idx = frame.chunk_id - self._chunk_base  # the gate's own chunk index
            chunks = gate.chunks
            if 0 <= idx < len(chunks):
                c = chunks[idx]
                hit, dropped = (await self._book_for(gate)).commit(c.start_char, c.end_char, gate.chunk_raw(idx))
                await self._push_drops(dropped)
                if hit is not None:
                    frame.speculative_id = self._spec_base + hit.spec_id
        await super().push_frame(frame, direction)

    # ---- the book -----------------------------------------------------------------------------------

    async def _book_for(self, gate: Gate) -> SpeculativeBook:
        """The book of `gate`'s reply (a new reply closes the old book first)."""
        if self._book is None or self._book_gate is not gate:
            await self._push_drops(self._close_book())
            self._book = SpeculativeBook(self.threshold, self.shaper, self.max_ahead)
            self._book_gate = gate
            self._spec_base = self._next_spec_id
        return self._book

    def _close_book(self) -> list[Drop]:
        book, self._book, self._book_gate = self._book, None, None
        return [] if book is None else book.close()

    async def _push_drops(self, drops: list[Drop]) -> None:
        for d in drops:
            await super().push_frame(SpeculativeDropFrame(spec_id=self._spec_base + d.spec.spec_id,
                                                          reason=d.reason))
