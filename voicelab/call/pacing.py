"""Line-rate timing: the carrier's 20 ms frame clock and how the agent's audio arrives against it.

Pure logic (times in ns or ms, no sleeping here). `FrameClock` says when frame k is due on the call clock and
keeps how late each frame really left; `ArrivalJitter` is RTP's interarrival jitter (RFC 3550 §6.4.1,
https://www.rfc-editor.org/rfc/rfc3550#section-6.4.1) over the agent's media messages: the difference between
the spacing of their arrival and the spacing of the audio they carry, smoothed by 1/16. An agent that sends its
audio at line rate scores near 0; one that bursts whole sentences scores high, and the carrier's queue absorbs
the difference (`voicelab.call.playout_queue`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FRAME_MS = 20  # the media stream's usual frame: 160 µ-law bytes at 8 kHz
LINE_RATE = 8000
FRAME_SAMPLES = LINE_RATE * FRAME_MS // 1000


def split_frames(samples: np.ndarray, frame: int = FRAME_SAMPLES) -> list[np.ndarray]:
    """Consecutive frames of `frame` samples; the last one padded with silence."""
    n = -(-samples.size // frame)
    padded = np.zeros(n * frame, dtype=samples.dtype)
    padded[:samples.size] = samples
    return [padded[i * frame:(i + 1) * frame] for i in range(n)]


@dataclass
class FrameClock:
    """Frame k covers [k, k+1) frames of the call clock and is due when its last sample exists: (k+1) frames."""

    frame_ms: int = FRAME_MS
    late_ms: list[float] = field(default_factory=list)  # how late each frame left, 0 when on time

    def due_ns(self, k: int) -> int:
        return (k + 1) * self.frame_ms * 1_000_000

    def sent(self, k: int, now_ns: int) -> None:
        self.late_ms.append(max(0.0, (now_ns - self.due_ns(k)) / 1e6))


@dataclass
class ArrivalJitter:
    """RFC 3550 interarrival jitter over the agent's media messages (ms), and their sizes and gaps."""

    jitter_ms: float = 0.0
    messages: int = 0
    audio_ms: float = 0.0  # audio carried so far
    frame_ms: list[float] = field(default_factory=list)  # audio per message
    gaps_ms: list[float] = field(default_factory=list)  # arrival gaps between consecutive messages
    _last_arrival: float | None = None
    _last_media: float = 0.0

    def arrived(self, arrival_ms: float, samples: int, rate: int = LINE_RATE) -> None:
        dur = 1000.0 * samples / rate
        if self._last_arrival is not None:
            d = (arrival_ms - self._last_arrival) - (self.audio_ms - self._last_media)
            self.jitter_ms += (abs(d) - self.jitter_ms) / 16.0
            self.gaps_ms.append(arrival_ms - self._last_arrival)
        self._last_arrival = arrival_ms
        self._last_media = self.audio_ms
        self.audio_ms += dur
        self.messages += 1
        self.frame_ms.append(dur)
