"""Caller speech of a live call, found in the server's own recording (plain Python + numpy).

A live caller has no fixture truth, so the reference is the server-side recording: its left channel holds
the caller's microphone audio as the server received it, each frame placed at its arrival time on the call
clock. A live turn (`voicelab.web.calllog.LiveCallLog`: from the VAD's first start to pipecat's turn end)
gets the acoustic start and end (the onset rule (docs/metrics.md), `voicelab.measure.onset.segments`) of the
speech stretches of that channel which begin inside the turn's window. These become the call's
`utterances` (calls/<id>.json, `voicelab.measure.truth.call_truth_dict`) and its `caller_speech_start/end`
rows, so `summarize` and the truth analyzer read a live call exactly as they read a fixture call.

A turn's window runs from `slack_s` before the VAD's estimate of its start (the VAD hears speech later than
it arrives, never earlier) to its turn end, and never reaches back into the previous turn's window. A turn
with no speech stretch in its window (the VAD fired on a noise the onset rule does not count) gets no
utterance: it has no FAR.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from voicelab.measure import onset
from voicelab.measure.events import Event, EventKind
from voicelab.measure.truth import Utterance

K = EventKind
SLACK_S = 0.5  # how far before the VAD's start estimate a turn's speech may begin
SOURCE = "server_recording"  # the payload `source` of caller rows derived here


@dataclass(frozen=True)
class LiveTurn:
    """One live caller turn as the pipeline saw it (ns on the call clock)."""

    turn: int
    start_ns: int  # the VAD's estimate of the speech start: first vad_start minus its start_secs
    end_ns: int | None  # pipecat's turn end; None when the call ended inside the turn


def live_turns(events: Iterable[Event]) -> list[LiveTurn]:
    """The caller turns of a live call from its vad_start and turn_end rows, in turn order."""
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    for e in sorted(events, key=lambda e: e.t_ns):
        if e.turn < 0:
            continue
        if e.kind == K.VAD_START and e.turn not in starts:
            start_secs = float(e.payload.get("start_secs") or 0.0)
            starts[e.turn] = max(0, e.t_ns - int(start_secs * 1e9))
        elif e.kind == K.TURN_END and e.turn not in ends:
            ends[e.turn] = e.t_ns
    return [LiveTurn(t, starts[t], ends.get(t)) for t in sorted(starts)]


def live_utterances(caller: np.ndarray, sample_rate: int, turns: Sequence[LiveTurn], slack_s: float = SLACK_S,
                    min_gap_s: float = onset.DEFAULT_MIN_GAP_S, rule: onset.OnsetRule = onset.RULE
                    ) -> list[Utterance]:
    """One `Utterance` per live turn that has speech on the caller channel (seconds on the call clock)."""
    segs = onset.segments(caller, sample_rate, min_gap_s, rule)
    out: list[Utterance] = []
    floor = 0.0  # where the previous turn's window ended
    ordered = sorted(turns, key=lambda t: t.start_ns)
    for i, t in enumerate(ordered):
        lo = max(floor, t.start_ns / 1e9 - slack_s)
        if t.end_ns is not None:
            hi = t.end_ns / 1e9
        else:  # the call ended inside this turn: up to the next turn's start, if any
            hi = ordered[i + 1].start_ns / 1e9 - slack_s if i + 1 < len(ordered) else math.inf
        floor = max(floor, hi)
        mine = [(on, off) for on, off in segs if lo <= on < hi]
        if mine:
            out.append(Utterance(turn=t.turn, speech_start_s=mine[0][0], speech_end_s=max(off for _, off in mine)))
    return out


def caller_rows(call_id: str, utterances: Iterable[Utterance]) -> list[Event]:
    """The caller_speech_start / _end rows of derived utterances (text unknown: '', expect None)."""
    rows = []
    for u in utterances:
        info = {"text": "", "expect": None, "source": SOURCE}
        rows.append(Event(call_id, u.turn, round(u.speech_start_s * 1e9), str(K.CALLER_SPEECH_START), dict(info)))
        rows.append(Event(call_id, u.turn, round(u.speech_end_s * 1e9), str(K.CALLER_SPEECH_END), dict(info)))
    return rows
