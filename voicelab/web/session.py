"""One live session of `voicelab serve`: one browser, one WebRTC connection, one pipeline worker.

The pipeline is the one `voicelab run` plays fixtures through (`voicelab.pipeline.run_call`), built from
the same processors and the same `PipelineConfig`, with pipecat's SmallWebRTC transport at both ends in
place of the fixture player and the recording speaker:

    browser mic ─► SmallWebRTC input ─► STT ─► user aggregator (VAD + turn) ─► engine LLM ─► gate
        ─► Piper TTS ─► SmallWebRTC output ─► LivePlayout ─► assistant aggregator

`LivePlayout` does for the browser what the recording speaker does for a recorded call: the WebRTC output
hands each audio frame on once its last 10 ms has left for the browser, so the time it passes gives when
the bot's audio went out; from that it logs `playout_*` (per chunk and word, from the TTS's marks) and
`bot_audible_onset` / `bot_audible_end` (the onset rule of DESIGN.md §4, `voicelab.measure.playout.AudibleTracker`).

A live call has no fixture truth: `LiveCallLog` numbers the caller's turns itself (a turn starts at the
first VAD start after the previous turn ended), so every row of a reply carries the turn it answers.

To the page, over the data channel the page opened (JSON objects with `"source": "voicelab"`): the
transcript, the live denoising canvas (`voicelab.web.live.CanvasView`, at most every `flush_ms`), and per
turn the server's FAR with its breakdown (`voicelab.web.live.live_latency`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger
from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    Frame,
    InterimTranscriptionFrame,
    InterruptionFrame,
    OutputAudioRawFrame,
    StartFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.llm_service import LLMService
from pipecat.services.stt_service import STTService
from pipecat.transports.base_transport import TransportParams
from pipecat.workers.runner import WorkerRunner

from engines.decision.model import DecisionModel, load_decision_model
from engines.protocol import EngineLike
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import Event, EventKind
from voicelab.measure.playout import PlayoutLedger
from voicelab.measure.recording import Track
from voicelab.pipeline.assembly import build_core, stt_service, turn_vad
from voicelab.pipeline.config import STREAMED_STT, PipelineConfig
from voicelab.pipeline.frames import PlayoutMarkFrame, PlayoutPauseFrame, PlayoutResumeFrame, SnapshotFrame
from voicelab.pipeline.observers import EventObserver
from voicelab.pipeline.processors.watchdog import Limits, WatchedEngine
from voicelab.pipeline.resources import open_engine_for, warm_up_voice
from voicelab.pipeline.services.llm_service import EngineLLMService
from voicelab.pipeline.services.shared_voice import SerializedVoice
from voicelab.pipeline.services.stt_whisper import SharedRecognizer, load_recognizer
from voicelab.pipeline.services.tts_piper import PackagedPiperTTS, load_voice
from voicelab.pipeline.turns.factory import turn_strategies
from voicelab.pipeline.turns.turn_models import TurnModels
from voicelab.web.live import CanvasView, live_latency
from voicelab.web.live_output import PausableWebRTCTransport
from voicelab.web.recording import LiveRecording, MicRecorder, page_message

K = EventKind


# ---- turn numbering without fixture truth ----------------------------------------------------------------

class LiveCallLog(CallLog):
    """A `CallLog` for a live caller: turn n is the n-th stretch of caller speech that ends in a turn end.

    The turn starts at the VAD's start (minus its `start_secs`, the speech it waited for) and stays open
    until pipecat decides the user's turn ended, so a pause inside a sentence does not start a new turn.
    No caller ground-truth rows are logged: there is no truth to log.
    """

    def __init__(self, call_id: str, on_event: Callable[[Event], None] | None = None) -> None:
        super().__init__(call_id, None, on_event=on_event)
        self.turn_starts: list[int] = []  # call ns of each caller turn's estimated speech start
        self._turn_open = False

    def log(self, kind: EventKind | str, turn: int | None = None, payload: dict[str, Any] | None = None,
            t_ns: int | None = None) -> Event:
        if str(kind) == K.VAD_START:
            now = self.now_ns() if t_ns is None else t_ns
            if not self._turn_open:
                start_secs = float((payload or {}).get("start_secs", 0.0) or 0.0)
                self.turn_starts.append(max(0, now - int(start_secs * 1e9)))
                self._turn_open = True
            turn = self.caller_turn_at(now)
        return super().log(kind, turn, payload, t_ns)

    def caller_turn_at(self, t_ns: int) -> int:
        turn = -1
        for i, start in enumerate(self.turn_starts):
            if start <= t_ns:
                turn = i
        return turn

    def on_turn_end(self) -> int:
        turn = super().on_turn_end()
        self._turn_open = False
        return turn


# ---- when the bot's audio left for the browser -----------------------------------------------------------

class LivePlayout(FrameProcessor):
    """Placed right after the WebRTC output transport; logs playout and the bot's acoustic onsets.

    The output transport pushes each audio frame on when its write returned, i.e. when the frame's last
    10 ms chunk was taken by the WebRTC track (which sends 10 ms every 10 ms), so the frame went out over
    the 10 ms ticks before. Marks come through in order with the audio, after the audio before them.
    The onset detector runs `lag_ms` behind the clock, so a frame placed back in time is never missed.

    Pauses (`PausableWebRTCOutput`): the pause frame overtakes the frame the track is still sending (at most
    one write), so the pause is logged once that frame had time to come through (`lag_ms`) or at the resume
    or interruption that follows, at the end of the audio sent: the sample where the speaker stopped.
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
        self._paused = False
        self._pause: tuple[int, int, str] | None = None  # (call ns it arrived, play ns then, reason), unlogged

    def _now_sample(self) -> int:
        return self.log.now_ns() * self.sr // 1_000_000_000

    def _play_ns(self) -> int:
        return max(self._play_end * 1_000_000_000 // self.sr, self.log.now_ns())

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
                if not self._paused:
                    self._paused = True
                    self._pause = (self.log.now_ns(), self._play_ns(), frame.reason)
            elif isinstance(frame, PlayoutResumeFrame):
                if self._paused:  # the held audio continues with its next sample
                    self._log_pause()
                    self._paused = False
                    self.ledger.resumed(self._play_ns(), frame.reason)
            elif isinstance(frame, InterruptionFrame):
                self._log_pause()
                self._paused = False
                self.ledger.interrupted(self._play_ns())  # audio already sent still plays in the browser
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
        self._log_pause()
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

    def _log_pause(self) -> None:
        """Log the pending pause where the audio sent before it ends (the class doc)."""
        if self._pause is not None:
            _, at_ns, reason = self._pause
            self._pause = None
            self.ledger.paused(max(at_ns, self._play_end * 1_000_000_000 // self.sr), reason)

    def _words(self, chunk_id: int, words_started: int) -> None:
        if self._on_words is not None:
            self._on_words(chunk_id, words_started)

    # -- acoustic onset / offset --

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(self._tick_s)
            if self._pause is not None and self.log.now_ns() - self._pause[0] >= self._lag * 1_000_000_000 // self.sr:
                self._log_pause()
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


# ---- what the page needs from frames that no event row carries ----------------------------------------

class PageObserver(BaseObserver):
    """Hands the session each engine snapshot (with its per-position pieces) and each interim transcript."""

    def __init__(self, on_snapshot: Callable[[SnapshotFrame], None], on_interim: Callable[[str], None]) -> None:
        super().__init__()
        self._on_snapshot = on_snapshot
        self._on_interim = on_interim

    async def on_push_frame(self, data: FramePushed) -> None:
        f = data.frame
        if data.direction != FrameDirection.DOWNSTREAM:
            return
        if isinstance(f, SnapshotFrame) and isinstance(data.source, LLMService):
            self._on_snapshot(f)
        elif isinstance(f, InterimTranscriptionFrame) and isinstance(data.source, STTService):
            self._on_interim(f.text)


# ---- shared resources ----------------------------------------------------------------------------------

class ResourcePool:
    """Engines (one per engine and sampler), the Piper voice and the VAD and smart-turn models: loaded once,
    shared by all sessions.

    An engine runs its steps in its own single worker thread, so sessions sharing it take turns per step.
    Pocketsphinx decoders are per session (a decoder holds one utterance at a time); so are the VAD and
    smart-turn analyzers, around shared model sessions (voicelab.pipeline.turns.turn_models).
    """

    def __init__(self) -> None:
        self._engines: dict[tuple[str, str | None], EngineLike] = {}
        self._voice: Any = None
        self._voice_lock = threading.Lock()
        # the streamed recognizer (Whisper or Moonshine), shared by sessions (passes take turns)
        self.recognizer: SharedRecognizer | None = None
        self.decision: DecisionModel | None = None  # the turn-end decision model (one forward pass per question)
        self.turn_models = TurnModels()  # Silero's, smart-turn's ONNX sessions and the barge-in judge
        self._lock = asyncio.Lock()

    def preload(self, cfg: PipelineConfig) -> None:
        """Load what `cfg` needs now, in this thread (the serve command does it before listening)."""
        key = (cfg.engine, cfg.sampler)
        if key not in self._engines:
            engine = open_engine_for(cfg)
            engine.warm_up()  # first-use costs (torch kernels) here, not in a caller's first reply
            self._engines[key] = engine
        if cfg.stt in STREAMED_STT and (self.recognizer is None or self.recognizer.kind != cfg.stt):
            self.recognizer = load_recognizer(cfg.stt, lm_weight=cfg.stt_lm)
        if cfg.turn_timeout()[0] == "decide" and self.decision is None:
            self.decision = load_decision_model()
        self.turn_models.preload(cfg, self.decision)
        if self._voice is None:
            voice = load_voice()
            warm_up_voice(voice)  # onnxruntime's first run, likewise
            # pipecat's LLM service imports its OpenAI adapter (about a second) the first time one is
            # made: pay that here too, not on the event loop while a browser is connecting
            EngineLLMService(self._engines[key], CallLog("warm-up"))
            self._voice = voice

    async def get(self, cfg: PipelineConfig) -> tuple[Any, Any]:
        """(engine, voice) for `cfg`, loading them in a worker thread the first time."""
        async with self._lock:
            if (cfg.engine, cfg.sampler) not in self._engines or self._voice is None:
                await asyncio.to_thread(self.preload, cfg)
            return self._engines[(cfg.engine, cfg.sampler)], SerializedVoice(self._voice, self._voice_lock)

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()


# ---- the pipeline --------------------------------------------------------------------------------------

PipelineFactory = Callable[["Session", Any], Awaitable[Any]]


async def build_live_pipeline(session: Session, transport: Any) -> Any:
    """The `voicelab run` pipeline on a WebRTC transport; returns the `PipelineWorker` (not started).

    Mirrors `voicelab.pipeline.run_call` processor for processor; only the two ends differ. The engine and
    the Piper voice come from the session's `ResourcePool` (loaded once, shared).
    """
    cfg, log = session.cfg, session.log
    session.engine, session.voice = await session.pool.get(cfg)
    sr = cfg.sample_rate
    stt = stt_service(cfg, log, recognizer=session.pool.recognizer, interim=True)  # pocketsphinx: a decoder of its own
    # the VAD and smart-turn analyzers share the pool's model sessions: a model per session cost ~40 MB that
    # stayed until a full garbage collection freed the dead pipeline (issue 12); one not opened yet opens in
    # a thread, so other sessions' audio keeps flowing meanwhile
    models = session.pool.turn_models
    vad, strategies = await asyncio.to_thread(
        lambda: (turn_vad(cfg, stt, models), turn_strategies(cfg, decision=session.pool.decision, log=log,
                                                            models=models)))
    # the watchdogs of `run_call` (voicelab.pipeline.processors.watchdog): a stalled engine or TTS ends the reply, not
    # the session
    limits = Limits()
    core = build_core(cfg, log, engine=WatchedEngine(session.engine, log, limits), voice=session.voice, vad=vad,
                      strategies=strategies)
    if isinstance(core.tts, PackagedPiperTTS):
        core.tts.step_limit_s = limits.tts_chunk_s
    playout = LivePlayout(log, sr, on_words=session.canvas.spoken_words)
    session.mic, session.playout = MicRecorder(log, sr), playout  # the two channels of the session's recording
    pipeline = Pipeline([transport.input(), session.mic, stt, *core.middle, transport.output(), playout, core.asst_agg])
    return PipelineWorker(
        pipeline, params=PipelineParams(audio_in_sample_rate=sr, audio_out_sample_rate=sr),
        observers=[EventObserver(log), session.page_observer], idle_timeout_secs=None, enable_rtvi=False,
        enable_turn_tracking=False,
    )


# ---- the session ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SessionLimits:
    connect_timeout_s: float = 30.0  # the browser must connect (ICE + DTLS) within this
    idle_timeout_s: float = 15.0  # after the page's last message (it sends a keepalive every 2 s)
    max_duration_s: float = 3600.0
    flush_ms: float = 40.0  # canvas messages at most this often
    check_s: float = 0.5  # watchdog period
    hard_stop_s: float = 10.0  # a cancelled pipeline still running after this: cancel the session's task


class Session:
    """One browser on one WebRTC connection running one pipeline worker (see the module doc).

    `start()` returns at once; the task builds the pipeline, runs it until the browser goes (or `stop`),
    then closes the connection and calls `on_finished(self)` exactly once.
    """

    def __init__(self, connection: Any, cfg: PipelineConfig, pool: ResourcePool, *,
                 limits: SessionLimits | None = None, on_finished: Callable[[Session], None] | None = None,
                 pipeline_factory: PipelineFactory | None = None, runs_dir: Path | None = None) -> None:
        self.connection = connection
        self.pc_id: str = connection.pc_id
        self.cfg = cfg
        self.pool = pool
        self.limits = limits or SessionLimits()
        self._on_finished = on_finished
        self._factory = pipeline_factory or build_live_pipeline
        self.log = LiveCallLog(self.pc_id, on_event=self._on_event)
        self.canvas = CanvasView()
        self.page_observer = PageObserver(self._on_snapshot, self._on_interim)
        self.engine: Any = None
        self.voice: Any = None
        self.state = "new"  # new, loading, waiting, connected, closed
        self.stop_reason: str | None = None
        self._stop_requested_at: float | None = None
        self.created = time.monotonic()
        self.last_seen: float | None = None  # monotonic time of the page's last message (idle check from then)
        self._worker: Any = None
        self._task: asyncio.Task[None] | None = None
        self._helpers: list[asyncio.Task[Any]] = []
        self._chunk_text: dict[int, tuple[int, str]] = {}
        self._reported: set[int] = set()
        self.messages_sent = 0
        self.runs_dir = runs_dir
        self.recording: LiveRecording | None = None  # the session's run folder (when runs_dir is set)
        self.mic: MicRecorder | None = None
        self.playout: LivePlayout | None = None

    # -- lifecycle --

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"session-{self.pc_id}")

    @property
    def task(self) -> asyncio.Task[None] | None:
        return self._task

    @property
    def done(self) -> bool:
        return self._task is not None and self._task.done()

    def request_stop(self, reason: str) -> None:
        """Ask the session to end (from any task or event handler); returns at once.

        The pipeline is cancelled (a CancelFrame); if it has not wound down `hard_stop_s` later, the
        session's task itself is cancelled (asked again by the watchdog).
        """
        if self.state == "closed" or self._task is None or self._task.done():
            return
        now = time.monotonic()
        if self._stop_requested_at is None:
            self._stop_requested_at = now
            self.stop_reason = self.stop_reason or reason
            if self._worker is not None:
                self._spawn(self._worker.cancel(reason=reason), "cancel")
                return
        elif self._worker is not None and now - self._stop_requested_at < self.limits.hard_stop_s:
            return
        self._task.cancel()

    async def stop(self, reason: str, timeout_s: float = 10.0) -> None:
        """End the session and wait until it is torn down."""
        self.request_stop(reason)
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._task), timeout_s)
            if not self._task.done():  # the pipeline did not wind down in time: cut it
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task

    def _spawn(self, coro: Any, name: str) -> None:
        t = asyncio.get_running_loop().create_task(coro, name=f"session-{self.pc_id}-{name}")
        self._helpers.append(t)
        self._helpers = [h for h in self._helpers if not h.done()]

    async def _run(self) -> None:
        try:
            self.state = "loading"
            # 10 ms writes: a pause holds all but the one 10 ms chunk the track is sending
            transport = PausableWebRTCTransport(
                self.connection,
                TransportParams(audio_in_enabled=True, audio_out_enabled=True, audio_in_passthrough=True,
                                audio_out_end_silence_secs=0, audio_out_10ms_chunks=1),
            )
            self._register(transport)
            self._spawn(self._watchdog(), "watchdog")
            self._spawn(self._flusher(), "flusher")
            self.send({"type": "status", "state": "loading", "detail": "loading the pipeline…"})
            if self.runs_dir is not None:
                self.recording = LiveRecording.create(self.runs_dir, self.cfg, self.pc_id)
                self.log.writer = self.recording.writer  # events.jsonl row by row, from the first
            self._worker = await self._factory(self, transport)
            if self.recording is not None:
                self.recording.set_engine(self.engine)
            if self.stop_reason is not None:
                return
            self.state = "waiting"
            runner = WorkerRunner(handle_sigint=False)
            await runner.add_workers(self._worker)
            await runner.run()
        except asyncio.CancelledError:
            pass
        except Exception as e:  # a session that fails tells its page and ends; the server goes on
            logger.exception(f"session {self.pc_id} failed")
            self.stop_reason = self.stop_reason or f"error: {type(e).__name__}: {e}"
            self.send({"type": "error", "message": f"session failed: {type(e).__name__}: {e}"})
        finally:
            await self._teardown()

    async def _teardown(self) -> None:
        self.state = "closed"
        try:
            for t in self._helpers:
                t.cancel()
            for t in self._helpers:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
            self._helpers.clear()
            pc = getattr(self.connection, "pc", None)
            if pc is None or getattr(pc, "connectionState", "closed") != "closed":
                with contextlib.suppress(Exception):  # pipecat closes it when the pipeline ends; this is
                    await self.connection.disconnect()  # for sessions that never got that far
            if self.recording is not None:  # however the session ended: seal its run folder
                if self.playout is not None:
                    self.playout.finish()
                await self.recording.close(self.log, self.mic, None if self.playout is None else self.playout.track,
                                           self.stop_reason)
        finally:  # even if the teardown itself is cancelled, the registry must let the session go
            if self._on_finished is not None:
                cb, self._on_finished = self._on_finished, None
                cb(self)

    def _register(self, transport: Any) -> None:
        @transport.event_handler("on_client_connected")
        async def _connected(_t: Any, _conn: Any) -> None:
            self.state = "connected"
            self.send({"type": "status", "state": "ready", "detail": "ready — speak",
                       "options": self.describe()})

        @transport.event_handler("on_client_disconnected")
        async def _disconnected(_t: Any, _conn: Any) -> None:
            self.request_stop("the browser disconnected")

        @transport.event_handler("on_app_message")
        async def _message(_t: Any, message: Any, _sender: Any) -> None:
            self.last_seen = time.monotonic()
            if isinstance(message, dict) and message.get("type") == "bye":
                self.request_stop("the page said goodbye")
            elif isinstance(message, dict) and message.get("type") == "hello" and self.recording is not None:
                self.recording.set_user_agent(message.get("agent"))
            elif isinstance(message, dict):
                page_message(message, self.log, self.send)  # the page's own figures and clock pings

    async def _watchdog(self) -> None:
        lim = self.limits
        while True:
            await asyncio.sleep(lim.check_s)
            now = time.monotonic()
            pc_state = getattr(getattr(self.connection, "pc", None), "connectionState", None)
            if pc_state in ("failed", "closed"):
                self.request_stop(f"the WebRTC connection is {pc_state}")
            elif self.state != "connected" and now - self.created > lim.connect_timeout_s:
                self.request_stop(f"the browser did not connect within {lim.connect_timeout_s:g} s")
            elif self.last_seen is not None and now - self.last_seen > lim.idle_timeout_s:
                self.request_stop(f"no word from the page for {lim.idle_timeout_s:g} s")
            elif now - self.created > lim.max_duration_s:
                self.request_stop(f"session time limit ({lim.max_duration_s:g} s) reached")

    async def _flusher(self) -> None:
        while True:
            await asyncio.sleep(self.limits.flush_ms / 1000.0)
            msg = self.canvas.message()
            if msg is not None:
                self.send(msg)

    def describe(self) -> dict[str, Any]:
        c = self.cfg
        return {"engine": c.engine_label(), "sampler": c.sampler or "default", "policy": c.policy,
                "vad": c.vad, "stt": c.stt, "turn": c.turn, "barge_in": c.barge_in}

    # -- to the page --

    def send(self, msg: dict[str, Any]) -> None:
        """One JSON message to the page over its data channel (dropped if the channel is gone)."""
        if self.state == "closed":
            return
        msg = {"source": "voicelab", **msg}
        try:
            self.connection.send_app_message(msg)
            self.messages_sent += 1
        except Exception as e:  # a closing channel must not break the pipeline's logging
            logger.debug(f"session {self.pc_id}: message dropped: {e}")

    def _on_snapshot(self, f: SnapshotFrame) -> None:
        if f.snapshot is not None:
            self.canvas.snapshot(f.snapshot, f.gen_id, f.turn)

    def _on_interim(self, text: str) -> None:
        turn = self.log.caller_turn_at(self.log.now_ns())
        self.send({"type": "user", "turn": turn, "text": text, "final": False})

    def _on_event(self, e: Event) -> None:
        """Every row the pipeline logs passes here (synchronously): turn it into page messages."""
        p = e.payload
        k = e.kind
        if k == K.ENGINE_SNAPSHOT:
            self.canvas.on_step(int(p.get("gen_id", 0)), e.turn, int(p.get("step", 0)))
        elif k == K.ENGINE_DONE:
            self.canvas.on_done(int(p.get("gen_id", 0)))
        elif k == K.GATE_COMMIT:
            cid = int(p["chunk_id"])
            self._chunk_text[cid] = (e.turn, str(p["text"]))
            self.canvas.commit(cid, int(p["start_char"]), int(p["end_char"]), str(p["text"]))
            self.send({"type": "bot", "turn": e.turn, "chunk_id": cid, "text": p["text"], "state": "committed"})
        elif k == K.PLAYOUT_START:
            cid = int(p["chunk_id"])
            turn, text = self._chunk_text.get(cid, (e.turn, str(p.get("text", ""))))
            self.send({"type": "bot", "turn": turn, "chunk_id": cid, "text": text, "state": "spoken"})
        elif k == K.VAD_START:
            self.send({"type": "vad", "speaking": True, "turn": e.turn})
        elif k == K.VAD_STOP:
            self.send({"type": "vad", "speaking": False, "turn": e.turn})
        elif k == K.STT_FINAL:
            self.send({"type": "user", "turn": e.turn, "text": p.get("text", ""), "final": True})
        elif k == K.TURN_END:
            self.send({"type": "turn", "turn": e.turn})
        elif k == K.CONTEXT_UPDATE and p.get("interrupted"):
            self.send({"type": "interrupted", "turn": e.turn, "kept": p.get("content", "")})
        elif k == K.TOOL_CALL:
            self.send({"type": "tool", "turn": e.turn, "name": p.get("name"), "raw": p.get("raw")})
        elif k == K.BOT_AUDIBLE_ONSET and e.turn >= 0 and e.turn not in self._reported:
            lat = live_latency(self.log.events, e.turn)
            if lat is not None:
                self._reported.add(e.turn)
                self.send(lat)
        elif k == K.ERROR:
            self.send({"type": "notice", "turn": e.turn, "message": f"{p.get('where')}: {p.get('message')}"})
