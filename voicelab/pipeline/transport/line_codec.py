"""The telephone line's codec on a fixture's caller audio, for `voicelab run --line mulaw8k`.

A call (`voicelab call`) reaches the agent as 8 kHz µ-law: the caller's clips are resampled to 8 kHz,
encoded (ITU-T G.711 µ-law) and decoded and resampled again by the agent's serializer. To compare a call
against the in-process pipeline on equal terms, `run --line mulaw8k` passes each caller clip through the same
round trip before the fixture player plays it: the recogniser, the VAD and the turn rule then hear what the
agent on the line hears. The bot's own audio is not passed through it: FAR is read from its onset, which the
codec does not move.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import soxr

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
