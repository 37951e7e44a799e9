"""Turn numbering for a live call, which has no fixture truth: `LiveCallLog` numbers the caller's turns itself
(a turn starts at the first VAD start after the previous turn ended), so every row of a reply carries the
turn it answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from voicelab.measure.calllog import CallLog
from voicelab.measure.events import Event, EventKind

K = EventKind


class LiveCallLog(CallLog):
    """A `CallLog` for a live caller: turn n is the n-th stretch of caller speech that ends in a turn end.

    The turn starts at the VAD's start (minus its `start_secs`, the speech it waited for) and stays open
    until pipecat decides the user's turn ended, so a pause inside a sentence does not start a new turn.
    No caller ground-truth rows are logged: there is no truth to log.
    """

    def __init__(self, call_id: str, on_event: Callable[[Event], None] | None = None) -> None:
        super().__init__(call_id, None, on_event=on_event)
        self.turn_starts: list[int] = []  # call ns of each caller turn's estimated speech start
        self._turn_open = False

    def log(self, kind: EventKind | str, turn: int | None = None, payload: dict[str, Any] | None = None,
            t_ns: int | None = None) -> Event:
        if str(kind) == K.VAD_START:
            now = self.now_ns() if t_ns is None else t_ns
            if not self._turn_open:
                start_secs = float((payload or {}).get("start_secs", 0.0) or 0.0)
                self.turn_starts.append(max(0, now - int(start_secs * 1e9)))
                self._turn_open = True
            turn = self.caller_turn_at(now)
        return super().log(kind, turn, payload, t_ns)

    def caller_turn_at(self, t_ns: int) -> int:
        turn = -1
        for i, start in enumerate(self.turn_starts):
            if start <= t_ns:
                turn = i
        return turn

    def on_turn_end(self) -> int:
        turn = super().on_turn_end()
        self._turn_open = False
        return turn
