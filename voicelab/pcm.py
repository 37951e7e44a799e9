"""16-bit PCM, the sample format every pipecat audio frame carries: the lab's one conversion to and from it.

Plain numpy. Fixture clips are float; the pipeline's input transport turns them into int16 (`to_int16`) and
pipecat's models read the frames back as float (`from_int16`: int16 / 32768, as Silero and smart-turn do).
A bench that scores the same clip offline must feed its models those same samples: smart-turn v3.2 is not
robust to the last bit (on `slow_talker_directions` turn 0 its P(complete) is 0.58 on the float clip, 0.08
on the clip truncated to int16, 0.55 on the clip rounded to int16), so a bench fed the float clip disagrees
with the run on the turn's wait.
"""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 16000  # Hz: the pipeline's one audio rate (Silero, smart-turn, Whisper and the fixtures run at it)
FULL_SCALE = 32768.0  # the float value of int16's magnitude: pipecat divides by it


def to_int16(audio: np.ndarray) -> np.ndarray:
    """Float samples in [-1, 1] to int16 as the lab's transports send them: clipped, scaled by 32767,
    truncated toward zero."""
    return (np.clip(np.asarray(audio, dtype=np.float64), -1.0, 1.0) * 32767.0).astype(np.int16)


def from_int16(pcm: np.ndarray) -> np.ndarray:
    """int16 samples to float32 as pipecat's analysers read a frame."""
    return np.asarray(pcm, dtype=np.int16).astype(np.float32) / FULL_SCALE


def as_heard(audio: np.ndarray) -> np.ndarray:
    """Float samples as the pipeline's models receive them: through int16 and back."""
    return from_int16(to_int16(audio))
