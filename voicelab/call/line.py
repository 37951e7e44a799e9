"""The line's own figures for one call, and for a run of calls: what the media stream itself added.

- caller frame pacing: how late the lab's 20 ms caller frames left against the line clock (the lab's own
  error as a carrier; it should stay near 0);
- the agent's sending: media messages, audio per message, arrival jitter (RFC 3550) and the longest gap;
- queue depth and queue delay: how much of the agent's audio waited in the carrier's playout queue, sampled
  every tick while it held audio and at each arrival (the delay that audio had before it was heard): what the
  caller hears lags what the agent sent by this much;
- clears (and the audio they dropped; those the agent's audio came back after: pauses; those while it was heard
  with the caller silent for `PROMPT_S`: the agent cut itself off, an audible revision) and marks (played or
  cleared).

Pure Python. Percentiles are None without samples, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from voicelab.call.pacing import LINE_RATE, ArrivalJitter, FrameClock

if TYPE_CHECKING:  # typing only: the caller's utterances as played
    from voicelab.measure.calllog import PlayedUtterance

PROMPT_S = 1.0  # a clear this long after the caller's speech ended still answers it (VAD stop, turn rule)


def _stats(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"p50": None, "p95": None, "max": None, "n": 0}
    a = np.asarray(values, dtype=float)
    return {"p50": round(float(np.percentile(a, 50)), 1), "p95": round(float(np.percentile(a, 95)), 1),
            "max": round(float(a.max()), 1), "n": int(a.size)}


@dataclass
class LineStats:
    clock: FrameClock = field(default_factory=FrameClock)
    arrivals: ArrivalJitter = field(default_factory=ArrivalJitter)
    depth_ms: list[float] = field(default_factory=list)  # per tick while the queue held audio
    delay_ms: list[float] = field(default_factory=list)  # per media message: queue depth when it arrived
    clears: int = 0
    clears_resumed: int = 0  # clears the agent's audio came back after within clear_pause_s: pauses, not stops
    clears_unprompted: int = 0  # clears while the agent was heard and the caller silent (caller_spoke)
    heard_clears_s: list[float] = field(default_factory=list)  # when each clear while the agent was heard came
    cleared_ms: float = 0.0
    marks_received: int = 0
    marks_played: int = 0
    marks_cleared: int = 0
    other_events: dict[str, int] = field(default_factory=dict)  # agent events the line ignores, by name

    def media(self, arrival_ms: float, samples: int, depth_before: int) -> None:
        self.arrivals.arrived(arrival_ms, samples)
        self.delay_ms.append(1000.0 * depth_before / LINE_RATE)

    def tick(self, depth: int) -> None:
        if depth > 0:
            self.depth_ms.append(1000.0 * depth / LINE_RATE)

    def clear(self, dropped: int, marks: int) -> None:
        self.clears += 1
        self.cleared_ms += 1000.0 * dropped / LINE_RATE
        self.marks_cleared += marks

    def other(self, event: str) -> None:
        self.other_events[event] = self.other_events.get(event, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return line_summary([self])


def caller_spoke(t_s: float, said: Sequence[PlayedUtterance], prompt_s: float = PROMPT_S) -> bool:
    """Whether the caller was speaking at t_s, or stopped at most `prompt_s` before: a clear then answers the
    caller (a barge-in, a backchannel); otherwise the agent stopped its own audio unprompted."""
    return any(u.speech_start_ns / 1e9 <= t_s <= u.speech_end_ns / 1e9 + prompt_s for u in said)


def line_summary(calls: Iterable[LineStats]) -> dict[str, Any]:
    """The `line` block of summary.json (and of each calls/<id>.json) over one or more calls."""
    cs = list(calls)
    jitters = [c.arrivals.jitter_ms for c in cs if c.arrivals.messages > 1]
    others: dict[str, int] = {}
    for c in cs:
        for k, v in c.other_events.items():
            others[k] = others.get(k, 0) + v
    return {
        "frame_ms": cs[0].clock.frame_ms if cs else None,
        "caller_frames": sum(len(c.clock.late_ms) for c in cs),
        "caller_send_late_ms": _stats([x for c in cs for x in c.clock.late_ms]),
        "agent_media_messages": sum(c.arrivals.messages for c in cs),
        "agent_audio_s": round(sum(c.arrivals.audio_ms for c in cs) / 1000.0, 2),
        "agent_frame_ms": _stats([x for c in cs for x in c.arrivals.frame_ms]),
        "agent_jitter_ms": round(max(jitters), 1) if jitters else None,  # the worst call's RFC 3550 jitter
        "agent_gap_ms": _stats([x for c in cs for x in c.arrivals.gaps_ms]),
        "queue_depth_ms": _stats([x for c in cs for x in c.depth_ms]),
        "queue_delay_ms": _stats([x for c in cs for x in c.delay_ms]),
        "clears": sum(c.clears for c in cs),
        "clears_resumed": sum(c.clears_resumed for c in cs),
        "clears_unprompted": sum(c.clears_unprompted for c in cs),
        "cleared_audio_ms": round(sum(c.cleared_ms for c in cs), 1),
        "marks": {"received": sum(c.marks_received for c in cs), "played": sum(c.marks_played for c in cs),
                  "cleared": sum(c.marks_cleared for c in cs)},
        "ignored_events": others,
    }
