"""A pipecat `LLMService` that runs an `engines/` engine and pushes its snapshots downstream.

On each `LLMContextFrame` it starts one generation on the chat so far and, for every step, pushes a
`SnapshotFrame` (the whole canvas, see `engines.snapshot.Snapshot`) bracketed by
`LLMFullResponseStart/EndFrame`. The next engine step runs only after the gate processor has acked the
snapshot (fed it and pinned what it released), so pinning takes effect before the engine can change
released text. An `InterruptionFrame` cancels the task running the generation (pipecat does that to every
processor's process task); the `finally` cancels the generation, which stops within one step.

Preemptive generation: a `PreemptFrame` (the turn-end strategy's transcript at the VAD stop, before the turn
is confirmed) starts a generation at once, in a task of its own, marked by a `HoldFrame` so that
`voicelab.pipeline.processors.preempt_hold.PreemptHold` keeps everything it produces from the speaker. When the turn's
`LLMContextFrame` arrives, its last user message decides: the same words (after normalisation) release the
held reply (`hit`: no second generation); other words withdraw it (`miss`: the generation is cancelled, an
`InterruptionFrame` flushes the gate, the TTS and the hold, and the engine starts again on the final words).
Tool calls of a held reply wait for the release. Outcomes are logged as `preempt_result` rows.

Spoken tool-call confirmation (`--tool-reason confirm`, `voicelab.pipeline.processors.confirm_replies`): while a question
waits for the caller's answer no preemptive generation starts, and each reply first hands the caller's words to
`confirmation.reply_for`; a yes gives the reply to say instead of generating (`ScriptedGeneration`).

Engine events (`llm_request`, `engine_snapshot`, `engine_done`, `error`) are logged with the reply turn
fixed when the request started. An engine that raises mid-stream is logged as an `error` row; the reply
ends there and the call carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipecat.frames.frames import (
    Frame,
    InterruptionFrame,
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
from voicelab.pipeline.frames import HoldFrame, PreemptFrame, ReleaseFrame, SnapshotFrame
from voicelab.pipeline.processors.confirm_replies import ScriptedGeneration, ToolConfirmation
from voicelab.speech.wer import comparable_words

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


def same_words(a: str, b: str) -> bool:
    """Two transcripts say the same thing (case, punctuation and number spelling aside)."""
    return comparable_words(a) == comparable_words(b)


@dataclass
class _Pending:
    """A preemptive generation waiting for its turn to be confirmed."""

    gen_id: int
    text: str
    turn: int
    started_ns: int
    task: asyncio.Task[None]


class EngineLLMService(LLMService):
    """Runs `engine.generate(messages)` per LLM request; see the module doc."""

    def __init__(self, engine: EngineLike, log: CallLog, *, ack_timeout_s: float = 2.0, preemptive: bool = False,
                 context: LLMContext | None = None, **kwargs: Any) -> None:
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
        self.earlier_user: list[str] = []  # the caller's turns before current_user (tool calls need a reason)
        self._ack_timeout_s = ack_timeout_s
        self._gen_ids = itertools.count(1)
        self.generations = 0
        self.preemptive = preemptive
        self.context: LLMContext | None = context  # the call's context (read at a preemptive start)
        self._pending: _Pending | None = None
        self._answered_turn: int | None = None  # the latest caller turn whose LLM request arrived
        self._held_actions: list[Callable[[], None]] = []
        self.confirmation: ToolConfirmation | None = None  # set by the tool handler in mode `confirm`

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, PreemptFrame):
            if self.preemptive:
                await self._preempt(frame.text)
        elif isinstance(frame, LLMContextFrame):
            self._answered_turn = max(self._answered_turn if self._answered_turn is not None else -1,
                                      self._log.reply_turn)
            if not await self._confirm(frame.context):
                await self._generate(frame.context)
        else:
            if isinstance(frame, InterruptionFrame) and self._pending is not None:
                await self._withdraw(self._pending, "", notify=False)  # a barge-in: the held reply goes too
            await self.push_frame(frame, direction)

    # ---- preemptive generation ----------------------------------------------------------------------

    @property
    def holding(self) -> bool:
        """A preemptive reply is running and not confirmed: its tool calls must wait."""
        return self._pending is not None

    def run_when_released(self, action: Callable[[], None]) -> None:
        """Defer a side effect (a tool call) of the held reply until the turn confirms it."""
        self._held_actions.append(action)

    async def _preempt(self, text: str) -> None:
        if self.confirmation is not None and self.confirmation.waiting:
            return  # the caller is answering a question: their words decide before any engine runs
        text = text.strip()
        p = self._pending
        if p is not None and same_words(p.text, text):
            return
        if p is not None:  # newer words, or the caller went on: that answer is stale
            await self._withdraw(p, text)
        log = self._log
        turn = log.caller_turn_at(log.now_ns())
        if not text or self.context is None or (self._answered_turn is not None and turn <= self._answered_turn):
            return  # nothing to say, or words of a turn already answered (they arrived behind its end)
        messages = with_tool_spans(chat_messages(self.context), self.tool_memory)
        if messages and messages[-1]["role"] == "user":
            messages[-1] = {"role": "user", "content": f"{messages[-1]['content']} {text}"}
        else:
            messages.append({"role": "user", "content": text})
        gen_id = next(self._gen_ids)
        log.log(K.PREEMPT_START, turn, {"gen_id": gen_id, "text": text})
        await self.push_frame(HoldFrame(gen_id=gen_id))
        task = self.create_task(self._run(messages, turn, gen_id), name=f"preempt-{gen_id}")
        self._pending = _Pending(gen_id, text, turn, log.now_ns(), task)

    async def _confirm(self, context: LLMContext) -> bool:
        """The turn is confirmed: True when the held reply answers its words (and is released)."""
        p = self._pending
        if p is None:
            return False
        final = next((m["content"] for m in reversed(chat_messages(context)) if m["role"] == "user"), "")
        if not same_words(p.text, final):
            await self._withdraw(p, final)
            return False
        self._pending = None
        self._log.reply_turn = self._log.request_turn = p.turn
        self._log.log(K.PREEMPT_RESULT, p.turn, {"gen_id": p.gen_id, "outcome": "hit", "text": p.text,
                                                 "final": final, "wasted_engine_ms": 0.0})
        actions, self._held_actions = self._held_actions, []
        for act in actions:
            act()
        await self.push_frame(ReleaseFrame(gen_id=p.gen_id))
        return True

    async def _withdraw(self, p: _Pending, final: str, notify: bool = True) -> None:
        """Cancel a stale preemptive reply; with `notify`, flush what it left downstream."""
        self._pending = None
        self._held_actions.clear()
        p.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await p.task
        wasted = (self._log.now_ns() - p.started_ns) / 1e6
        self._log.log(K.PREEMPT_RESULT, p.turn, {"gen_id": p.gen_id, "outcome": "miss", "text": p.text,
                                                 "final": final, "wasted_engine_ms": round(wasted, 1)})
        if notify:
            await self.push_frame(InterruptionFrame())

    def remember_tool_call(self, raw: str) -> None:
        """Called by the tool handler for each tool call of the reply being generated."""
        self.tool_memory.setdefault(self.current_user, []).append(raw)

    async def _generate(self, context: LLMContext) -> None:
        messages = with_tool_spans(chat_messages(context), self.tool_memory)
        script = None
        if self.confirmation is not None:
            said = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
            script = self.confirmation.reply_for(said, self._log.reply_turn)
        await self._run(messages, self._log.reply_turn, next(self._gen_ids), script)

    async def _run(self, messages: list[dict[str, str]], turn: int, gen_id: int, script: str | None = None) -> None:
        """One reply: the engine's answer to `messages`, or `script` said as it is (no engine runs)."""
        log = self._log
        log.request_turn = turn
        last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        self.current_user = last_user
        self.earlier_user = [m["content"] for m in messages if m["role"] == "user"][:-1]
        if script is None:  # engine generations only
            self.generations += 1
        log.log(K.LLM_REQUEST, turn, {"messages": len(messages), "text": last_user, "gen_id": gen_id,
                                      **({"scripted": True} if script is not None else {})})
        steps = 0
        last: Snapshot | None = None
        cancelled = True
        gen: Any = None
        await self.push_frame(LLMFullResponseStartFrame())
        try:
            gen = self.engine.generate(messages) if script is None else ScriptedGeneration(script)
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
