"""The web app of `voicelab serve`: the demo page, WebRTC signalling, and the limits that keep it safe.

Routes (`voicelab.web.routes_page`, `routes_info`, `routes_signalling`, reading `server_state.ServerState`):
- `GET /` and `GET /static/<file>`: the page. Only the regular files found in the static folder when the
  app is created are served, by exact name; any other path is a 404 (nothing outside that folder).
- `GET /api/options`: the choices the page offers (engine, sampler, gate policy, VAD, STT) and defaults.
- `POST /api/offer`: an SDP offer (plus `request_data` with the page's choices) starts a session
  (`voicelab.web.session.Session`) and returns the answer; with a known `pc_id` it renegotiates. When
  `max_sessions` are running: HTTP 503 and a JSON message saying so.
- `PATCH /api/offer`: trickled ICE candidates for a session.
- `POST /api/session/close`: the page is going away (sent by `navigator.sendBeacon`).
- `WS /media-stream`: a telephone media stream (Twilio's format, 8 kHz µ-law) answered by the same pipeline
  (`voicelab.web.media_stream`); `voicelab call ws://HOST:PORT/media-stream FIXTURE` measures it from outside.
- `GET /api/status`: `{"sessions": n, ...}`, how many sessions hold a pipeline now, and the number of
  asyncio tasks in the server (a leak check: it returns to its idle value when sessions end).
Every request body is bounded (`max_body_bytes`, HTTP 413, `voicelab.web.middleware`), errors are JSON
`{"error": "..."}`, and every response carries a content security policy that only allows this origin (the
page uses no CDN).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from pipecat.transports.smallwebrtc.request_handler import SmallWebRTCRequestHandler

from voicelab.pipeline.resources import ResourcePool
from voicelab.web import media_stream, routes_info, routes_page, routes_signalling
from voicelab.web.errors import ApiError, api_error_response
from voicelab.web.ice import allow_loopback_ice, has_external_ipv4
from voicelab.web.middleware import LimitsMiddleware
from voicelab.web.options import ServeOptions, option_choices
from voicelab.web.pipeline import PipelineFactory
from voicelab.web.registry import SessionRegistry, freeze_startup_heap
from voicelab.web.routes_page import static_files
from voicelab.web.server_state import ServerState


def create_app(options: ServeOptions | None = None, *, pool: ResourcePool | None = None,
               pipeline_factory: PipelineFactory | None = None) -> FastAPI:
    """The FastAPI app for `options`. `pool` shares loaded engines (the serve command preloads one);
    `pipeline_factory(session, transport) -> PipelineWorker` replaces the voicelab pipeline (tests)."""
    opts = options or ServeOptions()
    if opts.loopback_ice or (opts.loopback_ice is None and not has_external_ipv4()):
        allow_loopback_ice()
    server = ServerState(opts=opts, choices=option_choices(opts), files=static_files(opts.static_dir),
                         registry=SessionRegistry(opts.max_sessions), handler=SmallWebRTCRequestHandler(),
                         pool=pool or ResourcePool(), owns_pool=pool is None, pipeline_factory=pipeline_factory)
    app = FastAPI(title="voicelab live", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.server = server
    app.state.registry = server.registry
    app.state.options = opts
    app.add_exception_handler(ApiError, api_error_response)  # type: ignore[arg-type]
    for router in (routes_page.router, routes_info.router, routes_signalling.router, media_stream.router):
        app.include_router(router)
    app.add_middleware(LimitsMiddleware, max_body_bytes=opts.max_body_bytes)
    return app


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Freeze the startup heap (`voicelab.web.registry`); on shutdown stop every session, close the WebRTC
    handler and the pool the app made."""
    server: ServerState = app.state.server
    freeze_startup_heap()
    try:
        yield
    finally:
        await server.registry.stop_all("the server is shutting down")
        with contextlib.suppress(Exception):
            await server.handler.close()
        if server.owns_pool:
            server.pool.close()
        gc.unfreeze()  # the process may go on (tests): its objects are collectable again
