"""The audio just before the VAD said "speech": a short ring buffer every streaming recognizer needs.

The VAD reports speech `start_secs` late (it waits for that much of it), so a recognizer that starts at the
VAD's start would miss the first syllable; it replays this pre-roll first. Plain Python.
"""

from __future__ import annotations

import math
from collections import deque


class PreRoll:
    """The last `keep_s` seconds of 16-bit mono audio, as the pipeline handed it over."""

    def __init__(self, sample_rate: int, keep_s: float) -> None:
        self._sr = sample_rate
        self._keep = int(2 * sample_rate * keep_s)
        self._chunks: deque[bytes] = deque()
        self._bytes = 0

    def push(self, audio: bytes) -> None:
        self._chunks.append(audio)
        self._bytes += len(audio)
        while self._chunks and self._bytes - len(self._chunks[0]) >= self._keep:
            self._bytes -= len(self._chunks.popleft())

    def clear(self) -> None:
        """Forget what was kept: audio a recognizer already has (up to a VAD stop) must not be replayed."""
        self._chunks.clear()
        self._bytes = 0

    def tail(self, seconds: float) -> list[bytes]:
        """The chunks covering at least the last `seconds` (all there is when the buffer is shorter)."""
        need = math.ceil(2 * self._sr * seconds)  # any positive span asks for at least a sample
        out: list[bytes] = []
        got = 0
        for chunk in reversed(self._chunks):
            if got >= need:
                break
            out.append(chunk)
            got += len(chunk)
        return out[::-1]
