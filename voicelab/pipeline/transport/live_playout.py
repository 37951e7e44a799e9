"""When the bot's audio left for the browser: `LivePlayout` does for the browser what the recording speaker
does for a recorded call.

The WebRTC output hands each audio frame on once its last 10 ms has left for the browser, so the time it
passes gives when the bot's audio went out; from that it logs `playout_*` (per chunk and word, from the TTS's
marks) and `bot_audible_onset` / `bot_audible_end` (the onset rule, `voicelab.measure.playout_ledger.AudibleTracker`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np
from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    Frame,
    InterruptionFrame,
    OutputAudioRawFrame,
    StartFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voicelab.measure.calllog import CallLog
from voicelab.measure.playout_ledger import PlayoutLedger
from voicelab.measure.recording import Track
from voicelab.pipeline.frames import PlayoutMarkFrame, PlayoutPauseFrame, PlayoutResumeFrame
from voicelab.rules.speaker_pause import SpeakerPause


class LivePlayout(FrameProcessor):
    """Placed right after the WebRTC output transport; logs playout and the bot's acoustic onsets.

    The output transport pushes each audio frame on when its write returned, i.e. when the frame's last
    10 ms chunk was taken by the WebRTC track (which sends 10 ms every 10 ms), so the frame went out over
    the 10 ms ticks before. Marks come through in order with the audio, after the audio before them.
    The onset detector runs `lag_ms` behind the clock, so a frame placed back in time is never missed.

    Pauses (`PausableWebRTCOutput`): the pause frame overtakes the frame the track is still sending (at most
    one write), so the pause is logged once that frame had time to come through (`lag_ms`) or at the resume
    or interruption that follows, at the end of the audio sent: the sample where the speaker stopped
    (`SpeakerPause` with a logging lag).
    """

    def __init__(self, log: CallLog, sample_rate: int, *, on_words: Callable[[int, int], None] | None = None,
                 tick_ms: float = 20.0, lag_ms: float = 100.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.log = log
        self.sr = sample_rate
        self._on_words = on_words
        self._tick_s = tick_ms / 1000.0
        self._lag = int(sample_rate * lag_ms / 1000)
        self.track = Track(sample_rate)  # the bot's outgoing audio on the call clock
        self.ledger = PlayoutLedger(log, sample_rate, where="server")
        self._play_end = 0  # sample where the audio handed to the browser so far ends
        self._analysed = 0
        self._tick_task: asyncio.Task[None] | None = None
        self.pause = SpeakerPause(self.ledger, log_lag_ns=self._lag * 1_000_000_000 // sample_rate)

    def _now_sample(self) -> int:
        return self.log.now_ns() * self.sr // 1_000_000_000

    def _play_ns(self) -> int:
        return max(self._sent_ns(), self.log.now_ns())

    def _sent_ns(self) -> int:
        """Where the audio seen sent so far ends."""
        return self._play_end * 1_000_000_000 // self.sr

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM:
            if isinstance(frame, StartFrame):
                if self._tick_task is None:
                    self._tick_task = self.create_task(self._ticker(), name="live_playout_ticker")
            elif isinstance(frame, OutputAudioRawFrame):
                self._on_audio(frame)
            elif isinstance(frame, PlayoutMarkFrame):
                self._on_mark(frame)
            elif isinstance(frame, PlayoutPauseFrame):
                self.pause.pause(frame.reason, self._play_ns(), self.log.now_ns())
            elif isinstance(frame, PlayoutResumeFrame):  # the held audio continues with its next sample
                self.pause.resume(frame.reason, self._play_ns(), self._sent_ns())
            elif isinstance(frame, InterruptionFrame):  # audio already sent still plays in the browser
                self.pause.interrupt(self._play_ns(), self._sent_ns())
                self.pause.release()  # this side holds no audio
            elif isinstance(frame, (EndFrame, CancelFrame)):
                await self._stop_ticker()
                self.finish()
        await self.push_frame(frame, direction)

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._stop_ticker()

    async def _stop_ticker(self) -> None:
        if self._tick_task is not None:
            await self.cancel_task(self._tick_task)
            self._tick_task = None

    def finish(self) -> None:
        """The call is over: analyse the rest and close open stretches and chunks (idempotent)."""
        self.pause.flush(self._sent_ns())
        end = max(self._play_end, self._now_sample())
        self.track.ensure(end + self.ledger.tracker.frame)
        self.ledger.finish(self.track.buf, end, self.log.now_ns())

    # -- audio and marks --

    def _on_audio(self, frame: OutputAudioRawFrame) -> None:
        pcm = np.frombuffer(frame.audio, dtype=np.int16)
        if frame.num_channels > 1:
            pcm = pcm[:: frame.num_channels]
        if frame.sample_rate != self.sr and frame.sample_rate > 0:  # keep the duration, drop the detail
            n = pcm.size * self.sr // frame.sample_rate
            pcm = pcm[np.linspace(0, pcm.size - 1, n).astype(int)] if n else pcm[:0]
        # the write returned as the last 10 ms chunk was taken: the frame went out over the ticks before
        start = max(self._play_end, self._now_sample() - pcm.size + self.sr // 100, self._analysed)
        self.track.put(start, pcm, mix=False)
        self._play_end = start + pcm.size

    def _on_mark(self, m: PlayoutMarkFrame) -> None:
        t = self._play_ns()
        c = self.ledger.chunks.get(m.chunk_id)
        if m.is_end:
            if c is not None:
                self._words(m.chunk_id, len(c.words))
                self.ledger.chunk_ended(m.chunk_id, t)
            return
        c = self.ledger.word_started(m, t)
        self._words(c.chunk_id, c.words_started)

    def _words(self, chunk_id: int, words_started: int) -> None:
        if self._on_words is not None:
            self._on_words(chunk_id, words_started)

    # -- acoustic onset / offset --

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(self._tick_s)
            self.pause.tick(self.log.now_ns(), self._sent_ns())
            self._analyse(self._now_sample() - self._lag)

    def _analyse(self, upto: int) -> None:
        if upto <= self._analysed:
            return
        self.track.ensure(upto)
        self._analysed = upto
        self.ledger.analyse(self.track.buf, upto)

    @property
    def onsets(self) -> list[float]:
        return self.ledger.onsets
