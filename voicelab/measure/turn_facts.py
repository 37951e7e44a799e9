"""What one caller turn's figures are computed from: the facts `voicelab.measure.metrics` derives from a call's
event rows, and that each figure of the catalogue (`voicelab.measure.figures`) reads its value from.

Plain data, no logic of its own beyond counting: the catalogue imports it, and so does metrics.py, which
fills it in, so the two need not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voicelab.measure.events import Event
from voicelab.measure.pauses import TurnPauses


@dataclass(slots=True)
class RevisionCounts:
    """Changes of one reply's text by how far it had travelled (`voicelab.measure.metrics.RevisionTracker`)."""

    churn: int = 0  # changed before the gate released it
    post_synthesis: int = 0  # changed after release / TTS request, before it was played
    audible: int = 0  # changed after it started playing

    def add(self, other: RevisionCounts) -> None:
        self.churn += other.churn
        self.post_synthesis += other.post_synthesis
        self.audible += other.audible


@dataclass(frozen=True, slots=True)
class LoggedUtterance:
    """One caller utterance read back from its turn's caller_speech_start / _end rows (ns; None where a row is
    missing): what those rows keep of a `voicelab.measure.calllog.PlayedUtterance`, less the clip bounds."""

    start: int | None  # true speech onset, ns
    end: int | None  # true speech end, ns
    expect: Any = None  # "interrupt" | "no_interrupt" | None
    text: Any = None  # what the caller said
    expect_reply: Any = None  # the answer the fixture scores the reply against


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """What one caller turn's figures are computed from: the utterance, the reply that answers it (after a false
    cut-in, the later answer), the call's rows, and the steps of `voicelab.measure.metrics` applied to them. Each
    figure's entry in `voicelab.measure.figures` says which of these its value is."""

    call_id: str
    turn: int
    said: LoggedUtterance
    reply: list[Event]
    events: list[Event]  # the whole call's rows
    far: float | None  # ms, unrounded
    cut_in: bool
    preemptive: str | None
    preempt_wasted: float
    heard_errors: int | None
    played_words: int
    cut: bool  # the reply was cut by a barge-in
    revisions: RevisionCounts | None
    answer: dict[str, Any]
    stt: dict[str, Any]
    slots_read: bool | None
    path: dict[str, float | None]  # the critical path's parts
    stop_latency: float | None
    engine: dict[str, Any]
    speculative: dict[str, Any]
    barged: bool  # an interruption while the bot spoke was attributed to this turn (`_false_barge_ins`)
    pauses: TurnPauses | None  # its playout pauses (`pauses_by_turn`)

    def count(self, kind: str) -> int:
        """Rows of this kind in the reply."""
        return sum(1 for e in self.reply if e.kind == kind)
