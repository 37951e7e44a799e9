"""The telephone line's codec on a fixture's caller audio, for `voicelab run --line mulaw8k`.

A call (`voicelab call`) reaches the agent as 8 kHz µ-law: the caller's clips are resampled to 8 kHz,
encoded (ITU-T G.711 µ-law) and decoded and resampled again by the agent's serializer. To compare a call
against the in-process pipeline on equal terms, `run --line mulaw8k` passes each caller clip through the same
round trip before the fixture player plays it: the recogniser, the VAD and the turn rule then hear what the
agent on the line hears. The bot's own audio is not passed through it: FAR is read from its onset, which the
codec does not move.

`LineUpsampler` is the live line's side of the same resampling: the media stream's 8 kHz caller audio raised to
the pipeline's rate 20 ms at a time with a 2 ms delay (a linear-phase FIR low-pass kept in state between
chunks), where soxr's streaming resampler at its default quality holds about 95 ms and lets it out in bursts:
the VAD and the barge-in rule would hear the caller that much late.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import soxr
from scipy.signal import firwin, lfilter

from voicelab.fixtures.format import Fixture
from voicelab.pcm import from_int16, to_int16
from voicelab.pipeline.config import LINES
from voicelab.pipeline.transport import mulaw


def through_line(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Float mono audio at `sample_rate` after 8 kHz µ-law and back; same length, float32."""
    x = np.asarray(audio, dtype=np.float32)
    if x.size == 0:
        return x
    narrow = soxr.resample(x, sample_rate, mulaw.LINE_RATE) if sample_rate != mulaw.LINE_RATE else x
    heard = from_int16(mulaw.decode(mulaw.encode(to_int16(narrow))))
    back = soxr.resample(heard, mulaw.LINE_RATE, sample_rate) if sample_rate != mulaw.LINE_RATE else heard
    out = np.zeros(x.size, dtype=np.float32)  # resampling may be a sample off: keep the clip's timing exact
    n = min(out.size, back.size)
    out[:n] = back[:n]
    return out


def on_line(fixture: Fixture, line: str) -> Fixture:
    """The fixture as the agent hears it over `line` ("direct": unchanged)."""
    if line == "direct":
        return fixture
    if line != "mulaw8k":
        raise ValueError(f"line: '{line}' is not one of {', '.join(LINES)}")
    turns = [replace(t, audio=through_line(t.audio, t.sample_rate)) for t in fixture.turns]
    return replace(fixture, turns=turns)


@dataclass
class LineUpsampler:
    """int16 audio at `in_rate` raised `factor` times, chunk by chunk, with state (see the module doc)."""

    factor: int = 2
    taps: int = 63  # group delay (taps - 1) / 2 output samples: 31 at 16 kHz, 1.9 ms
    cutoff: float = 0.95  # of the input's Nyquist frequency (3.8 kHz of the line's 4 kHz)
    _h: np.ndarray = field(init=False, repr=False)
    _zi: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.factor < 1:
            raise ValueError(f"factor: {self.factor}; needs at least 1")
        self._h = firwin(self.taps, self.cutoff / self.factor) * self.factor
        self._zi = np.zeros(self.taps - 1)

    def __call__(self, pcm: np.ndarray) -> np.ndarray:
        x = np.asarray(pcm, dtype=np.float64)
        if self.factor == 1 or x.size == 0:
            return np.asarray(pcm, dtype=np.int16)
        up = np.zeros(x.size * self.factor)
        up[::self.factor] = x
        y, self._zi = lfilter(self._h, 1.0, up, zi=self._zi)
        return np.clip(np.round(y), -32768, 32767).astype(np.int16)

    def reset(self) -> None:
        self._zi = np.zeros(self.taps - 1)
