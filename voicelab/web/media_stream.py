"""`voicelab serve` on a telephone line: the lab's live pipeline answering a media stream at `/media-stream`.

A carrier (Twilio Media Streams, or `voicelab call` playing one) opens a WebSocket, sends `connected` and
`start`, then 20 ms `media` messages of 8 kHz µ-law. The call runs the same pipeline as the browser demo
(`voicelab.web.pipeline.build_live_pipeline`: the lab's recogniser, turn rule, engine, gate, Piper), with
pipecat's `FastAPIWebsocketTransport` and `TwilioFrameSerializer` in place of the WebRTC transport
(`voicelab.pipeline.transport.media_stream_output`: µ-law in and out, `clear` on an interruption, the bot's
audio held on a pause).

Calls share `voicelab serve`'s `max_sessions` budget with nothing else: each holds one of `max_sessions`
phone slots of its own; over it the socket is closed with code 1013 (try again later).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, WebSocket
from loguru import logger
from pipecat.runner.utils import parse_telephony_websocket
from pipecat.workers.runner import WorkerRunner

from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.resources import ResourcePool
from voicelab.pipeline.transport.media_stream_output import media_stream_transport
from voicelab.web.calllog import LiveCallLog
from voicelab.web.live import CanvasView
from voicelab.web.page_observer import PageObserver
from voicelab.web.pipeline import build_live_pipeline

PATH = "/media-stream"
START_TIMEOUT_S = 10.0  # the carrier's `connected` + `start` must come within this
TRY_AGAIN_LATER = 1013  # WebSocket close code: the server is busy
POLICY_VIOLATION = 1008

router = APIRouter()


@dataclass
class PhoneSession:
    """What `build_live_pipeline` reads and fills on a session, for a phone call (no page to talk to)."""

    call_sid: str
    cfg: PipelineConfig
    pool: ResourcePool
    log: LiveCallLog = field(init=False)
    canvas: CanvasView = field(default_factory=CanvasView)
    page_observer: PageObserver = field(default_factory=lambda: PageObserver(lambda _f: None, lambda _t: None))
    engine: Any = None
    voice: Any = None
    mic: Any = None
    playout: Any = None

    def __post_init__(self) -> None:
        self.log = LiveCallLog(self.call_sid)


@dataclass
class PhoneLines:
    """Calls on the line now, against the server's `max_sessions`."""

    max_calls: int
    active: set[str] = field(default_factory=set)


def _lines(websocket: WebSocket) -> PhoneLines:
    state = websocket.app.state
    if not hasattr(state, "phone_lines"):
        state.phone_lines = PhoneLines(state.server.opts.max_sessions)
    return state.phone_lines  # type: ignore[no-any-return]


@router.websocket(PATH)
async def media_stream(websocket: WebSocket) -> None:
    """One phone call: the carrier's handshake, then the live pipeline until the carrier hangs up."""
    server = websocket.app.state.server
    lines = _lines(websocket)
    await websocket.accept()
    if len(lines.active) >= lines.max_calls:
        await websocket.close(TRY_AGAIN_LATER, f"busy: {lines.max_calls} calls on the line")
        return
    try:
        kind, data = await asyncio.wait_for(parse_telephony_websocket(websocket), START_TIMEOUT_S)
    except (TimeoutError, ValueError) as e:
        with contextlib.suppress(Exception):
            await websocket.close(POLICY_VIOLATION, f"no media-stream start message ({e or 'timeout'})")
        return
    if kind != "twilio" or not data.get("stream_id"):
        await websocket.close(POLICY_VIOLATION, f"expected a Twilio-format start message, got {kind}")
        return
    call_sid = str(data.get("call_id") or data["stream_id"])
    lines.active.add(call_sid)
    worker = None
    try:
        transport = media_stream_transport(websocket, str(data["stream_id"]), call_sid)
        session = PhoneSession(call_sid, server.opts.pipeline, server.pool)
        worker = await (server.pipeline_factory or build_live_pipeline)(session, transport)

        @transport.event_handler("on_client_disconnected")
        async def _hung_up(_t: Any, _ws: Any) -> None:
            await worker.cancel(reason="the carrier hung up")

        runner = WorkerRunner(handle_sigint=False)
        await runner.add_workers(worker)
        await runner.run()
    except Exception as e:  # one call failing leaves the server up
        logger.error(f"media stream {call_sid} failed: {type(e).__name__}: {e}")
        with contextlib.suppress(Exception):
            await websocket.close(1011, f"pipeline failed: {type(e).__name__}")
    finally:
        lines.active.discard(call_sid)
