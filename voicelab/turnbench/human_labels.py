"""Labelled points of a real speaker's turn: a mid-turn pause at every silence of at least 0.1 s inside the turn,
the turn's end at its speaker's last audible sound. numpy and the onset rule; no pipecat, no torch.

LiveKit's eot-bench labels human speech this way: every silence of at least `MIN_PAUSE_S` (100 ms) inside one
speaker's turn is a pause, the silence after the turn (before another speaker takes the floor: the turns come
from `voicelab.turnbench.floor`) is its end. Here a silence is one of the *heard* audio (what the bench plays:
the room's mixture), so that every labelled pause is a silence the strategies hear, and a stretch the
strategies hear as silence inside the turn is labelled (a declaration there would otherwise be counted at the
next point):

- speech is found by the onset rule (`voicelab.measure.onset`: 10 ms windows, runs closer than the minimum
  silence joined) with its gate at `pause_gate_dbfs` of the turn's clip, whose peak the bench sets to -3 dBFS
  first: meeting microphones are quiet (peaks of -36 dBFS) and the room's floor sits far below speech, so the
  gate follows the speech level (20 dB under it) rather than the fixtures' fixed -40 dBFS;
- **overlap**: a silence of the heard audio during which any other speaker talks (their annotated segment, or
  their own microphone where there is one) is not a pause there: someone is speaking. What is left of it on
  either side, where nobody speaks, is a pause if it lasts 0.1 s: the turn's speaker goes on after it, so
  answering there cuts them off, a backchannel in between or not;
- the speaker's own microphone, where there is one, marks their own speech: a silence of the mixture in which
  the speaker still murmurs into their headset is not a pause either, and their last sound is the turn's end.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from voicelab.fixtures.spec import PEAK
from voicelab.measure.onset import OnsetRule, segments
from voicelab.turnbench.audio import SR, pause_gate_dbfs
from voicelab.turnbench.replay import Point

MIN_PAUSE_S = 0.1
SLACK_S = 0.2  # annotated turn boundaries are word alignments: the speaker's sound may run this far past them
MAX_GAIN_DB = 40.0  # a clip is raised to a -3 dBFS peak, never by more than this (a near-silent clip stays quiet)

Span = tuple[float, float]


class LabelError(ValueError):
    """A turn with no audible speech of its speaker: the annotation and the audio disagree."""


def normalised(clip: np.ndarray) -> np.ndarray:
    """The clip raised (or lowered) to the bench callers' -3 dBFS peak, by at most `MAX_GAIN_DB`."""
    x = np.asarray(clip, dtype=np.float64)
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    if peak <= 0.0:
        return x.astype(np.float32)
    gain = min(PEAK / peak, 10 ** (MAX_GAIN_DB / 20))
    return (x * gain).astype(np.float32)


def speech_spans(clip: np.ndarray, min_gap_s: float = MIN_PAUSE_S) -> list[Span]:
    """Stretches of sound in a clip (seconds from its first sample), silences shorter than `min_gap_s` inside
    them, by the onset rule with the gate at `pause_gate_dbfs` (20 dB under the clip's speech level)."""
    x = np.asarray(clip, dtype=np.float64)
    if not x.size:
        return []
    return segments(x, SR, min_gap_s=min_gap_s, rule=OnsetRule(gate_dbfs=pause_gate_dbfs(x)))


def merged(spans: Sequence[Span]) -> list[Span]:
    """Spans sorted, overlapping or touching ones joined."""
    out: list[Span] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        elif b > a:
            out.append((a, b))
    return out


def _subtract(span: Span, cuts: Sequence[Span]) -> list[Span]:
    """`span` without the parts any of `cuts` covers."""
    pieces = [span]
    for c0, c1 in sorted(cuts):
        nxt = []
        for a, b in pieces:
            if c1 <= a or c0 >= b:
                nxt.append((a, b))
                continue
            if c0 > a:
                nxt.append((a, c0))
            if c1 < b:
                nxt.append((c1, b))
        pieces = nxt
    return pieces


def label_turn(heard: Sequence[Span], own: Sequence[Span], others: Sequence[Span],
               turn: Span, min_pause_s: float = MIN_PAUSE_S) -> tuple[float, float, list[Point]]:
    """(onset, end, points) of one turn, all on one clock.

    heard: stretches of sound in the audio the bench plays; own: the speaker's own speech (their microphone's
    stretches, or the heard ones); others: every other speaker's speech (annotated segments, their
    microphones' stretches); turn: the turn's annotated (start, end). The onset is the first own stretch that
    reaches into the turn, the end the last own sound that starts inside it (`SLACK_S` allowed on each side)."""
    t0, t1 = turn
    mine = [(max(a, t0 - SLACK_S), min(b, t1 + SLACK_S)) for a, b in merged(own) if b > t0 - SLACK_S and a < t1]
    if not mine:
        raise LabelError(f"no audible speech between {t0:.2f} s and {t1:.2f} s")
    onset, end = mine[0][0], max(b for _, b in mine)
    busy = sorted([*others, *mine])
    loud = [(max(a, onset), min(b, end)) for a, b in merged(heard) if b > onset and a < end]
    gaps = [(b, a2) for (_, b), (a2, _) in zip(loud, loud[1:], strict=False) if a2 > b]
    points: list[Point] = []
    for gap in gaps:
        for a, b in _subtract(gap, busy):
            if b - a >= min_pause_s - 1e-9:
                points.append(Point("pause", a, b))
    points.append(Point("end", end))
    return onset, end, points
