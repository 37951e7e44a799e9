"""WebRTC signalling, the routes that start and end sessions:

- `POST /api/offer`: an SDP offer (plus `request_data` with the page's choices) starts a session
  (`voicelab.web.session.Session`) and returns the answer; with a known `pc_id` it renegotiates. When
  `max_sessions` are running: HTTP 503 and a JSON message saying so.
- `PATCH /api/offer`: trickled ICE candidates for a session.
- `POST /api/session/close`: the page is going away (sent by `navigator.sendBeacon`).

Every body is read through `voicelab.web.requests` (JSON only, own origin, shallow).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from loguru import logger
from pipecat.transports.smallwebrtc.request_handler import (
    IceCandidate,
    SmallWebRTCPatchRequest,
    SmallWebRTCRequest,
)
from pydantic import BaseModel

from voicelab.web.errors import ApiError
from voicelab.web.options import resolve_config
from voicelab.web.registry import collect_ended_session
from voicelab.web.requests import BodyError, CandidatesBody, CloseBody, OfferBody, check_headers, parse_body
from voicelab.web.server_state import Server
from voicelab.web.session import Session

router = APIRouter()


async def read_body(request: Request, model: type[BaseModel], what: str, allowed_origins: tuple[str, ...]) -> Any:
    """The request body as `model` (JSON only, own origin, shallow: `voicelab.web.requests`), else ApiError."""
    try:
        check_headers(request.headers, request.url.scheme, what, allowed_origins)
        return parse_body(await request.body(), model, what)
    except BodyError as e:
        raise ApiError(e.status, e.message) from None


@router.post("/api/offer")
async def offer(request: Request, server: Server) -> JSONResponse:
    opts, registry, handler = server.opts, server.registry, server.handler
    body = await read_body(request, OfferBody, "offer", opts.allowed_origins)
    sdp, kind, pc_id = body.sdp, body.type, body.pc_id
    if not sdp.startswith("v=0") or "\nm=audio " not in sdp.replace("\r\n", "\n"):
        raise ApiError(400, "offer: field 'sdp' is not an SDP offer with an audio section (m=audio)")
    if pc_id is not None:  # renegotiation of a running session
        if pc_id not in registry.sessions:
            raise ApiError(404, "offer: no running session has this pc_id")
        req = SmallWebRTCRequest(sdp=sdp, type=kind, pc_id=pc_id, restart_pc=body.restart_pc)
        answer = await handler.handle_web_request(req, _ignore_connection)
        return JSONResponse(answer)
    cfg = resolve_config(opts, server.choices, body.request_data)
    if not registry.try_reserve():
        n = registry.max_sessions
        raise ApiError(503, f"the demo is busy: {n} of {n} sessions are in use; try again in a minute",
                       sessions=len(registry.sessions), max_sessions=n)
    connections: list[Any] = []

    async def capture(connection: Any) -> None:
        connections.append(connection)

    try:
        answer = await handler.handle_web_request(SmallWebRTCRequest(sdp=sdp, type=kind), capture)
    except Exception as e:
        registry.release()
        raise ApiError(400, f"offer: the SDP offer was refused ({type(e).__name__}: {str(e)[:200]})") from None
    if not connections or not answer:
        registry.release()
        raise ApiError(500, "offer: no WebRTC connection was made")
    session = Session(connections[0], cfg, server.pool, limits=opts.limits, on_finished=registry.remove,
                      pipeline_factory=server.pipeline_factory, runs_dir=opts.runs_dir)
    registry.add(session)
    session.start()
    if session.task is not None:
        session.task.add_done_callback(collect_ended_session)
    logger.info(f"session {session.pc_id} started ({len(registry.sessions)}/{registry.max_sessions})")
    return JSONResponse(answer)


@router.patch("/api/offer")
async def candidates(request: Request, server: Server) -> dict[str, Any]:
    body = await read_body(request, CandidatesBody, "candidates", server.opts.allowed_origins)
    pc_id = body.pc_id
    if pc_id not in server.registry.sessions:
        raise ApiError(404, "candidates: no running session has this pc_id")
    parsed = [IceCandidate(candidate=c.candidate, sdp_mid=c.sdp_mid or "0", sdp_mline_index=c.sdp_mline_index or 0)
              for c in body.candidates]
    try:
        await server.handler.handle_patch_request(SmallWebRTCPatchRequest(pc_id=pc_id, candidates=parsed))
    except Exception as e:
        raise ApiError(400, f"candidates: refused ({type(e).__name__}: {str(e)[:200]})") from None
    return {"added": len(parsed)}


@router.post("/api/session/close")
async def close_session(request: Request, server: Server) -> dict[str, Any]:
    body = await read_body(request, CloseBody, "close", server.opts.allowed_origins)
    session = server.registry.sessions.get(body.pc_id) if body.pc_id is not None else None
    if session is None:
        return {"closing": False}
    session.request_stop("the page was closed")
    return {"closing": True}


async def _ignore_connection(_connection: Any) -> None:
    """Renegotiation reuses the session's connection: there is nothing new to start."""
