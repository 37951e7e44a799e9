"""The recording speaker: the bot's end of a recorded call, as a pipecat output transport.

It plays the bot as a speaker would: a 10 ms chunk handed over while the speaker is idle plays at once,
otherwise right after the audio already queued; the write returns when the speaker is ready for more (so no
more than ~one chunk is ever committed ahead). Each sample lands in the right channel of the recording at
the time it is heard. From that channel it detects the bot's acoustic onset and offset with the rule of
docs/metrics.md (incrementally) and logs `bot_audible_onset` / `bot_audible_end`; it tells the scheduler when
the bot's reply became audible and when it was over; and it logs when each chunk and word really starts
playing (`playout_start` / `playout_stop` with the words heard, from the TTS's `PlayoutMarkFrame`s).

The TTS's word frames (`TTSTextFrame`s, which build the assistant context) are released by these marks, not
by their predicted time: a word enters the context when its audio starts playing, so after a barge-in the
context holds exactly the words heard (a predicted time drifts when the speaker underruns). Word frames that
never get a mark (text the TTS failed to synthesise) are dropped after `unplayed_drop_s`.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import numpy as np
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InterruptionFrame,
    LLMAssistantPushAggregationFrame,
    LLMFullResponseEndFrame,
    OutputAudioRawFrame,
    StartFrame,
    TTSTextFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams

from voicelab.fixtures.schedule import CallerScheduler
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind
from voicelab.measure.playout_ledger import AudibleEvent, PlayoutLedger
from voicelab.measure.recording import CallRecorder
from voicelab.pipeline.frames import PlayoutMarkFrame, PlayoutPauseFrame, PlayoutResumeFrame
from voicelab.rules.speaker_pause import SpeakerPause

K = EventKind


class RecordingOutput(BaseOutputTransport):
    """Real-time speaker + recorder + acoustic onset detector (see the module doc)."""

    def __init__(self, log: CallLog, recorder: CallRecorder, scheduler: CallerScheduler | None = None, *,
                 lead_ms: float = 20.0, tick_ms: float = 10.0, unplayed_drop_s: float = 1.5,
                 **kwargs: Any) -> None:
        sr = recorder.sample_rate
        params = TransportParams(audio_out_enabled=True, audio_out_sample_rate=sr, audio_out_10ms_chunks=1,
                                 audio_out_end_silence_secs=0)
        super().__init__(params, **kwargs)
        self.log = log
        self.recorder = recorder
        self.scheduler = scheduler
        self.sr = sr
        self._lead_ns = int(lead_ms * 1e6)
        self._tick_s = tick_ms / 1000.0
        self._play_end = 0  # sample where the audio handed to the speaker so far ends
        self.ledger = PlayoutLedger(log, sr)
        self._tick_task: asyncio.Task[None] | None = None
        self._pending_marks: list[PlayoutMarkFrame] = []
        self._bot_open = False  # the scheduler was told the bot's reply is audible
        self._pipecat_stopped_at: int | None = None  # sample when BotStoppedSpeaking passed
        self._open_cut = False  # the reply now playing was interrupted (the scheduler's reply-end rule)
        # word frames waiting for their word to start playing, and words started without their frame yet
        self._held: list[Frame] = []
        self._word_credits = 0
        self._unplayed_drop_ns = int(unplayed_drop_s * 1e9)
        self.dropped_words = 0
        self.pause = SpeakerPause(self.ledger)  # pause / resume / cut during a pause, and their ledger rows

    # -- lifecycle --

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self.set_transport_ready(frame)
        if self._tick_task is None:
            self._tick_task = self.create_task(self._ticker(), name="recording_ticker")

    async def _stop_ticker(self) -> None:
        if self._tick_task is not None:
            await self.cancel_task(self._tick_task)
            self._tick_task = None

    async def stop(self, frame: Any) -> None:
        await super().stop(frame)
        await self._stop_ticker()

    async def cancel(self, frame: Any) -> None:
        await super().cancel(frame)
        await self._stop_ticker()

    def finish(self) -> None:
        """Call over: analyse what is left of the track and close open playouts (idempotent)."""
        end = max(self.recorder.end, self._play_end)
        self.recorder.mark(end)
        for ev in self.ledger.finish(self.recorder.right, end, self.log.now_ns()):
            self._on_audible(ev)

    # -- the speaker --

    def _now_sample(self) -> int:
        return self.log.now_ns() * self.sr // 1_000_000_000

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        if not await self.pause.wait():  # paused: this audio (and all after it) waits for resume or cut
            return False  # interrupted while paused: never heard
        pcm = np.frombuffer(frame.audio, dtype=np.int16)
        if frame.num_channels > 1:
            pcm = pcm[:: frame.num_channels]
        start = max(self._play_end, self._now_sample())
        self.pause.landed(start * 1_000_000_000 // self.sr)  # a pause's silence ends here (a busy loop wakes late)
        if self._pending_marks:  # words whose audio starts with this frame
            t = start * 1_000_000_000 // self.sr
            for m in self._pending_marks:
                self._start_word(m, t)
            self._pending_marks.clear()
            await self._release_words()
        self.recorder.put("right", start, pcm)
        self._play_end = start + pcm.size
        # hand back once the speaker is about to need more (keeps ~lead_ms committed ahead)
        wait_ns = self._play_end * 1_000_000_000 // self.sr - self._lead_ns - self.log.now_ns()
        if wait_ns > 0:
            await asyncio.sleep(wait_ns / 1e9)
        return True

    async def write_transport_frame(self, frame: Frame) -> None:
        if isinstance(frame, PlayoutMarkFrame):
            self._on_mark(frame)
            await self._release_words()

    # -- word frames for the context --

    def _holds(self, frame: Frame) -> bool:
        if isinstance(frame, TTSTextFrame) and frame.pts:
            return True
        # the reply's end must not overtake its words
        return bool(self._held) and isinstance(frame, (LLMFullResponseEndFrame, LLMAssistantPushAggregationFrame))

    async def _release_words(self) -> None:
        while self._held:
            head = self._held[0]
            if isinstance(head, TTSTextFrame):
                if self._word_credits <= 0:
                    if self.get_clock().get_time() - (head.pts or 0) < self._unplayed_drop_ns:
                        break
                    self._held.pop(0)  # never played (its audio was not synthesised): not heard
                    self.dropped_words += 1
                    continue
                self._word_credits -= 1
            self._held.pop(0)
            if not isinstance(head, TTSTextFrame):
                self._word_credits = 0  # a reply ended: its words are all out
            head.pts = None
            await self.push_frame(head)

    # -- playout marks --

    def _play_ns(self) -> int:
        """When audio handed over next starts to be heard."""
        return max(self._play_end * 1_000_000_000 // self.sr, self.log.now_ns())

    def _on_mark(self, m: PlayoutMarkFrame) -> None:
        if not m.is_end:  # its time is when the audio after it starts playing
            self._pending_marks.append(m)
            return
        t = self._play_ns()
        for p in self._pending_marks:  # marks with no audio after them
            self._start_word(p, t)
        self._pending_marks.clear()
        # the chunk's audio ends where the speaker's queue ends, on the sample clock: a mark that arrives
        # late (a busy event loop) must not stretch it
        self.ledger.chunk_ended(m.chunk_id, self._play_end * 1_000_000_000 // self.sr)

    def _start_word(self, m: PlayoutMarkFrame, t: int) -> None:
        self._word_credits += 1
        self.ledger.word_started(m, t)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, PlayoutPauseFrame):  # audio already handed to the speaker still plays
            self.pause.pause(frame.reason, self._play_ns())
        elif isinstance(frame, PlayoutResumeFrame):  # the next sample follows the last one played
            self.pause.resume(frame.reason, self._play_ns())
        elif isinstance(frame, InterruptionFrame):
            # the held write drops its audio, woken once the queue is cleared (below); audio already handed to
            # the speaker still plays, and words whose mark passed were heard
            self.pause.interrupt(self._play_ns())
            self._pending_marks.clear()  # their audio never reached the speaker
            self._held = [f for f in self._held if not f.interruptible]
            self._word_credits = 0
            self._open_cut = self._open_cut or self._bot_open
        elif direction == FrameDirection.DOWNSTREAM and self._holds(frame):
            await FrameProcessor.process_frame(self, frame, direction)  # observers only; we time it
            self._held.append(frame)
            await self._release_words()
            return
        await super().process_frame(frame, direction)
        if isinstance(frame, InterruptionFrame):
            self.pause.release()

    async def push_frame(self, frame: Frame, direction: FrameDirection = FrameDirection.DOWNSTREAM) -> None:
        if direction == FrameDirection.DOWNSTREAM:
            if isinstance(frame, BotStoppedSpeakingFrame):
                self._pipecat_stopped_at = self._play_end
            elif isinstance(frame, BotStartedSpeakingFrame):
                self._pipecat_stopped_at = None
        await super().push_frame(frame, direction)

    # -- acoustic onset / offset --

    async def _ticker(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                await asyncio.sleep(self._tick_s)
                self._analyse(self._now_sample())
                self._maybe_report_stop()
                if self._held:
                    await self._release_words()

    def _analyse(self, upto: int) -> None:
        for ev in self.ledger.analyse(self.recorder.right, upto):
            self._on_audible(ev)

    @property
    def onsets(self) -> list[float]:
        return self.ledger.onsets

    @property
    def ends(self) -> list[float]:
        return self.ledger.ends

    def _on_audible(self, ev: AudibleEvent) -> None:
        """The scheduler hears the bot start (a reactive caller's cue); the ledger has logged it."""
        if ev.kind == "onset" and not self._bot_open:
            self._bot_open = True
            self._open_cut = False
            if self.scheduler is not None:
                self.scheduler.bot_audio_started(ev.t_s)

    def _maybe_report_stop(self) -> None:
        """Tell the scheduler the reply is over: pipecat says the bot stopped, and all of it has played."""
        if not self._bot_open or self._pipecat_stopped_at is None:
            return
        if self._now_sample() < self._play_end + self.ledger.tracker.frame:
            return
        if self.ledger.tracker.audible and self.ledger.tracker.last_active_s is not None:
            last = self.ledger.tracker.last_active_s
        elif self.ends:
            last = self.ends[-1]
        else:
            return
        self._bot_open = False
        if self.scheduler is not None:
            self.scheduler.bot_audio_stopped(last, interrupted=self._open_cut)
