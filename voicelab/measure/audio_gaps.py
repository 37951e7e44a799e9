"""Audio gaps in the agent's speech: stretches where its audio drops to silence mid-sound and comes back
mid-sound, as lost packets (or a queue that ran dry) sound on a phone line.

Pure numpy over the agent's channel (int16 or float in [-1, 1]). A gap is a run of samples no louder than
`quiet` (µ-law's smallest steps: what a lost packet or an empty queue plays) lasting `min_s` to `max_s`, with
sound on both sides: the `edge_ms` just before it and just after it each have an RMS at or above `edge_dbfs`.
That is what tells a gap from a pause: speech fades into a pause between words and sentences (the window
before it is quiet), while a cut leaves the audio at full level up to the silence. A silence shorter than
`min_s` is a stop closure, one longer than `max_s` a turn's end.

A cut the agent asked for is no lost packet: on a phone line the agent's `clear` empties the carrier's queue at
once, and when its next words follow within `max_s` the recording shows the same cut. `unexplained` leaves out
the gaps that begin at a clear the line logged while the agent was heard (a revision or a pause, judged by their
own figures).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GapRule:
    quiet: float = 16 / 32768  # |sample| at or below: silence (µ-law codes the smallest values as 0, ±8, ±16)
    min_s: float = 0.15
    max_s: float = 0.4
    edge_ms: float = 10.0
    edge_dbfs: float = -52.0  # natural pauses seen on the line: -58 dBFS or less in the 10 ms before them


RULE = GapRule()
# a clear empties the queue, but the frame already playing plays out (20 ms on the line; a second frame of slack)
CLEAR_BEFORE_S, CLEAR_AFTER_S = 0.02, 0.06


@dataclass(frozen=True)
class Gap:
    start_s: float
    end_s: float

    @property
    def ms(self) -> float:
        return round(1000.0 * (self.end_s - self.start_s), 1)


def _as_float(samples: np.ndarray) -> np.ndarray:
    a = np.asarray(samples)
    if a.ndim != 1:
        raise ValueError(f"expected mono samples (1-D array), got shape {a.shape}")
    return a.astype(np.float64) / 32768.0 if a.dtype == np.int16 else a.astype(np.float64, copy=False)


def _rms_dbfs(x: np.ndarray) -> float:
    if x.size == 0:
        return -np.inf
    rms = float(np.sqrt(np.mean((x - x.mean()) ** 2)))
    return 20.0 * np.log10(rms) if rms > 0 else -np.inf


def gaps(samples: np.ndarray, sample_rate: int, rule: GapRule = RULE) -> list[Gap]:
    """Every gap in the samples, in time order (seconds from the first sample)."""
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    x = _as_float(samples)
    silent = np.abs(x) <= rule.quiet
    if x.size == 0:
        return []
    edges = np.diff(np.concatenate(([0], silent.astype(np.int8), [0])))
    firsts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    edge = max(1, round(sample_rate * rule.edge_ms / 1000))
    lo, hi = rule.min_s * sample_rate, rule.max_s * sample_rate
    out = []
    for a, b in zip(firsts.tolist(), ends.tolist(), strict=True):
        if not lo <= b - a <= hi or a < edge or b + edge > x.size:
            continue
        if _rms_dbfs(x[a - edge:a]) >= rule.edge_dbfs and _rms_dbfs(x[b:b + edge]) >= rule.edge_dbfs:
            out.append(Gap(a / sample_rate, b / sample_rate))
    return out


def unexplained(found: list[Gap], clears_s: list[float], before_s: float = CLEAR_BEFORE_S,
                after_s: float = CLEAR_AFTER_S) -> list[Gap]:
    """The gaps that do not begin at one of the agent's clears (`clears_s`, seconds on the same clock): the
    silence a clear leaves starts when the frame playing at the clear ends."""
    return [g for g in found if not any(c - before_s <= g.start_s <= c + after_s for c in clears_s)]


def gaps_per_turn(found: list[Gap], reply_turn: dict[int, list[tuple[float, float]]]) -> dict[int, int]:
    """Gaps counted per caller turn whose reply they fall in: `reply_turn` maps a turn to its reply's speech
    stretches (`voicelab.call.reply_spans.reply_spans`, at a minimum gap above `max_s` so that a gap does not
    split a stretch); a gap outside every stretch counts for no turn."""
    out = {turn: 0 for turn in reply_turn}
    for g in found:
        for turn, spans in reply_turn.items():
            if any(on <= g.start_s and g.end_s <= off for on, off in spans):
                out[turn] += 1
                break
    return out
