"""Playout: when the bot's audio was heard, chunk by chunk and word by word (plain Python + numpy).

`PlayoutLedger` is the one record of playout for every output side (the recorded call, the browser);
`AudibleTracker` runs the onset rule (docs/metrics.md) incrementally over the bot's growing track;
`turn_at` attributes a moment of bot audio to the reply turn whose playout mark precedes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind
from voicelab.measure.onset import RULE, OnsetRule

K = EventKind


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
    def confirm_s(self) -> float:
        """How long after an onset it is reported: `min_voiced_ms` of sound, and the rest of its last window."""
        return (self.min_run * self.hop + self.frame - self.half) / self.sr

    @property
    def last_active_s(self) -> float | None:
        return None if self.last_active < 0 else self.last_active * self.hop / self.sr

    def flush(self) -> list[AudibleEvent]:
        """The track ended: close an open stretch."""
        if self.audible:
            self.audible = False
            return [AudibleEvent("end", self.last_active * self.hop / self.sr)]
        return []


class Mark(Protocol):
    """What a playout mark says (the pipeline's `PlayoutMarkFrame` is one)."""

    chunk_id: int
    turn: int
    word_index: int
    words: list[str]
    text: str


@dataclass
class ChunkPlay:
    """One chunk being heard: how many of its words have started playing."""

    chunk_id: int
    turn: int
    words: list[str]
    text: str
    started_ns: int
    words_started: int = 0


class PlayoutLedger:
    """The one record of what the bot played, for any output side (the recorded call's speaker, the browser).

    The output side tells it when each word of a chunk starts to be heard (`word_started`), when a chunk's
    audio ended (`chunk_ended`) or was cut (`interrupted`), and feeds it the bot's track (`analyse`); the
    ledger logs `playout_start` / `playout_stop` (with the words heard) and `bot_audible_onset` / `_end`
    (the onset rule, attributed to the reply turn whose mark precedes the sound).
    """

    def __init__(self, log: CallLog, sample_rate: int, *, where: str | None = None,
                 rule: OnsetRule = RULE) -> None:
        self.log = log
        self.sr = sample_rate
        self.tracker = AudibleTracker(sample_rate, rule)
        self.chunks: dict[int, ChunkPlay] = {}
        self.marks: list[tuple[int, int]] = []  # (sample, reply turn) of each chunk's first word
        self.onsets: list[float] = []
        self.ends: list[float] = []
        self._payload = {"where": where} if where else {}
        self._paused_ns: int | None = None  # when the current pause began

    def word_started(self, m: Mark, t_ns: int) -> ChunkPlay:
        c = self.chunks.get(m.chunk_id)
        if c is None:
            c = ChunkPlay(m.chunk_id, m.turn, list(m.words), m.text, t_ns)
            self.chunks[m.chunk_id] = c
            self.marks.append((t_ns * self.sr // 1_000_000_000, m.turn))
            self.log.log(K.PLAYOUT_START, m.turn, {"chunk_id": m.chunk_id, "text": m.text}, t_ns=t_ns)
        c.words_started = max(c.words_started, m.word_index + 1)
        return c

    def chunk_ended(self, chunk_id: int, t_ns: int) -> ChunkPlay | None:
        """All of the chunk's audio was handed over by t_ns: every word was heard."""
        c = self.chunks.get(chunk_id)
        if c is not None:
            c.words_started = len(c.words)
            self._stop(c, max(t_ns, c.started_ns), interrupted=False)
        return c

    def interrupted(self, t_ns: int) -> None:
        """Playout was cut at t_ns: open chunks stop with the words started so far."""
        for c in list(self.chunks.values()):
            self._stop(c, t_ns, interrupted=True)

    def paused(self, t_ns: int, reason: str = "") -> None:
        """The speaker held the bot's audio; t_ns: where the audio handed over so far ends."""
        self._paused_ns = t_ns
        self.log.log(K.PLAYOUT_PAUSE, self.turn_for(t_ns / 1e9), {"reason": reason}, t_ns=t_ns)

    def resumed(self, t_ns: int, reason: str = "") -> None:
        """Paused audio continues at t_ns; gap_ms is the silence the pause put in the bot's speech."""
        since = t_ns if self._paused_ns is None else self._paused_ns
        self._paused_ns = None
        self.log.log(K.PLAYOUT_RESUME, self.turn_for(since / 1e9),
                     {"gap_ms": round((t_ns - since) / 1e6, 1), "reason": reason}, t_ns=t_ns)

    def _stop(self, c: ChunkPlay, t_ns: int, interrupted: bool) -> None:
        self.chunks.pop(c.chunk_id, None)
        self.log.log(K.PLAYOUT_STOP, c.turn, {"chunk_id": c.chunk_id, "text": c.text,
                                              "played": " ".join(c.words[: c.words_started]),
                                              "interrupted": interrupted, "words_played": c.words_started,
                                              "words": len(c.words)}, t_ns=t_ns)

    def turn_for(self, t_s: float) -> int:
        return turn_at(self.marks, t_s, self.sr)

    def analyse(self, track: np.ndarray, upto: int) -> list[AudibleEvent]:
        """Run the onset rule over track[:upto]; log and return the onsets and ends found."""
        return self._logged(self.tracker.advance(track, min(upto, track.size)))

    def finish(self, track: np.ndarray, end: int, t_ns: int) -> list[AudibleEvent]:
        """The call is over: analyse the rest, close an open stretch and open chunks (idempotent)."""
        found = self.analyse(track, end + self.tracker.frame) + self._logged(self.tracker.flush())
        self.interrupted(t_ns)
        return found

    def _logged(self, events: list[AudibleEvent]) -> list[AudibleEvent]:
        for ev in events:
            turn = self.turn_for(ev.t_s)
            if ev.kind == "onset":
                self.onsets.append(ev.t_s)
                self.log.log(K.BOT_AUDIBLE_ONSET, turn, dict(self._payload), t_ns=int(ev.t_s * 1e9))
            else:
                self.ends.append(ev.t_s)
                self.log.log(K.BOT_AUDIBLE_END, turn, dict(self._payload), t_ns=int(ev.t_s * 1e9))
        return events
