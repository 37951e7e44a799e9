"""The server's state that the routes read: its options, the page's choices, the static files, the running
sessions, the WebRTC request handler and the shared resources. `create_app` puts one on `app.state.server`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from pipecat.transports.smallwebrtc.request_handler import SmallWebRTCRequestHandler

from voicelab.pipeline.resources import ResourcePool
from voicelab.web.options import ServeOptions
from voicelab.web.pipeline import PipelineFactory
from voicelab.web.registry import SessionRegistry


@dataclass
class ServerState:
    opts: ServeOptions
    choices: dict[str, list[str]]  # what the page may choose (voicelab.web.options.option_choices)
    files: dict[str, Path]  # the static files served, by name (voicelab.web.routes_page.static_files)
    registry: SessionRegistry
    handler: SmallWebRTCRequestHandler
    pool: ResourcePool
    owns_pool: bool  # the app made the pool: it closes it on shutdown
    pipeline_factory: PipelineFactory | None = None  # None: the voicelab pipeline


async def server_state(request: Request) -> ServerState:
    """The app's `ServerState` (a coroutine, so FastAPI runs it on the event loop, not in a thread)."""
    return request.app.state.server


Server = Annotated[ServerState, Depends(server_state)]
