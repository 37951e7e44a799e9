"""RecordingOutput honours PlayoutPause/ResumeFrame: held audio continues at the exact next sample, and an
interruption during a pause drops it (nothing more reaches the bot's channel)."""

from __future__ import annotations

import numpy as np
import pytest
from pipecat.frames.frames import InterruptionFrame, TTSAudioRawFrame, TTSStartedFrame, TTSStoppedFrame
from pipecat.pipeline.worker import PipelineParams
from pipecat.tests.utils import SleepFrame, run_test

from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind as K
from voicelab.measure.recording import CallRecorder
from voicelab.pipeline.frames import PlayoutMarkFrame, PlayoutPauseFrame, PlayoutResumeFrame
from voicelab.pipeline.transport.recording_output import RecordingOutput

SR = 16000


def _speech(seconds: float, seed: int = 0) -> np.ndarray:
    """Loud audio with no zero sample, so the recording's non-zero samples are exactly what was played."""
    rng = np.random.default_rng(seed)
    x = rng.integers(500, 8000, int(seconds * SR)).astype(np.int16)
    return np.where(rng.random(x.size) < 0.5, x, -x).astype(np.int16)


def _frames(audio: np.ndarray, middle: list) -> list:
    words = ["one", "two"]
    return [TTSStartedFrame(context_id="x"),
            PlayoutMarkFrame(chunk_id=0, turn=0, word_index=0, words=words, text="one two"),
            TTSAudioRawFrame(audio[: audio.size // 2].tobytes(), SR, 1, context_id="x"),
            PlayoutMarkFrame(chunk_id=0, turn=0, word_index=1, words=words, text="one two"),
            TTSAudioRawFrame(audio[audio.size // 2:].tobytes(), SR, 1, context_id="x"),
            *middle,
            PlayoutMarkFrame(chunk_id=0, turn=0, word_index=2, words=words, text="one two"),
            TTSStoppedFrame(context_id="x"), SleepFrame(sleep=1.0)]


@pytest.mark.slow
async def test_pause_then_resume_continues_at_the_exact_sample() -> None:
    log, rec = CallLog("c"), CallRecorder(SR, seconds=4)
    out = RecordingOutput(log, rec)
    audio = _speech(1.0)
    frames = _frames(audio, [SleepFrame(sleep=0.3), PlayoutPauseFrame(reason="test"), SleepFrame(sleep=0.5),
                             PlayoutResumeFrame(reason="test")])
    await run_test(out, frames_to_send=frames, pipeline_params=PipelineParams(audio_out_sample_rate=SR))
    out.finish()
    right = rec.right[: rec.end]
    played = right[right != 0]
    assert np.array_equal(played, audio)  # nothing repeated, nothing missing
    pause = next(e for e in log.events if e.kind == K.PLAYOUT_PAUSE)
    resume = next(e for e in log.events if e.kind == K.PLAYOUT_RESUME)
    gap = resume.payload["gap_ms"]
    assert gap == pytest.approx(500, abs=80)  # the pause's silence (event-loop jitter on a busy machine)
    # the silence in the recording is the logged gap, where the log says
    nz = np.flatnonzero(right)
    holes = np.flatnonzero(np.diff(nz) > 1)
    sizes = nz[holes + 1] - nz[holes] - 1
    longest = int(np.argmax(sizes))
    # any other hole is an underrun (the writer late by more than its lead on a loaded machine), far shorter
    assert all(n / SR < 0.1 for i, n in enumerate(sizes) if i != longest)
    a, b = nz[holes[longest]] + 1, nz[holes[longest] + 1]
    assert (b - a) / SR * 1000 == pytest.approx(gap, abs=15)
    assert a / SR == pytest.approx(pause.t_ns / 1e9, abs=0.015)


@pytest.mark.slow
async def test_interruption_during_a_pause_drops_the_held_audio() -> None:
    log, rec = CallLog("c"), CallRecorder(SR, seconds=4)
    out = RecordingOutput(log, rec)
    audio = _speech(1.0, seed=1)
    frames = _frames(audio, [SleepFrame(sleep=0.3), PlayoutPauseFrame(reason="test"), SleepFrame(sleep=0.3),
                             InterruptionFrame(), SleepFrame(sleep=0.5)])
    await run_test(out, frames_to_send=frames, pipeline_params=PipelineParams(audio_out_sample_rate=SR))
    out.finish()
    right = rec.right[: rec.end]
    played = right[right != 0]
    pause = next(e for e in log.events if e.kind == K.PLAYOUT_PAUSE)
    assert 0 < played.size < audio.size // 2  # the second word never played
    assert np.array_equal(played, audio[: played.size])  # a clean prefix
    assert np.flatnonzero(right)[-1] / SR == pytest.approx(pause.t_ns / 1e9, abs=0.015)  # nothing after the pause
    stop = next(e for e in log.events if e.kind == K.PLAYOUT_STOP)
    assert stop.payload["interrupted"] and stop.payload["played"] == "one"  # context keeps the heard word
    assert not any(e.kind == K.PLAYOUT_RESUME for e in log.events)
