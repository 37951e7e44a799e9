"""The carrier's playout queue: the agent's audio and marks in order, played out at line rate.

A carrier queues whatever audio the agent sends (any chunking, any burst) and plays it in real time; the
caller hears what leaves this queue, never what arrived. `clear` drops everything queued at once (how a
phone agent stops talking on a barge-in) and a `mark` is echoed when playback reaches it, or at once when a
`clear` drops it (Twilio Media Streams, "mark" and "clear" messages). Pure logic on int16 samples: the caller
of `pull` owns the clock.

Marks: a mark passed while pulling a tick's samples is reached when that tick's audio has played, so it is
reported by the next `pull` (or by `clear`, whichever comes first); a mark at the head of an idle queue is
reported by the next `pull`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Tick:
    """One pull: `samples` (always the length asked, silence-padded), of which `played` came from the queue,
    and the marks whose audio had finished playing before this tick."""

    samples: np.ndarray
    played: int
    marks: list[str]


@dataclass(frozen=True)
class Cleared:
    dropped: int  # samples thrown away unplayed
    marks: list[str]  # every mark still waiting, echoed at once


@dataclass
class PlayoutQueue:
    depth: int = 0  # samples queued
    max_depth: int = 0
    _items: deque[np.ndarray | str] = field(default_factory=deque)
    _passed: list[str] = field(default_factory=list)  # marks passed by the last pull: reached at the next

    def push_audio(self, samples: np.ndarray) -> None:
        if samples.size:
            self._items.append(np.asarray(samples, dtype=np.int16))
            self.depth += samples.size
            self.max_depth = max(self.max_depth, self.depth)

    def push_mark(self, name: str) -> None:
        self._items.append(name)

    @property
    def pending_marks(self) -> int:
        return len(self._passed) + sum(1 for i in self._items if isinstance(i, str))

    def pull(self, n: int) -> Tick:
        """The next n samples of playout, and the marks reached before them."""
        reached, self._passed = self._passed, []
        while self._items and isinstance(self._items[0], str):  # at the head: nothing left to play before it
            reached.append(self._items.popleft())  # type: ignore[arg-type]
        out = np.zeros(n, dtype=np.int16)
        filled = 0
        while filled < n and self._items:
            head = self._items[0]
            if isinstance(head, str):
                self._passed.append(head)
                self._items.popleft()
                continue
            take = min(n - filled, head.size)
            out[filled:filled + take] = head[:take]
            filled += take
            if take == head.size:
                self._items.popleft()
            else:
                self._items[0] = head[take:]
        self.depth -= filled
        return Tick(out, filled, reached)

    def clear(self) -> Cleared:
        """Drop every queued sample; every mark still waiting comes back now."""
        marks = list(self._passed) + [i for i in self._items if isinstance(i, str)]
        dropped = self.depth
        self._items.clear()
        self._passed = []
        self.depth = 0
        return Cleared(dropped, marks)
