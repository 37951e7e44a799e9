"""The early final: Whisper's last pass starts at the VAD's first silent frame (voicelab.speech.streaming) and the
VAD wrapper that reports that frame (voicelab.pipeline.vad_pausing)."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams, VADState

from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.vad_pausing import PausingReportVAD
from voicelab.speech.streaming import StreamingWhisper
from voicelab.speech.whisper import Transcript


class Counting:
    """A recognizer that reads back how many samples each pass got; `gate` holds passes until set."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.calls: list[int] = []
        self.gate = gate

    def transcribe(self, audio: np.ndarray) -> Transcript:
        if self.gate is not None:
            self.gate.wait(timeout=5)
        self.calls.append(audio.size)
        return Transcript(text=f"{audio.size} samples", ms=0.0, audio_s=audio.size / 16000)


def silence(n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.float32)


def test_the_pass_started_at_the_pause_is_the_final() -> None:
    rec, finals = Counting(), []
    stream = StreamingWhisper(rec, partial_every_s=10.0, on_final=finals.append)
    stream.start()
    stream.feed(silence(16000))
    stream.speech_pausing()  # the VAD's first silent frame: the pass starts now, over the 16000 samples
    stream.feed(silence(1920))  # the VAD's stop window (0.12 s) goes on arriving
    final = stream.finish().result(timeout=5)
    assert final.text == "16000 samples" and rec.calls == [16000] and stream.passes == 1
    stream.close()
    assert [f.text for f in finals] == ["16000 samples"]  # told once


def test_speech_after_the_pause_drops_the_early_pass() -> None:
    gate = threading.Event()
    rec = Counting(gate)
    stream = StreamingWhisper(rec, partial_every_s=10.0)
    stream.start()
    stream.feed(silence(8000))
    stream.speech_pausing()
    stream.speech_resumed()  # the caller went on: whatever the early pass says, it is not the final
    stream.feed(silence(8000))
    pending = stream.finish()
    gate.set()
    assert pending.result(timeout=5).text == "16000 samples"
    stream.close()
    assert rec.calls[-1] == 16000


def test_a_second_pause_starts_one_pass_and_nothing_without_audio() -> None:
    rec = Counting()
    stream = StreamingWhisper(rec, partial_every_s=10.0)
    stream.start()
    stream.speech_pausing()  # no audio yet: nothing to transcribe
    assert stream.passes == 0
    stream.feed(silence(4000))
    stream.speech_pausing()
    stream.speech_pausing()  # reported twice: still one pass
    assert stream.passes == 1
    assert stream.finish().result(timeout=5).text == "4000 samples"
    stream.close()


def test_no_partial_pass_queues_behind_the_early_final() -> None:
    rec = Counting()
    stream = StreamingWhisper(rec, partial_every_s=0.1)
    stream.partials = True
    stream.start()
    stream.feed(silence(4800))  # 0.3 s: one partial pass is due and runs
    stream.speech_pausing()
    for _ in range(5):  # the stop window: partials would be due every 0.1 s
        stream.feed(silence(1600))
    final = stream.finish().result(timeout=5)
    stream.close()
    assert final.audio_s <= 4800 / 16000 + 1e-9
    assert rec.calls == [4800]  # the partial over the same audio is the early pass: no pass ran after it


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
    from voicelab.pipeline.stt_whisper import SharedRecognizer

    class NoLoad(SharedRecognizer):
        def __init__(self) -> None:  # no model: the service is only built here
            pass

    class Log:
        pass

    on = PipelineConfig(vad="webrtc")
    stt = stt_service(on, Log(), recognizer=NoLoad())  # type: ignore[arg-type]
    assert isinstance(turn_vad(on, stt), PausingReportVAD)
    off = PipelineConfig(vad="webrtc", stt_early_final=False)
    assert not isinstance(turn_vad(off, stt), PausingReportVAD)
    tr = PipelineConfig(vad="webrtc", stt="transcript")
    assert not isinstance(turn_vad(tr, stt_service(tr, Log())), PausingReportVAD)  # type: ignore[arg-type]
