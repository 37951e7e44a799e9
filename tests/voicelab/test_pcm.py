"""The one float <-> int16 conversion (`voicelab.pcm`): what the transports send and what pipecat's models read."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from voicelab.pcm import FULL_SCALE, as_heard, from_int16, to_int16

SAMPLES = arrays(np.float32, st.integers(1, 64), elements=st.floats(-2.0, 2.0, width=32))


def test_to_int16_clips_scales_by_32767_and_truncates_toward_zero() -> None:
    x = np.array([-2.0, -1.0, -0.5, -1e-5, 0.0, 1e-5, 0.5, 1.0, 2.0], np.float32)
    assert to_int16(x).tolist() == [-32767, -32767, -16383, 0, 0, 0, 16383, 32767, 32767]


@given(SAMPLES)
def test_what_the_models_read_is_the_sent_int16_over_32768(x: np.ndarray) -> None:
    pcm = to_int16(x)
    assert pcm.dtype == np.int16
    heard = as_heard(x)
    assert heard.dtype == np.float32
    assert np.array_equal(heard, pcm.astype(np.float32) / FULL_SCALE)
    assert np.array_equal(from_int16(pcm), heard)
    assert np.all(np.abs(heard - np.clip(x, -1.0, 1.0)) <= 2.0 / FULL_SCALE)  # within the last bit or two
