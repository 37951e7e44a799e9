"""A VAD analyzer that also reports when the speech *seems* to stop, before its stop window confirms it.

Pipecat's VAD goes SPEAKING -> STOPPING at the first frame it judges silent and only reports the stop
(QUIET, `VADUserStoppedSpeakingFrame`) after `stop_secs` more of silence; speech in between sends it back
to SPEAKING and nothing is reported. `PausingReportVAD` wraps any analyzer (Silero, webrtcvad), changes
nothing in its verdicts, and calls `on_pausing(True)` on SPEAKING -> STOPPING and `on_pausing(False)` on
STOPPING -> SPEAKING. The Whisper service uses it to start the final pass `stop_secs` earlier
(`voicelab.speech.streaming`, the early final): the pass is on the critical path of every reply.
"""

from __future__ import annotations

from collections.abc import Callable

from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams, VADState


class PausingReportVAD(VADAnalyzer):
    """Delegates everything to `inner`; reports its STOPPING state's start and end (module doc)."""

    def __init__(self, inner: VADAnalyzer, on_pausing: Callable[[bool], None]) -> None:
        super().__init__(params=inner.params)
        self._inner = inner
        self._on_pausing = on_pausing
        self._last = VADState.QUIET

    @property
    def sample_rate(self) -> int:
        return self._inner.sample_rate

    @property
    def num_channels(self) -> int:
        return self._inner.num_channels

    @property
    def params(self) -> VADParams:
        return self._inner.params

    def num_frames_required(self) -> int:
        return self._inner.num_frames_required()

    def voice_confidence(self, buffer: bytes) -> float:
        return self._inner.voice_confidence(buffer)

    def set_sample_rate(self, sample_rate: int) -> None:
        self._inner.set_sample_rate(sample_rate)

    def set_params(self, params: VADParams) -> None:
        self._inner.set_params(params)

    async def analyze_audio(self, buffer: bytes) -> VADState:
        state = await self._inner.analyze_audio(buffer)
        if state == VADState.STOPPING and self._last == VADState.SPEAKING:
            self._on_pausing(True)
        elif state == VADState.SPEAKING and self._last == VADState.STOPPING:
            self._on_pausing(False)
        self._last = state
        return state

    async def cleanup(self) -> None:
        await self._inner.cleanup()
