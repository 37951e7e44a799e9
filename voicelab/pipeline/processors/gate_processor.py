"""Pipecat adapter around the pure stable-chunk gate (`voicelab.gate.Gate`).

Consumes the engine's `SnapshotFrame`s (from `voicelab.pipeline.services.llm_service`), feeds them to one `Gate` per reply,
pins released tokens back to the generation before it steps again (the snapshot frame carries an ack the
LLM service waits on), ticks the gate's hold timer, and emits one `ChunkTextFrame` (an
`AggregatedTextFrame`, so pipecat's TTS speaks it at once with no sentence buffering) per released chunk.
Tool-call spans are never spoken: committed ones go to the tool handler, with the engine's commit-time
confidence on the span (`voicelab.rules.tool_reason.CommitConfidence`), and are logged as `tool_call` with what the
handler returned (its outcome: executed or refused, and why); a handler that returns None logs the row itself
when it acts (a held preemptive reply). A row with outcome `asked` and a `question` (`--tool-reason confirm`)
ends the reply: the question is said instead of the engine's words after the call, which would say it is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from pipecat.frames.frames import (
    EndFrame,
    Frame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voicelab.gate import Gate, GatePolicy, ShaperParams, ToolCall
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind
from voicelab.pipeline.frames import CHUNK_TEXT_TYPE, ChunkTextFrame, SnapshotFrame
from voicelab.pipeline.processors.greeting import greeting_snapshot
from voicelab.rules.tool_reason import CommitConfidence

K = EventKind


# (call, reply turn, commit-time confidence on the span) -> extra fields of its tool_call row (None: it logs)
ToolHandler = Callable[[ToolCall, int, float | None], dict[str, Any] | None]


class GateProcessor(FrameProcessor):
    """Snapshots in, `ChunkTextFrame`s out (one gate per reply)."""

    def __init__(self, log: CallLog, policy: GatePolicy | str = "pinned", shaper: ShaperParams | None = None,
                 tick_ms: float = 20.0, tool_handler: ToolHandler | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._log = log
        self.policy = GatePolicy.parse(policy) if isinstance(policy, str) else policy
        self.shaper = shaper or ShaperParams()
        self._tick_s = tick_ms / 1000.0
        self._tool_handler = tool_handler
        self._gate: Gate | None = None
        self._gen_id: int | None = None
        self._confidence = CommitConfidence()  # of the reply being fed
        self._snapshot: Any = None  # the newest snapshot fed
        self._turn = -1
        self._next_chunk_id = 0  # chunk ids are unique within the call
        self._chunk_base = 0
        self._tick_task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # feed and tick push chunks in release order
        self.tool_calls: list[ToolCall] = []
        self.malformed_tool_spans: list[str] = []

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, SnapshotFrame):
            try:
                await self._on_snapshot(frame)
            finally:
                frame.ack.set()
        elif isinstance(frame, LLMFullResponseStartFrame):
            self._drop_gate()
            self._ensure_ticker()
            await self.push_frame(frame, direction)
        elif isinstance(frame, LLMFullResponseEndFrame):
            # a reply that ended without a done snapshot (cancelled, engine error) says nothing more
            self._drop_gate()
            await self.push_frame(frame, direction)
        elif isinstance(frame, InterruptionFrame):
            self._drop_gate()
            await self.push_frame(frame, direction)
        elif isinstance(frame, EndFrame):
            await self._stop_ticker()
            await self.push_frame(frame, direction)
        else:
            await self.push_frame(frame, direction)

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._stop_ticker()

    # ---- gate ---------------------------------------------------------------------------------------

    def _drop_gate(self) -> None:
        self._gate = None
        self._gen_id = None

    async def _on_snapshot(self, f: SnapshotFrame) -> None:
        if f.gen_id != self._gen_id:
            pin = f.pin if self.policy.pinned else None
            self._gate = Gate(self.policy, self.shaper, pin=pin)
            self._gen_id = f.gen_id
            self._confidence = CommitConfidence()
            self._turn = f.turn
            self._chunk_base = self._next_chunk_id
        gate = self._gate
        if gate is None:
            return
        if f.snapshot is not None:
            self._confidence.observe(f.snapshot)
            self._snapshot = f.snapshot
        async with self._lock:
            chunks = gate.feed(f.snapshot, self._log.now_ns())
            await self._emit(gate, chunks)

    async def _emit(self, gate: Gate, chunks: list[Any]) -> None:
        ask, ask_at = "", 0
        for call in gate.pop_tool_calls():
            self.tool_calls.append(call)
            conf = self._confidence.tool_span(self._snapshot) if self._snapshot is not None else None
            payload = {**call.to_payload(), "confidence": None if conf is None else round(conf, 4)}
            extra: dict[str, Any] | None = {}
            if self._tool_handler is not None:
                try:
                    extra = self._tool_handler(call, self._turn, conf)
                except Exception as e:  # a broken tool must not stop the call
                    self._log.error("tool_handler", e, self._turn)
                    extra = {"outcome": "error"}
            if extra is not None:
                self._log.log(K.TOOL_CALL, self._turn, {**payload, **extra})
                if extra.get("outcome") == "asked" and not ask:
                    ask, ask_at = str(extra.get("question") or ""), call.start_char
        for span in gate.malformed_tool_spans[len(self.malformed_tool_spans):]:
            self.malformed_tool_spans.append(span)
        if ask:  # what the reply said before the call is said; the rest is replaced by the question
            await self._push_chunks(gate, [c for c in chunks if c.end_char <= ask_at])
            await self._ask_instead(ask)
            return
        await self._push_chunks(gate, chunks)

    async def _ask_instead(self, question: str) -> None:
        """Say `question` and nothing more of this reply: its later snapshots find no gate and are dropped."""
        self._gate = None
        asking = Gate(self.policy, self.shaper, pin=lambda _n: None)  # a finished canvas: nothing to pin
        self._chunk_base = self._next_chunk_id
        await self._push_chunks(asking, asking.feed(greeting_snapshot(question), self._log.now_ns()))

    async def _push_chunks(self, gate: Gate, chunks: list[Any]) -> None:
        for chunk in chunks:
            cid = self._chunk_base + chunk.chunk_id
            self._next_chunk_id = max(self._next_chunk_id, cid + 1)
            payload = gate.commit_payload(chunk)
            payload["chunk_id"] = cid
            payload["gate_chunk"] = chunk.chunk_id
            self._log.log(K.GATE_COMMIT, self._turn, payload)
            out = ChunkTextFrame(text=chunk.text, text_type=CHUNK_TEXT_TYPE, chunk_id=cid, turn=self._turn)
            await self.push_frame(out)

    # ---- hold timer ---------------------------------------------------------------------------------

    def _ensure_ticker(self) -> None:
        if self._tick_task is None:
            self._tick_task = self.create_task(self._ticker(), name="gate_ticker")

    async def _stop_ticker(self) -> None:
        if self._tick_task is not None:
            await self.cancel_task(self._tick_task)
            self._tick_task = None

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(self._tick_s)
            gate = self._gate
            if gate is None or gate.finished:
                continue
            async with self._lock:
                if gate is self._gate:
                    await self._emit(gate, gate.tick(self._log.now_ns()))
