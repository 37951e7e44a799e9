"""Playout: when the bot's audio was heard, chunk by chunk and word by word (plain Python + numpy).

`AudibleTracker` runs the onset rule of DESIGN.md §4 incrementally over the bot's growing track;
`turn_at` attributes a moment of bot audio to the reply turn whose playout mark precedes it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from voicelab.measure.onset import RULE, OnsetRule


def turn_at(marks: list[tuple[int, int]], t_s: float, sr: int) -> int:
    """The reply turn whose playout mark (sample, turn) is the last one at or before t_s (-1 before any)."""
    sample = int(t_s * sr)
    turn = -1
    for s, tr in marks:
        if s <= sample + sr // 10:  # marks precede their audio's onset by the leading silence
            turn = tr
    return turn


@dataclass
class AudibleEvent:
    kind: str  # "onset" | "end"
    t_s: float


class AudibleTracker:
    """The onset rule of `voicelab.measure.onset.segments`, run incrementally over a growing track.

    A stretch of audible windows (runs closer than `min_gap_s` join) starts at the first run of at least
    `min_voiced_ms` (onset) and ends at its last audible window, once `min_gap_s` of silence followed.
    """

    def __init__(self, sample_rate: int, rule: OnsetRule = RULE, min_gap_s: float = 0.3) -> None:
        self.sr = sample_rate
        self.rule = rule
        self.hop = max(1, round(sample_rate * rule.hop_ms / 1000))
        self.frame = max(1, round(sample_rate * rule.window_ms / 1000))
        self.half = self.frame // 2
        self.min_run = max(1, round(rule.min_voiced_ms / rule.hop_ms))
        self.min_gap_hops = max(1, round(min_gap_s * 1000 / rule.hop_ms))
        self.next_hop = 0  # next window centre (hop index) to evaluate
        self.audible = False
        self.run_start = -1  # first hop of the current active run
        self.run_len = 0
        self.last_active = -1  # last active hop of the current stretch

    def advance(self, track: np.ndarray, upto: int) -> list[AudibleEvent]:
        """Evaluate every window that lies inside track[:upto]; return the onsets/ends found."""
        last_centre = (upto - (self.frame - self.half)) // self.hop
        if last_centre < self.next_hop:
            return []
        first = self.next_hop
        a = first * self.hop - self.half
        b = last_centre * self.hop + (self.frame - self.half)
        lo = max(0, a)
        seg = track[lo:b]
        if a < 0:  # before the track starts: pad like onset.active_windows does (edge)
            seg = np.concatenate([np.full(-a, seg[0] if seg.size else 0, dtype=seg.dtype), seg])
        act = self._windows(seg, last_centre - first + 1)
        self.next_hop = last_centre + 1
        out: list[AudibleEvent] = []
        hop_s = self.hop / self.sr
        for i, on in enumerate(act):
            h = first + i
            if on:
                if self.run_len == 0:
                    self.run_start = h
                self.run_len += 1
                self.last_active = h
                if not self.audible and self.run_len >= self.min_run:
                    self.audible = True
                    out.append(AudibleEvent("onset", self.run_start * hop_s))
            else:
                self.run_len = 0
                if self.audible and h - self.last_active >= self.min_gap_hops:
                    self.audible = False
                    out.append(AudibleEvent("end", self.last_active * hop_s))
        return out

    def _windows(self, seg: np.ndarray, n: int) -> np.ndarray:
        """Activity of n windows centred at seg[half + k*hop] (seg starts half a window before the first)."""
        x = seg.astype(np.float64) / 32768.0
        s1 = np.concatenate(([0.0], np.cumsum(x)))
        s2 = np.concatenate(([0.0], np.cumsum(x * x)))
        starts = np.arange(n) * self.hop
        ends = starts + self.frame
        ok = ends <= x.size
        starts, ends = starts[ok], ends[ok]
        mean = (s1[ends] - s1[starts]) / self.frame
        var = np.maximum((s2[ends] - s2[starts]) / self.frame - mean * mean, 0.0)
        gate = 10.0 ** (self.rule.gate_dbfs / 20.0)
        out = np.zeros(n, dtype=bool)
        out[: var.size] = var > gate * gate
        return out

    @property
    def last_active_s(self) -> float | None:
        return None if self.last_active < 0 else self.last_active * self.hop / self.sr

    def flush(self) -> list[AudibleEvent]:
        """The track ended: close an open stretch."""
        if self.audible:
            self.audible = False
            return [AudibleEvent("end", self.last_active * self.hop / self.sr)]
        return []
