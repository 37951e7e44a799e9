"""The VAD wrapper that reports the speech's first silent frame (voicelab.pipeline.turns.vad_pausing), for the early
final (its stream side: tests/voicelab/speech/test_whisper.py)."""

from __future__ import annotations

import asyncio

import pytest
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams, VADState

from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.turns.vad_pausing import PausingReportVAD


class Scripted(VADAnalyzer):
    """A VAD analyzer whose states come from a list (one per call)."""

    def __init__(self, states: list[VADState]) -> None:
        super().__init__(sample_rate=16000, params=VADParams(stop_secs=0.12))
        self.states = list(states)
        self.rates: list[int] = []

    def num_frames_required(self) -> int:
        return 512

    def voice_confidence(self, buffer: bytes) -> float:
        return 0.0

    def set_sample_rate(self, sample_rate: int) -> None:
        self.rates.append(sample_rate)
        super().set_sample_rate(sample_rate)

    async def analyze_audio(self, buffer: bytes) -> VADState:
        return self.states.pop(0)


def test_the_wrapper_reports_the_stopping_state_and_changes_nothing() -> None:
    S = VADState
    seq = [S.QUIET, S.STARTING, S.SPEAKING, S.STOPPING, S.SPEAKING, S.SPEAKING, S.STOPPING, S.STOPPING, S.QUIET]
    inner = Scripted(seq)
    seen: list[bool] = []
    vad = PausingReportVAD(inner, seen.append)
    vad.set_sample_rate(16000)
    out = [asyncio.run(vad.analyze_audio(b"\0\0" * 320)) for _ in seq]
    assert out == seq  # the verdicts pass through unchanged
    assert seen == [True, False, True]  # speech paused, went on, paused again (then the confirmed stop)
    assert inner.rates == [16000] and vad.params.stop_secs == pytest.approx(0.12)
    assert vad.num_frames_required() == 512 and vad.sample_rate == 16000


def test_turn_vad_wraps_only_for_whisper_with_the_early_final() -> None:
    from voicelab.pipeline.assembly import stt_service, turn_vad
    from voicelab.pipeline.services.stt_whisper import SharedRecognizer

    class NoLoad(SharedRecognizer):
        def __init__(self) -> None:  # no model: the service is only built here
            self.kind, self.name = "whisper", "no-load"

    class Log:
        pass

    on = PipelineConfig(vad="webrtc", stt_early_final=True)
    stt = stt_service(on, Log(), recognizer=NoLoad())  # type: ignore[arg-type]
    assert isinstance(turn_vad(on, stt), PausingReportVAD)
    off = PipelineConfig(vad="webrtc")  # off by default (voicelab/pipeline/config.py)
    assert not PipelineConfig().stt_early_final
    assert not isinstance(turn_vad(off, stt), PausingReportVAD)
    tr = PipelineConfig(vad="webrtc", stt="transcript")
    assert not isinstance(turn_vad(tr, stt_service(tr, Log())), PausingReportVAD)  # type: ignore[arg-type]
