"""G.711 µ-law, the telephone line's codec, in numpy (no audioop: it left the standard library in 3.13).

The media stream carries 8 kHz mono µ-law, one byte a sample (ITU-T G.711). Encoding follows the
reference algorithm (bias 0x84, clip at 32635, segment search, bits inverted), so it matches `audioop.lin2ulaw` and what
carriers and pipecat's serializers produce byte for byte; decoding is a 256-entry table.
"""

from __future__ import annotations

import numpy as np

LINE_RATE = 8000  # Hz, the telephone media stream's rate
_BIAS = 0x84
_CLIP14 = 8159  # 32635 >> 2
_SEG_END = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF])


def _decode_table() -> np.ndarray:
    u = ~np.arange(256, dtype=np.int32) & 0xFF
    sign = u & 0x80
    exponent = (u >> 4) & 0x07
    mantissa = u & 0x0F
    magnitude = (((mantissa << 3) + _BIAS) << exponent) - _BIAS
    return np.where(sign != 0, -magnitude, magnitude).astype(np.int16)


_DECODE = _decode_table()


def encode(pcm: np.ndarray) -> bytes:
    """int16 samples (any 1-D int16 array) to µ-law bytes."""
    x = np.asarray(pcm)
    if x.dtype != np.int16:
        raise ValueError(f"µ-law encode: expected int16 samples, got {x.dtype}")
    # the reference works on 14-bit magnitudes (the top 14 bits of the sample), as audioop did
    v = x.astype(np.int32) >> 2
    neg = v < 0
    mag = np.minimum(np.where(neg, -v, v), _CLIP14) + (_BIAS >> 2)
    seg = np.searchsorted(_SEG_END, mag, side="left")
    uval = (np.minimum(seg, 7) << 4) | ((mag >> (np.minimum(seg, 7) + 1)) & 0x0F)
    uval = np.where(seg >= 8, 0x7F, uval)
    return (uval ^ np.where(neg, 0x7F, 0xFF)).astype(np.uint8).tobytes()


def decode(data: bytes) -> np.ndarray:
    """µ-law bytes to int16 samples."""
    return _DECODE[np.frombuffer(data, dtype=np.uint8)]
