"""The recorded call: stereo audio on the call clock (left = caller as played in, right = bot as heard).

Plain numpy; `write_wav` goes through soundfile, like every other WAV of the run folder. `Track` is the one
growing int16 buffer: the recorder's two channels and the live demo's outgoing audio are Tracks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from voicelab.pcm import SAMPLE_RATE


class Track:
    """Mono int16 audio on the call clock that grows (doubling) as samples arrive."""

    def __init__(self, sample_rate: int, seconds: float = 30.0) -> None:
        self.sample_rate = sample_rate
        self.buf = np.zeros(int(sample_rate * seconds), dtype=np.int16)

    def ensure(self, n: int) -> None:
        if n > self.buf.size:
            self.buf = np.concatenate([self.buf, np.zeros(max(n, 2 * self.buf.size) - self.buf.size,
                                                          dtype=np.int16)])

    def put(self, start: int, samples: np.ndarray, mix: bool = True) -> None:
        """Write samples at `start`; `mix` adds them to what is there (clipped), else overwrites."""
        if samples.size == 0:
            return
        stop = start + samples.size
        self.ensure(stop)
        if mix:
            mixed = self.buf[start:stop].astype(np.int32) + samples.astype(np.int32)
            self.buf[start:stop] = np.clip(mixed, -32768, 32767).astype(np.int16)
        else:
            self.buf[start:stop] = samples


class CallRecorder:
    """Stereo call audio on the call clock: left = caller as played in, right = bot as heard (int16)."""

    def __init__(self, sample_rate: int = SAMPLE_RATE, seconds: float = 60.0) -> None:
        self.sample_rate = sample_rate
        self.tracks = {"left": Track(sample_rate, seconds), "right": Track(sample_rate, seconds)}
        self.end = 0  # samples recorded so far (max over both channels)

    @property
    def left(self) -> np.ndarray:
        return self.tracks["left"].buf

    @property
    def right(self) -> np.ndarray:
        return self.tracks["right"].buf

    def put(self, channel: str, start: int, samples: np.ndarray) -> None:
        if samples.size == 0:
            return
        self.tracks[channel].put(start, samples)
        self.end = max(self.end, start + samples.size)

    def mark(self, sample: int) -> None:
        """The call lasted at least until this sample (silence counts)."""
        for t in self.tracks.values():
            t.ensure(sample)
        self.end = max(self.end, sample)

    def stereo(self) -> np.ndarray:
        return np.stack([self.left[:self.end], self.right[:self.end]], axis=1)

    def write_wav(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        sf.write(str(path), self.stereo(), self.sample_rate, subtype="PCM_16")
