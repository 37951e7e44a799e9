"""One live session of `voicelab serve`: one browser, one WebRTC connection, one pipeline worker.

The pipeline is `voicelab.web.pipeline.build_live_pipeline` (the `voicelab run` pipeline with SmallWebRTC at
both ends); its rows go to a `LiveCallLog` (`voicelab.web.calllog`), and the session's recording (when the
server keeps run folders) to `voicelab.web.recording`.

To the page, over the data channel the page opened (JSON objects with `"source": "voicelab"`): the
transcript, the live denoising canvas (`voicelab.web.live.CanvasView`, at most every `flush_ms`), and per
turn the server's FAR with its breakdown (`voicelab.web.live.live_latency`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loguru import logger
from pipecat.transports.base_transport import TransportParams
from pipecat.workers.runner import WorkerRunner

from voicelab.measure.events import Event, EventKind
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.frames import SnapshotFrame
from voicelab.pipeline.resources import ResourcePool
from voicelab.pipeline.transport.live_playout import LivePlayout
from voicelab.pipeline.transport.mic_recorder import MicRecorder
from voicelab.pipeline.transport.webrtc_output import PausableWebRTCTransport
from voicelab.web.calllog import LiveCallLog
from voicelab.web.live import CanvasView, live_latency
from voicelab.web.options import SessionLimits
from voicelab.web.page_observer import PageObserver
from voicelab.web.pipeline import PipelineFactory, build_live_pipeline
from voicelab.web.recording import LiveRecording, page_message

K = EventKind


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
                self.recording.watch_machine()  # the loop's lag and others' CPU while the session lasts
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
