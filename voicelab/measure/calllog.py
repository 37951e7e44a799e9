"""One call's clock, caller ground truth and event log (plain Python: no pipecat).

`CallLog` owns one call's clock (``time.monotonic_ns()`` at call start is t_ns 0), the caller's ground
truth as the fixture player reports it, and the turn attribution of `voicelab.measure.events`: caller rows
carry their utterance's index, reply-path rows carry the "reply turn" (the caller utterance being answered,
fixed at each turn end), call-level rows -1. Every component of the pipeline logs through it; rows go to an
`EventWriter` at once (a crash keeps what happened so far) and stay in memory for the summary.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from voicelab.measure.events import Event, EventKind, EventWriter

K = EventKind


@dataclass
class PlayedUtterance:
    """Ground truth of one caller utterance as the player put it on the call: ns on the call clock, with the
    answer it expects. `CallLog.add_utterance` logs it as the caller_* rows;
    `voicelab.measure.truth.Utterance` is the same truth in seconds, as calls/<call_id>.json holds it."""

    turn: int
    clip_start_ns: int
    clip_end_ns: int
    speech_start_ns: int
    speech_end_ns: int
    expect: str | None
    text: str
    expect_reply: str | dict[str, Any] | None = None  # the right answer, when the fixture says


class CallLog:
    """Clock, turn attribution and event rows of one call."""

    def __init__(self, call_id: str, writer: EventWriter | None = None,
                 on_event: Callable[[Event], None] | None = None) -> None:
        self.call_id = call_id
        self.t0_ns = time.monotonic_ns()
        self.writer = writer
        self.events: list[Event] = []
        self.utterances: list[PlayedUtterance] = []
        self.reply_turn = -1  # the caller utterance the bot is answering now
        self.request_turn = -1  # the reply turn of the latest LLM request (the reply being spoken)
        self.bot_speaking = False  # pipecat's view (BotStarted/StoppedSpeakingFrame)
        self.errors = 0
        self._on_event = on_event

    def restart_clock(self) -> None:
        """Set t_ns 0 to now (the call starts when audio starts flowing)."""
        self.t0_ns = time.monotonic_ns()

    def now_ns(self) -> int:
        return time.monotonic_ns() - self.t0_ns

    def to_call_ns(self, monotonic_ns: int) -> int:
        return monotonic_ns - self.t0_ns

    def log(self, kind: EventKind | str, turn: int | None = None, payload: dict[str, Any] | None = None,
            t_ns: int | None = None) -> Event:
        """Write one row; turn None means the current reply turn, t_ns None means now."""
        e = Event(call_id=self.call_id, turn=self.reply_turn if turn is None else turn,
                  t_ns=self.now_ns() if t_ns is None else t_ns, kind=str(kind), payload=payload or {})
        if e.kind == K.ERROR:
            self.errors += 1
        self.events.append(e)
        if self.writer is not None:
            self.writer.write(e)
        if self._on_event is not None:
            self._on_event(e)
        return e

    def error(self, where: str, exc: BaseException | str, turn: int | None = None) -> Event:
        msg = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        return self.log(K.ERROR, turn, {"where": where, "message": msg})

    # ---- caller ground truth ---------------------------------------------------------------------

    def add_utterance(self, u: PlayedUtterance) -> None:
        """Record a caller clip the player has placed, and log its ground-truth rows."""
        self.utterances.append(u)
        info: dict[str, Any] = {"text": u.text, "expect": u.expect}
        if u.expect_reply is not None:
            info["expect_reply"] = u.expect_reply
        self.log(K.CALLER_CLIP_START, u.turn, info, t_ns=u.clip_start_ns)
        self.log(K.CALLER_SPEECH_START, u.turn, info, t_ns=u.speech_start_ns)
        self.log(K.CALLER_SPEECH_END, u.turn, info, t_ns=u.speech_end_ns)
        self.log(K.CALLER_CLIP_END, u.turn, info, t_ns=u.clip_end_ns)

    def caller_turn_at(self, t_ns: int) -> int:
        """The latest caller utterance whose speech started at or before t_ns (-1 if none)."""
        turn = -1
        for u in self.utterances:
            if u.speech_start_ns <= t_ns:
                turn = u.turn
        return turn

    def utterance(self, turn: int) -> PlayedUtterance | None:
        return next((u for u in self.utterances if u.turn == turn), None)

    def on_turn_end(self) -> int:
        """A user turn ended now: the bot's next reply answers the latest caller utterance."""
        turn = self.caller_turn_at(self.now_ns())
        if turn >= 0:
            self.reply_turn = turn
        return self.reply_turn
