"""Streaming pocketsphinx and the transcript STT, driven by VAD frames as the user aggregator sends them."""

from __future__ import annotations

import time

import numpy as np
import pytest
from pipecat.frames.frames import (
    InputAudioRawFrame,
    InterimTranscriptionFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.pipeline.worker import PipelineParams
from pipecat.tests.utils import SleepFrame, run_test

from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture
from voicelab.measure.calllog import CallLog, PlayedUtterance
from voicelab.pipeline.services.stt_pocketsphinx import PocketsphinxSTTService, new_decoder
from voicelab.pipeline.services.stt_transcript import TranscriptSTTService

SR = 16000


def _clip() -> tuple[np.ndarray, str, float, float]:
    fx_dir = FIXTURES_ROOT / "single_question"
    if not (fx_dir / "fixture.json").is_file():
        pytest.skip("audio_fixtures/single_question not built")
    t = load_fixture(fx_dir).turns[0]
    return (t.audio * 32767).astype(np.int16), t.text, t.speech_onset_s, t.speech_offset_s


def _frames(pcm: np.ndarray, onset_s: float, offset_s: float) -> list:
    """20 ms audio frames with VAD start 0.2 s after the speech onset and stop 0.2 s after its end."""
    out: list = []
    start_at, stop_at = int((onset_s + 0.2) * SR), int((offset_s + 0.2) * SR)
    pcm = np.concatenate([pcm, np.zeros(SR // 2, dtype=np.int16)])
    for i in range(0, pcm.size, 320):
        out.append(InputAudioRawFrame(pcm[i:i + 320].tobytes(), SR, 1))
        if i <= start_at < i + 320:
            out.append(VADUserStartedSpeakingFrame(start_secs=0.2))
        if i <= stop_at < i + 320:
            out.append(VADUserStoppedSpeakingFrame(stop_secs=0.2))
            out.append(SleepFrame(sleep=4.0))  # room for the final pass (~150 ms idle; seconds on a loaded machine)
    return out


@pytest.mark.slow
async def test_streams_and_finalizes_at_the_vad_stop() -> None:
    pcm, text, on, off = _clip()
    stt = PocketsphinxSTTService(decoder=new_decoder(SR), sample_rate=SR)
    t0 = time.monotonic()
    down, _ = await run_test(stt, frames_to_send=_frames(pcm, on, off),
                             pipeline_params=PipelineParams(audio_in_sample_rate=SR))
    finals = [f for f in down if isinstance(f, TranscriptionFrame)]
    interims = [f for f in down if isinstance(f, InterimTranscriptionFrame)]
    assert len(finals) == 1 and finals[0].finalized
    heard = set(finals[0].text.split())
    assert heard & set(text.split()), f"{finals[0].text!r} shares no word with {text!r}"
    assert interims, "partial hypotheses while the caller speaks"
    assert down.index(interims[0]) < down.index(finals[0])
    assert time.monotonic() - t0 < 20
    assert stt.finals == [finals[0].text]


async def test_no_transcript_without_speech() -> None:
    stt = PocketsphinxSTTService(decoder=new_decoder(SR), sample_rate=SR)
    silence = [InputAudioRawFrame(bytes(640), SR, 1) for _ in range(50)]
    down, _ = await run_test(stt, frames_to_send=silence, pipeline_params=PipelineParams(audio_in_sample_rate=SR))
    assert not [f for f in down if isinstance(f, (TranscriptionFrame, InterimTranscriptionFrame))]


async def test_transcript_stt_sends_the_fixture_text_at_the_vad_stop() -> None:
    log = CallLog("c")
    now = log.now_ns()
    log.utterances.append(PlayedUtterance(turn=0, clip_start_ns=now, clip_end_ns=now + 10**9,
                                          speech_start_ns=now, speech_end_ns=now + 4 * 10**8, expect=None,
                                          text="what time do you open on saturday"))
    stt = TranscriptSTTService(log, sample_rate=SR)
    frames = [VADUserStartedSpeakingFrame(start_secs=0.2), SleepFrame(sleep=0.3),
              VADUserStoppedSpeakingFrame(stop_secs=0.2), SleepFrame(sleep=0.1),
              VADUserStartedSpeakingFrame(start_secs=0.2), VADUserStoppedSpeakingFrame(stop_secs=0.2)]
    down, _ = await run_test(stt, frames_to_send=frames, pipeline_params=PipelineParams(audio_in_sample_rate=SR))
    finals = [f for f in down if isinstance(f, TranscriptionFrame)]
    assert [f.text for f in finals] == ["what time do you open on saturday"]  # once, at the first stop
    interims = [f.text for f in down if isinstance(f, InterimTranscriptionFrame)]
    assert interims and all("what time do you open on saturday".startswith(t) for t in interims)
