"""The pipeline side of spoken tool-call confirmation (`--tool-reason confirm`, rules in `voicelab.rules.confirm`).

Three places take part, all through the normal reply path:

- the tool handler (`voicelab.pipeline.assembly.make_tool_handler`) gets `asked` from the rule for an unsure
  destructive call: it does not run it, `ask`s here, and returns the row with the `question`; the gate processor
  says that question instead of the rest of the engine's reply (the engine's words would say it is done), so it
  is synthesized, played and kept in the context like any reply;
- the engine service (`voicelab.pipeline.services.llm_service`) calls `reply_for` with the caller's next turn before it
  generates: a yes gives the reply to say instead of generating (`ScriptedGeneration`: the call's span, then the
  shop's words for it done); a no or anything else refuses the call (logged here) and the engine answers;
- the scripted reply's span reaches the tool handler again, which `take`s the confirmation and runs the call
  (outcome `confirmed`, put into the engine's history before that reply).

`close` at the call's end refuses what was never answered. Refused calls are logged as `tool_call` rows and
kept in the call's tool list, like the handler's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from engines.snapshot import Snapshot
from voicelab.gate import ToolCall
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind
from voicelab.pipeline.processors.greeting import greeting_snapshot
from voicelab.rules.confirm import Asked, Confirmations, Resolved, confirmed_reply, question

K = EventKind


class ScriptedGeneration:
    """A generation whose answer is known: one finished snapshot of `text` (no engine runs)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._cancelled = False

    def pin(self, n: int) -> None:
        """Nothing to pin: the canvas is finished."""

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def __iter__(self) -> Iterator[Snapshot]:
        if not self._cancelled:
            yield greeting_snapshot(self.text)

    async def __aiter__(self) -> AsyncIterator[Snapshot]:
        for snap in self:
            yield snap


def _conf(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


class ToolConfirmation:
    """One call's spoken confirmations; `tools` is the call's tool list (shared with the tool handler)."""

    def __init__(self, log: CallLog, tools: list[dict[str, Any]]) -> None:
        self._log = log
        self._tools = tools
        self.book = Confirmations()

    @property
    def waiting(self) -> bool:
        """A question waits for the caller's answer (a preemptive start would answer it with the engine)."""
        return self.book.waiting is not None

    def asked(self, call: ToolCall, turn: int, confidence: float | None) -> Asked:
        """The question about `call` (not waiting yet: `wait` once the reply that says it is released)."""
        return Asked(call, turn, confidence, question(call.name, call.args), confirmed_reply(call))

    def wait(self, asked: Asked, turn: int) -> bool:
        """Wait for the caller's answer; False (and refused, logged) when another question already waits."""
        if self.book.ask(asked):
            return True
        self._refuse(Resolved(asked, "refused", "another confirmation question already waits"), turn)
        return False

    def reply_for(self, said: str, turn: int) -> str | None:
        """The caller's turn `turn` says `said`: the reply to say instead of generating (a yes), else None."""
        reply = None
        for r in self.book.resolve(said):
            if r.outcome == "confirmed":
                reply = r.asked.reply
            else:
                self._refuse(r, turn)
        return reply

    def take(self, call: ToolCall) -> Resolved | None:
        """The caller's yes to this call, when it is the confirmed one being run now."""
        return self.book.take(call)

    def close(self) -> None:
        """The call ended: refuse every asked call that did not run."""
        for r in self.book.close():
            self._refuse(r, r.asked.turn)

    def _refuse(self, r: Resolved, turn: int) -> None:
        row = {"outcome": "refused", "reason": r.reason}
        self._tools.append({"turn": turn, **r.asked.call.to_payload(), **row})
        self._log.log(K.TOOL_CALL, turn, {**r.asked.call.to_payload(), "confidence": _conf(r.asked.confidence),
                                          **row})
