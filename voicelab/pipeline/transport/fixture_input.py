"""The fixture player: the caller's end of a recorded call, as a pipecat input transport.

It plays the caller in real time on the call clock of `CallLog` (t_ns 0 = call start = sample 0 of the
recorded WAV): every `frame_ms` it hands the pipeline the next frame of the caller's line (silence, or the
clips the `CallerScheduler` has started, mixed in at their exact sample, or with `clip_grid_ms` at the next
point of that grid: a clip whose start follows the bot's timing otherwise meets the frame and VAD-window
boundaries at another phase in each run, and Whisper tiny.en reads a few ms of shift as other words). It
logs the ground truth of each clip it places (`caller_clip_*`, `caller_speech_*`), writes the caller into the left channel of the
recording, and says when the call is over (the scheduler's `done`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pipecat.frames.frames import InputAudioRawFrame, StartFrame
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_transport import TransportParams

from voicelab.fixtures.format import Fixture
from voicelab.fixtures.schedule import CallerScheduler
from voicelab.measure.calllog import CallLog, PlayedUtterance
from voicelab.measure.events import EventKind
from voicelab.measure.recording import CallRecorder
from voicelab.pcm import to_int16

K = EventKind


@dataclass
class _Playing:
    turn: int
    start: int  # sample on the call clock
    audio: np.ndarray  # int16


@dataclass
class PlayerStats:
    frames: int = 0
    max_lag_ms: float = 0.0
    late_clips: list[int] = field(default_factory=list)


class FixturePlayerInput(BaseInputTransport):
    """Plays a fixture's caller into the pipeline in real time (see the module doc)."""

    def __init__(self, fixture: Fixture, scheduler: CallerScheduler, log: CallLog, recorder: CallRecorder,
                 *, frame_ms: int = 20, on_done: Callable[[], Any] | None = None, max_call_s: float = 120.0,
                 clip_grid_ms: int = 0, **kwargs: Any) -> None:
        sr = recorder.sample_rate
        params = TransportParams(audio_in_enabled=True, audio_in_sample_rate=sr, audio_in_passthrough=True)
        super().__init__(params, **kwargs)
        if fixture.sample_rate != sr:
            raise ValueError(f"{fixture.path}: sample_rate: loaded at {fixture.sample_rate} Hz, pipeline runs at {sr} Hz")
        self.fixture = fixture
        self.scheduler = scheduler
        self.log = log
        self.recorder = recorder
        self.sr = sr
        self.frame = sr * frame_ms // 1000
        self.grid = sr * clip_grid_ms // 1000  # clip starts are rounded up to it (0: exact)
        self.on_done = on_done
        self.max_call_s = max_call_s
        self.stats = PlayerStats()
        self.done = asyncio.Event()
        self._playing: list[_Playing] = []
        self._task: asyncio.Task[None] | None = None
        self._clips = [to_int16(t.audio) for t in fixture.turns]

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self.set_transport_ready(frame)
        if self._task is None:
            self._task = self.create_task(self._play(), name="fixture_player")

    async def _stop_task(self) -> None:
        if self._task is not None:
            await self.cancel_task(self._task)
            self._task = None

    async def stop(self, frame: Any) -> None:
        await self._stop_task()
        await super().stop(frame)

    async def cancel(self, frame: Any) -> None:
        await self._stop_task()
        await super().cancel(frame)

    async def _play(self) -> None:
        self.log.restart_clock()  # t_ns 0 = the first sample the caller side produces
        self.log.log(K.CALL_START, -1, {"fixture": self.fixture.name})
        k = 0
        finished = False
        while True:
            due_ns = (k + 1) * self.frame * 1_000_000_000 // self.sr
            wait = (due_ns - self.log.now_ns()) / 1e9
            if wait > 0:
                await asyncio.sleep(wait)
            else:
                self.stats.max_lag_ms = max(self.stats.max_lag_ms, -wait * 1000)
            lo, hi = k * self.frame, (k + 1) * self.frame
            now_s = hi / self.sr
            for clip in self.scheduler.due(now_s):
                self._place(clip.turn, clip.start_s, lo)
            out = np.zeros(self.frame, dtype=np.int32)
            for p in self._playing:
                a, b = max(lo, p.start), min(hi, p.start + p.audio.size)
                if a < b:
                    out[a - lo:b - lo] += p.audio[a - p.start:b - p.start]
            self._playing = [p for p in self._playing if p.start + p.audio.size > hi]
            pcm = np.clip(out, -32768, 32767).astype(np.int16)
            self.recorder.put("left", lo, pcm)
            self.recorder.mark(hi)
            await self.push_audio_frame(InputAudioRawFrame(pcm.tobytes(), self.sr, 1))
            self.stats.frames += 1
            k += 1
            if not finished and (self.scheduler.done(now_s) or now_s >= self.max_call_s):
                finished = True
                if now_s >= self.max_call_s:
                    self.log.error("player", f"call exceeded {self.max_call_s:g} s; ended", turn=-1)
                self.done.set()
                if self.on_done is not None:
                    res = self.on_done()
                    if asyncio.iscoroutine(res):
                        await res

    def _place(self, turn: int, start_s: float, frame_lo: int) -> None:
        start = max(int(round(start_s * self.sr)), frame_lo)
        if start != int(round(start_s * self.sr)):
            self.stats.late_clips.append(turn)
        if self.grid:
            start = -(-start // self.grid) * self.grid  # the same frame and VAD-window phase in every run
        self.scheduler.clip_started(turn, start / self.sr)
        t = self.fixture.turns[turn]
        audio = self._clips[turn]
        self._playing.append(_Playing(turn, start, audio))
        ns = 1_000_000_000 / self.sr
        self.log.add_utterance(PlayedUtterance(
            turn=turn, clip_start_ns=int(start * ns), clip_end_ns=int((start + audio.size) * ns),
            speech_start_ns=int((start + t.speech_onset_s * self.sr) * ns),
            speech_end_ns=int((start + t.speech_offset_s * self.sr) * ns),
            expect=t.expect, text=t.text, expect_reply=t.expect_reply))
