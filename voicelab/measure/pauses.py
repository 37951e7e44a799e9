"""Playout pauses (barge-in by pause, decide, resume), attributed to the caller utterance that caused them.

Pure Python over event rows. A `playout_pause` belongs to the latest caller utterance whose true speech
onset (`caller_speech_start`) is at or before it; the `playout_resume` that follows it carries `gap_ms`, the
silence the pause put into the bot's speech. A pause without a resume ended in a stop (an interruption) or
in the end of the call.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from voicelab.measure.events import Event, EventKind

K = EventKind


@dataclass
class TurnPauses:
    pauses: int = 0
    resume_gaps_ms: list[float] = field(default_factory=list)


def pauses_by_turn(evs: Iterable[Event]) -> dict[int, TurnPauses]:
    """{caller turn: its pauses and resume gaps} for the events of one call (sorted by time)."""
    rows = sorted(evs, key=lambda e: e.t_ns)
    starts = [(e.t_ns, e.turn) for e in rows if e.kind == K.CALLER_SPEECH_START]
    out: dict[int, TurnPauses] = {}
    owner: int | None = None  # caller turn of the open pause
    for e in rows:
        if e.kind == K.PLAYOUT_PAUSE:
            before = [turn for t, turn in starts if t <= e.t_ns]
            owner = before[-1] if before else None
            if owner is not None:
                out.setdefault(owner, TurnPauses()).pauses += 1
        elif e.kind == K.PLAYOUT_RESUME and owner is not None:
            out[owner].resume_gaps_ms.append(float(e.payload["gap_ms"]))
            owner = None
    return out
