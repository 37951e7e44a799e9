"""A pipecat `LLMService` that runs an `engines/` engine and pushes its snapshots downstream.

On each `LLMContextFrame` it starts one generation on the chat so far and, for every step, pushes a
`SnapshotFrame` (the whole canvas, see `engines.snapshot.Snapshot`) bracketed by
`LLMFullResponseStart/EndFrame`. The next engine step runs only after the gate processor has acked the
snapshot (fed it and pinned what it released), so pinning takes effect before the engine can change
released text. An `InterruptionFrame` cancels the task running the generation (pipecat does that to every
processor's process task); the `finally` cancels the generation, which stops within one step.

Engine events (`llm_request`, `engine_snapshot`, `engine_done`, `error`) are logged with the reply turn
fixed when the request started. An engine that raises mid-stream is logged as an `error` row; the reply
ends there and the call carries on.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from pipecat.frames.frames import (
    Frame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
)
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.llm_service import LLMService
from pipecat.services.settings import LLMSettings

from engines.protocol import EngineLike, ReportsUsage
from engines.snapshot import Snapshot
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind, snapshot_payload
from voicelab.pipeline.frames import SnapshotFrame

K = EventKind


def chat_messages(context: LLMContext) -> list[dict[str, str]]:
    """The context as plain role/content messages (text parts joined; other roles dropped)."""
    out: list[dict[str, str]] = []
    for m in context.get_messages():
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role not in ("user", "assistant", "system"):
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if not isinstance(content, str) or not content.strip():
            continue
        if out and out[-1]["role"] == role == "user":  # two user turns in a row read as one utterance
            out[-1]["content"] += " " + content.strip()
            continue
        if role == "assistant" and not any(m["role"] == "user" for m in out):
            continue  # the greeting: the engines' corpus never opens with the bot, so they do not see it
        out.append({"role": role, "content": content.strip()})
    return out


def with_tool_spans(messages: list[dict[str, str]], memory: dict[str, list[str]]) -> list[dict[str, str]]:
    """Put back the tool-call spans each reply executed in front of its (spoken) assistant message."""
    out: list[dict[str, str]] = []
    for m in messages:
        if m["role"] == "assistant" and out and out[-1]["role"] == "user" and out[-1]["content"] in memory:
            m = {"role": "assistant", "content": "".join(memory[out[-1]["content"]]) + " " + m["content"]}
        out.append(m)
    return out


class EngineLLMService(LLMService):
    """Runs `engine.generate(messages)` per LLM request; see the module doc."""

    def __init__(self, engine: EngineLike, log: CallLog, *, ack_timeout_s: float = 2.0, **kwargs: Any) -> None:
        settings = LLMSettings(model=str(getattr(engine, "name", "engine")), system_instruction=None,
                               temperature=None, max_tokens=None, top_p=None, top_k=None,
                               frequency_penalty=None, presence_penalty=None, seed=None,
                               filter_incomplete_user_turns=None, user_turn_completion_config=None)
        super().__init__(settings=settings, **kwargs)
        self.engine = engine
        self._log = log
        # tool calls are executed, never spoken, so the played-words context lacks them; the
        # engine saw them in its own history (and was trained so): remember them per user turn
        self.tool_memory: dict[str, list[str]] = {}
        self.current_user = ""
        self._ack_timeout_s = ack_timeout_s
        self._gen_ids = itertools.count(1)
        self.generations = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            await self._generate(frame.context)
        else:
            await self.push_frame(frame, direction)

    def remember_tool_call(self, raw: str) -> None:
        """Called by the tool handler for each tool call of the reply being generated."""
        self.tool_memory.setdefault(self.current_user, []).append(raw)

    async def _generate(self, context: LLMContext) -> None:
        log = self._log
        turn = log.reply_turn
        log.request_turn = turn
        messages = with_tool_spans(chat_messages(context), self.tool_memory)
        last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        self.current_user = last_user
        gen_id = next(self._gen_ids)
        self.generations += 1
        log.log(K.LLM_REQUEST, turn, {"messages": len(messages), "text": last_user, "gen_id": gen_id})
        steps = 0
        last: Snapshot | None = None
        cancelled = True
        gen: Any = None
        await self.push_frame(LLMFullResponseStartFrame())
        try:
            gen = self.engine.generate(messages)
            async for snap in gen:
                log.log(K.ENGINE_SNAPSHOT, turn, {**snapshot_payload(snap, last, canvas=True), "gen_id": gen_id})
                last = snap
                steps += 1
                frame = SnapshotFrame(snapshot=snap, gen_id=gen_id, turn=turn, pin=gen.pin)
                await self.push_frame(frame)
                try:  # the gate pins before the engine takes its next step
                    await asyncio.wait_for(frame.ack.wait(), timeout=self._ack_timeout_s)
                except TimeoutError:
                    pass
            cancelled = last is None or not last.done
        except asyncio.CancelledError:
            raise
        except Exception as e:  # an engine crash ends this reply, not the call
            cancelled = True
            log.error("engine", e, turn)
        finally:
            if gen is not None and cancelled:
                gen.cancel()
            tokens = 0
            if last is not None:
                tokens = last.eos if last.eos is not None else last.prefix_len
            # input/output tokens as billed (HTTP usage) or counted (tokenizer): voicelab.analysis.price
            usage = gen.usage.to_dict() if isinstance(gen, ReportsUsage) else {}
            log.log(K.ENGINE_DONE, turn, {"tokens": tokens, "steps": steps, **usage,
                                          "forwards": last.forwards if last is not None else 0,
                                          "cancelled": cancelled, "gen_id": gen_id,
                                          "text": last.text() if last is not None else ""})
            await self.push_frame(LLMFullResponseEndFrame())
