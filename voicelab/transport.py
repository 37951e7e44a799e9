"""The fixture player (input) and the recording speaker (output): the two ends of a recorded call.

Both run on the call clock of `CallLog` (t_ns 0 = call start = sample 0 of the recorded WAV).

`FixturePlayerInput` plays the caller in real time: every `frame_ms` it hands the pipeline the next frame
of the caller's line (silence, or the clips the `CallerScheduler` has started, mixed in at their exact
sample). It logs the ground truth of each clip it places (`caller_clip_*`, `caller_speech_*`), writes the
caller into the left channel of the recording, and says when the call is over (the scheduler's `done`).

`RecordingOutput` plays the bot as a speaker would: a 10 ms chunk handed over while the speaker is idle
plays at once, otherwise right after the audio already queued; the write returns when the speaker is
ready for more (so no more than ~one chunk is ever committed ahead). Each sample lands in the right channel
at the time it is heard. From that channel it detects the bot's acoustic onset and offset with the rule of
DESIGN.md §4 (`voicelab.onset`, incrementally) and logs `bot_audible_onset` / `bot_audible_end`; it tells
the scheduler when the bot's reply became audible and when it was over; and it logs when each chunk and
word really starts playing (`playout_start` / `playout_stop` with the words heard, from the TTS's
`PlayoutMarkFrame`s).

The TTS's word frames (`TTSTextFrame`s, which build the assistant context) are released by these marks, not by
their predicted time: a word enters the context when its audio starts playing, so after a barge-in the
context holds exactly the words heard (a predicted time drifts when the speaker underruns). Word frames that
never get a mark (text the TTS failed to synthesise) are dropped after `unplayed_drop_s`.
"""

from __future__ import annotations

import asyncio
import contextlib
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    LLMAssistantPushAggregationFrame,
    LLMFullResponseEndFrame,
    OutputAudioRawFrame,
    StartFrame,
    TTSTextFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams

from voicelab.caller_schedule import CallerScheduler
from voicelab.events import EventKind
from voicelab.fixtures import Fixture
from voicelab.gate_processor import PlayoutMarkFrame
from voicelab.observers import CallerUtterance, CallLog
from voicelab.onset import RULE, OnsetRule

K = EventKind


# ---- the recording ------------------------------------------------------------------------------------


def turn_at(marks: list[tuple[int, int]], t_s: float, sr: int) -> int:
    """The reply turn whose playout mark (sample, turn) is the last one at or before t_s (-1 before any)."""
    sample = int(t_s * sr)
    turn = -1
    for s, tr in marks:
        if s <= sample + sr // 10:  # marks precede their audio's onset by the leading silence
            turn = tr
    return turn

class CallRecorder:
    """Stereo call audio on the call clock: left = caller as played in, right = bot as heard (int16)."""

    def __init__(self, sample_rate: int = 16000, seconds: float = 60.0) -> None:
        self.sample_rate = sample_rate
        self.left = np.zeros(int(sample_rate * seconds), dtype=np.int16)
        self.right = np.zeros_like(self.left)
        self.end = 0  # samples recorded so far (max over both channels)

    def _grow(self, n: int) -> None:
        if n > self.left.size:
            size = max(n, self.left.size * 2)
            self.left = np.concatenate([self.left, np.zeros(size - self.left.size, dtype=np.int16)])
            self.right = np.concatenate([self.right, np.zeros(size - self.right.size, dtype=np.int16)])

    def put(self, channel: str, start: int, samples: np.ndarray) -> None:
        if samples.size == 0:
            return
        stop = start + samples.size
        self._grow(stop)
        buf = self.left if channel == "left" else self.right
        mixed = buf[start:stop].astype(np.int32) + samples.astype(np.int32)
        buf[start:stop] = np.clip(mixed, -32768, 32767).astype(np.int16)
        self.end = max(self.end, stop)

    def mark(self, sample: int) -> None:
        """The call lasted at least until this sample (silence counts)."""
        self._grow(sample)
        self.end = max(self.end, sample)

    def write_wav(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        stereo = np.stack([self.left[:self.end], self.right[:self.end]], axis=1)
        with wave.open(str(path), "wb") as w:
            w.setnchannels(2)
            w.setsampwidth(2)
            w.setframerate(self.sample_rate)
            w.writeframes(stereo.astype("<i2").tobytes())


# ---- incremental onset / offset --------------------------------------------------------------------------

@dataclass
class AudibleEvent:
    kind: str  # "onset" | "end"
    t_s: float


class AudibleTracker:
    """The onset rule of `voicelab.onset.segments`, run incrementally over a growing track.

    A stretch of audible windows (runs closer than `min_gap_s` join) starts at the first run of at least
    `min_voiced_ms` (onset) and ends at its last audible window, once `min_gap_s` of silence followed.
    """

    def __init__(self, sample_rate: int, rule: OnsetRule = RULE, min_gap_s: float = 0.3) -> None:
        self.sr = sample_rate
        self.rule = rule
        self.hop = max(1, round(sample_rate * rule.hop_ms / 1000))
        self.frame = max(1, round(sample_rate * rule.window_ms / 1000))
        self.half = self.frame // 2
        self.min_run = max(1, round(rule.min_voiced_ms / rule.hop_ms))
        self.min_gap_hops = max(1, round(min_gap_s * 1000 / rule.hop_ms))
        self.next_hop = 0  # next window centre (hop index) to evaluate
        self.audible = False
        self.run_start = -1  # first hop of the current active run
        self.run_len = 0
        self.last_active = -1  # last active hop of the current stretch

    def advance(self, track: np.ndarray, upto: int) -> list[AudibleEvent]:
        """Evaluate every window that lies inside track[:upto]; return the onsets/ends found."""
        last_centre = (upto - (self.frame - self.half)) // self.hop
        if last_centre < self.next_hop:
            return []
        first = self.next_hop
        a = first * self.hop - self.half
        b = last_centre * self.hop + (self.frame - self.half)
        lo = max(0, a)
        seg = track[lo:b]
        if a < 0:  # before the track starts: pad like onset.active_windows does (edge)
            seg = np.concatenate([np.full(-a, seg[0] if seg.size else 0, dtype=seg.dtype), seg])
        act = self._windows(seg, last_centre - first + 1)
        self.next_hop = last_centre + 1
        out: list[AudibleEvent] = []
        hop_s = self.hop / self.sr
        for i, on in enumerate(act):
            h = first + i
            if on:
                if self.run_len == 0:
                    self.run_start = h
                self.run_len += 1
                self.last_active = h
                if not self.audible and self.run_len >= self.min_run:
                    self.audible = True
                    out.append(AudibleEvent("onset", self.run_start * hop_s))
            else:
                self.run_len = 0
                if self.audible and h - self.last_active >= self.min_gap_hops:
                    self.audible = False
                    out.append(AudibleEvent("end", self.last_active * hop_s))
        return out

    def _windows(self, seg: np.ndarray, n: int) -> np.ndarray:
        """Activity of n windows centred at seg[half + k*hop] (seg starts half a window before the first)."""
        x = seg.astype(np.float64) / 32768.0
        s1 = np.concatenate(([0.0], np.cumsum(x)))
        s2 = np.concatenate(([0.0], np.cumsum(x * x)))
        starts = np.arange(n) * self.hop
        ends = starts + self.frame
        ok = ends <= x.size
        starts, ends = starts[ok], ends[ok]
        mean = (s1[ends] - s1[starts]) / self.frame
        var = np.maximum((s2[ends] - s2[starts]) / self.frame - mean * mean, 0.0)
        gate = 10.0 ** (self.rule.gate_dbfs / 20.0)
        out = np.zeros(n, dtype=bool)
        out[: var.size] = var > gate * gate
        return out

    @property
    def last_active_s(self) -> float | None:
        return None if self.last_active < 0 else self.last_active * self.hop / self.sr

    def flush(self) -> list[AudibleEvent]:
        """The track ended: close an open stretch."""
        if self.audible:
            self.audible = False
            return [AudibleEvent("end", self.last_active * self.hop / self.sr)]
        return []


# ---- input: the fixture player ---------------------------------------------------------------------------

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
                 **kwargs: Any) -> None:
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
        self.on_done = on_done
        self.max_call_s = max_call_s
        self.stats = PlayerStats()
        self.done = asyncio.Event()
        self._playing: list[_Playing] = []
        self._task: asyncio.Task[None] | None = None
        self._clips = [(np.clip(t.audio, -1.0, 1.0) * 32767.0).astype(np.int16) for t in fixture.turns]

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
        self.scheduler.clip_started(turn, start / self.sr)
        t = self.fixture.turns[turn]
        audio = self._clips[turn]
        self._playing.append(_Playing(turn, start, audio))
        ns = 1_000_000_000 / self.sr
        self.log.add_utterance(CallerUtterance(
            turn=turn, clip_start_ns=int(start * ns), clip_end_ns=int((start + audio.size) * ns),
            speech_start_ns=int((start + t.speech_onset_s * self.sr) * ns),
            speech_end_ns=int((start + t.speech_offset_s * self.sr) * ns),
            expect=t.expect, text=t.text))


# ---- output: the recording speaker -----------------------------------------------------------------------

@dataclass
class _ChunkPlay:
    chunk_id: int
    turn: int
    words: list[str]
    text: str
    started_ns: int
    words_started: int = 0


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
        self._tracker = AudibleTracker(sr)
        self._tick_task: asyncio.Task[None] | None = None
        self._chunks: dict[int, _ChunkPlay] = {}
        self._pending_marks: list[PlayoutMarkFrame] = []
        self._turn_at: list[tuple[int, int]] = []  # (sample, reply turn) from playout marks
        self._bot_open = False  # the scheduler was told the bot's reply is audible
        self._pipecat_stopped_at: int | None = None  # sample when BotStoppedSpeaking passed
        self.onsets: list[float] = []
        self.ends: list[float] = []
        # word frames waiting for their word to start playing, and words started without their frame yet
        self._held: list[Frame] = []
        self._word_credits = 0
        self._unplayed_drop_ns = int(unplayed_drop_s * 1e9)
        self.dropped_words = 0

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
        self._analyse(end + self._tracker.frame)
        for ev in self._tracker.flush():
            self._on_audible(ev)
        for c in list(self._chunks.values()):
            self._stop_chunk(c, self.log.now_ns(), interrupted=True)

    # -- the speaker --

    def _now_sample(self) -> int:
        return self.log.now_ns() * self.sr // 1_000_000_000

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        pcm = np.frombuffer(frame.audio, dtype=np.int16)
        if frame.num_channels > 1:
            pcm = pcm[:: frame.num_channels]
        start = max(self._play_end, self._now_sample())
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
        c = self._chunks.get(m.chunk_id)
        if c is not None:
            c.words_started = len(c.words)
            self._stop_chunk(c, t, interrupted=False)

    def _start_word(self, m: PlayoutMarkFrame, t: int) -> None:
        self._word_credits += 1
        c = self._chunks.get(m.chunk_id)
        if c is None:
            c = _ChunkPlay(m.chunk_id, m.turn, list(m.words), m.text, t)
            self._chunks[m.chunk_id] = c
            self._turn_at.append((t * self.sr // 1_000_000_000, m.turn))
            self.log.log(K.PLAYOUT_START, m.turn, {"chunk_id": m.chunk_id, "text": m.text}, t_ns=t)
        c.words_started = max(c.words_started, m.word_index + 1)

    def _stop_chunk(self, c: _ChunkPlay, t_ns: int, interrupted: bool) -> None:
        self._chunks.pop(c.chunk_id, None)
        played = " ".join(c.words[: c.words_started])
        self.log.log(K.PLAYOUT_STOP, c.turn, {"chunk_id": c.chunk_id, "text": c.text, "played": played,
                                              "interrupted": interrupted,
                                              "words_played": c.words_started, "words": len(c.words)},
                     t_ns=t_ns)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, InterruptionFrame):
            # audio already handed to the speaker still plays; words whose mark passed were heard
            cut = self._play_ns()
            self._pending_marks.clear()  # their audio never reached the speaker
            for c in list(self._chunks.values()):
                self._stop_chunk(c, cut, interrupted=True)
            self._held = [f for f in self._held if not f.interruptible]
            self._word_credits = 0
        elif direction == FrameDirection.DOWNSTREAM and self._holds(frame):
            await FrameProcessor.process_frame(self, frame, direction)  # observers only; we time it
            self._held.append(frame)
            await self._release_words()
            return
        await super().process_frame(frame, direction)

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
        for ev in self._tracker.advance(self.recorder.right, min(upto, self.recorder.right.size)):
            self._on_audible(ev)

    def _turn_for(self, t_s: float) -> int:
        return turn_at(self._turn_at, t_s, self.sr)

    def _on_audible(self, ev: AudibleEvent) -> None:
        t_ns = int(ev.t_s * 1e9)
        turn = self._turn_for(ev.t_s)
        if ev.kind == "onset":
            self.onsets.append(ev.t_s)
            self.log.log(K.BOT_AUDIBLE_ONSET, turn, {}, t_ns=t_ns)
            if not self._bot_open:
                self._bot_open = True
                if self.scheduler is not None:
                    self.scheduler.bot_audio_started(ev.t_s)
        else:
            self.ends.append(ev.t_s)
            self.log.log(K.BOT_AUDIBLE_END, turn, {}, t_ns=t_ns)

    def _maybe_report_stop(self) -> None:
        """Tell the scheduler the reply is over: pipecat says the bot stopped, and all of it has played."""
        if not self._bot_open or self._pipecat_stopped_at is None:
            return
        if self._now_sample() < self._play_end + self._tracker.frame:
            return
        if self._tracker.audible and self._tracker.last_active_s is not None:
            last = self._tracker.last_active_s
        elif self.ends:
            last = self.ends[-1]
        else:
            return
        self._bot_open = False
        if self.scheduler is not None:
            self.scheduler.bot_audio_stopped(last)
