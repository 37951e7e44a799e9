"""A pipecat `VADAnalyzer` on the `webrtcvad` module (the `--vad webrtc` alternative to Silero).

WebRTC's VAD answers speech / not speech per 10, 20 or 30 ms frame at 8, 16, 32 or 48 kHz; that answer is
the voice confidence (1.0 or 0.0). Pipecat's state machine (start_secs, stop_secs, min_volume) does the
rest, exactly as for Silero, so the two are compared on equal terms.
"""

from __future__ import annotations

import webrtcvad
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams

SUPPORTED_RATES = (8000, 16000, 32000, 48000)
FRAME_MS = (10, 20, 30)


class WebrtcvadError(ValueError):
    """Bad webrtc VAD settings; the message names the field."""


class WebrtcvadAnalyzer(VADAnalyzer):
    """`mode` is webrtcvad's aggressiveness (0 = least, 3 = most eager to call audio non-speech)."""

    def __init__(self, *, mode: int = 2, frame_ms: int = 30, sample_rate: int | None = None,
                 params: VADParams | None = None) -> None:
        if mode not in (0, 1, 2, 3):
            raise WebrtcvadError(f"vad mode: must be 0, 1, 2 or 3, got {mode}")
        if frame_ms not in FRAME_MS:
            raise WebrtcvadError(f"vad frame_ms: must be 10, 20 or 30, got {frame_ms}")
        if sample_rate is not None and sample_rate not in SUPPORTED_RATES:
            raise WebrtcvadError(f"vad sample_rate: webrtcvad supports {SUPPORTED_RATES}, got {sample_rate}")
        self._mode = mode
        self._frame_ms = frame_ms
        self._vad = webrtcvad.Vad(mode)
        super().__init__(sample_rate=sample_rate, params=params)

    def set_sample_rate(self, sample_rate: int) -> None:
        rate = self._init_sample_rate or sample_rate
        if rate not in SUPPORTED_RATES:
            raise WebrtcvadError(f"vad sample_rate: webrtcvad supports {SUPPORTED_RATES}, got {rate}")
        super().set_sample_rate(sample_rate)

    def num_frames_required(self) -> int:
        return int(self.sample_rate * self._frame_ms / 1000)

    def voice_confidence(self, buffer: bytes) -> float:
        need = self.num_frames_required() * 2
        if len(buffer) != need:  # webrtcvad accepts exact frame sizes only
            return 0.0
        return 1.0 if self._vad.is_speech(buffer, self.sample_rate) else 0.0
