"""The recording speaker and the fixture player: onset tracking, recording, real-time playout."""

from __future__ import annotations

import asyncio
import wave
from pathlib import Path

import numpy as np
import pytest
from pipecat.frames.frames import TTSAudioRawFrame, TTSStartedFrame, TTSStoppedFrame
from pipecat.pipeline.worker import PipelineParams
from pipecat.tests.utils import SleepFrame, run_test

from voicelab.fixtures.schedule import CallerScheduler, StartRule, TurnPlan
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind as K
from voicelab.measure.onset import segments
from voicelab.measure.playout_ledger import AudibleTracker
from voicelab.measure.recording import CallRecorder
from voicelab.pipeline.frames import PlayoutMarkFrame
from voicelab.pipeline.transport.recording_output import RecordingOutput

SR = 16000


def _tone(seconds: float, amp: float = 0.3, f: float = 220.0) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (amp * 32767 * np.sin(2 * np.pi * f * t)).astype(np.int16)


def _track(parts: list[tuple[str, float]]) -> np.ndarray:
    out = []
    for kind, secs in parts:
        out.append(_tone(secs) if kind == "tone" else np.zeros(int(secs * SR), dtype=np.int16))
    return np.concatenate(out)


@pytest.mark.parametrize("chunk", [160, 333, 1600])
def test_tracker_matches_onset_segments(chunk: int) -> None:
    # bursts: a blip too short to count, a gap shorter than 0.3 s (joins), a long gap (splits)
    track = _track([("sil", 0.2), ("tone", 0.02), ("sil", 0.1), ("tone", 0.4), ("sil", 0.2), ("tone", 0.3),
                    ("sil", 0.6), ("tone", 0.5), ("sil", 0.5)])
    tr = AudibleTracker(SR)
    events = []
    for upto in range(chunk, track.size + chunk, chunk):
        events += tr.advance(track, min(upto, track.size))
    events += tr.flush()
    onsets = [e.t_s for e in events if e.kind == "onset"]
    ends = [e.t_s for e in events if e.kind == "end"]
    want = segments(track, SR)
    assert len(onsets) == len(want) == 2
    for (on, off), o, e in zip(want, onsets, ends, strict=True):
        assert o == pytest.approx(on, abs=0.0011)
        assert e == pytest.approx(off, abs=0.0011)


def test_tracker_end_waits_for_the_gap() -> None:
    track = _track([("tone", 0.3), ("sil", 0.2)])
    tr = AudibleTracker(SR)
    ev = tr.advance(track, track.size)
    assert [e.kind for e in ev] == ["onset"]  # 0.2 s of silence is not yet an end
    assert tr.audible and tr.last_active_s == pytest.approx(0.3, abs=0.01)


def test_recorder_writes_stereo_on_the_call_clock(tmp_path: Path) -> None:
    rec = CallRecorder(SR, seconds=0.5)
    rec.put("left", 100, np.full(50, 1000, dtype=np.int16))
    rec.put("right", SR, np.full(SR, -1000, dtype=np.int16))  # grows past the initial size
    rec.mark(int(2.5 * SR))
    path = tmp_path / "call.wav"
    rec.write_wav(path)
    with wave.open(str(path)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (2, 2, SR)
        assert w.getnframes() == int(2.5 * SR)
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, 2)
    assert data[100, 0] == 1000 and data[99, 0] == 0 and data[100, 1] == 0
    assert data[SR, 1] == -1000 and data[SR - 1, 1] == 0


async def test_recording_output_plays_in_real_time_and_logs_playout() -> None:
    log = CallLog("c")
    rec = CallRecorder(SR, seconds=3)
    sched = CallerScheduler([TurnPlan(StartRule("call_start", 0.0), 0.5, 0.05, 0.45)])
    out = RecordingOutput(log, rec, sched)
    audio = _tone(0.6)
    words = ["hello", "there"]
    frames = [
        TTSStartedFrame(context_id="x"),
        PlayoutMarkFrame(chunk_id=0, turn=0, word_index=0, words=words, text="hello there"),
        TTSAudioRawFrame(audio[:4800].tobytes(), SR, 1, context_id="x"),
        PlayoutMarkFrame(chunk_id=0, turn=0, word_index=1, words=words, text="hello there"),
        TTSAudioRawFrame(audio[4800:].tobytes(), SR, 1, context_id="x"),
        PlayoutMarkFrame(chunk_id=0, turn=0, word_index=2, words=words, text="hello there"),
        TTSStoppedFrame(context_id="x"),
        SleepFrame(sleep=1.2),
    ]
    t0 = asyncio.get_running_loop().time()
    await run_test(out, frames_to_send=frames, pipeline_params=PipelineParams(audio_out_sample_rate=SR))
    elapsed = asyncio.get_running_loop().time() - t0
    out.finish()
    assert elapsed >= 0.6  # played out at the speaker's pace, not faster
    kinds = [e.kind for e in log.events]
    assert kinds.count(K.PLAYOUT_START) == 1 and kinds.count(K.PLAYOUT_STOP) == 1
    start = next(e for e in log.events if e.kind == K.PLAYOUT_START)
    stop = next(e for e in log.events if e.kind == K.PLAYOUT_STOP)
    assert stop.payload["played"] == "hello there" and not stop.payload["interrupted"]
    assert (stop.t_ns - start.t_ns) / 1e9 == pytest.approx(0.6, abs=0.02)  # on the sample clock
    onset = next(e for e in log.events if e.kind == K.BOT_AUDIBLE_ONSET)
    end = next(e for e in log.events if e.kind == K.BOT_AUDIBLE_END)
    assert abs(onset.t_ns - start.t_ns) < 15e6 and onset.turn == 0
    assert (end.t_ns - onset.t_ns) / 1e9 == pytest.approx(0.6, abs=0.02)
    # the recording holds the audio where it was heard
    # (the second frame follows the first with no gap, or, if the event loop stalled past the first frame's end
    # on a loaded machine, after an underrun gap the speaker would also leave: at most the 20 ms allowed above)
    s = int(start.t_ns * SR // 1_000_000_000)
    assert np.array_equal(rec.right[s:s + 4800], audio[:4800])
    gaps = [g for g in range(0, 321) if np.array_equal(rec.right[s + 4800 + g:s + audio.size + g], audio[4800:])]
    assert gaps and not rec.right[s + 4800:s + 4800 + gaps[0]].any(), gaps[:3]
    # the scheduler learnt that the bot spoke and stopped
    assert sched._starts and sched._stops
