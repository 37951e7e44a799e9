"""The web app of `voicelab serve`: the demo page, WebRTC signalling, and the limits that keep it safe.

Routes:
- `GET /` and `GET /static/<file>`: the page. Only the regular files found in the static folder when the
  app is created are served, by exact name; any other path is a 404 (nothing outside that folder).
- `GET /api/options`: the choices the page offers (engine, sampler, gate policy, VAD, STT) and defaults.
- `POST /api/offer`: an SDP offer (plus `request_data` with the page's choices) starts a session
  (`voicelab.web.session.Session`) and returns the answer; with a known `pc_id` it renegotiates. When
  `max_sessions` are running: HTTP 503 and a JSON message saying so.
- `PATCH /api/offer`: trickled ICE candidates for a session.
- `POST /api/session/close`: the page is going away (sent by `navigator.sendBeacon`).
- `GET /api/status`: `{"sessions": n, ...}`, how many sessions hold a pipeline now, and the number of
  asyncio tasks in the server (a leak check: it returns to its idle value when sessions end).
Every request body is bounded (`max_body_bytes`, HTTP 413), errors are JSON `{"error": "..."}`, and every
response carries a content security policy that only allows this origin (the page uses no CDN).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import mimetypes
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from loguru import logger
from pydantic import BaseModel

from engines.registry import SAMPLER_NAMES, shipped_engines
from voicelab.gate import GateConfigError
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.web.requests import BodyError, CandidatesBody, CloseBody, OfferBody, check_headers, parse_body
from voicelab.web.session import PipelineFactory, ResourcePool, Session, SessionLimits

STATIC_DIR = Path(__file__).parent / "static"
POLICY_CHOICES = ("pinned", "prefix", "final", "block", "stable:2", "stable:3", "pinned:stable:2", "pinned:block")
VAD_CHOICES = ("silero", "webrtc")
STT_CHOICES = ("whisper", "moonshine", "pocketsphinx")  # "transcript" reads a fixture's ground truth; a live caller has none
OPTION_KEYS = ("engine", "sampler", "policy", "vad", "stt")
MAX_CANDIDATES = 64
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' blob:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'")


class ServeError(ValueError):
    """A bad `voicelab serve` setting; the message names the field."""


@dataclass(frozen=True)
class ServeOptions:
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)  # the defaults the page starts from
    max_sessions: int = 2
    max_body_bytes: int = 64 * 1024  # an SDP offer with every candidate is a few kB
    limits: SessionLimits = field(default_factory=SessionLimits)
    static_dir: Path = STATIC_DIR
    loopback_ice: bool | None = None  # offer 127.0.0.1 as an ICE candidate; None: only if it is all we have
    runs_dir: Path | None = None  # each session writes its run folder under it (None: sessions leave none)
    allowed_origins: tuple[str, ...] = ()  # browser origins admitted besides the server's own ("*": any)

    def __post_init__(self) -> None:
        if self.max_sessions < 1:
            raise ServeError(f"max_sessions: must be at least 1, got {self.max_sessions}")
        if self.max_body_bytes < 1024:
            raise ServeError(f"max_body_bytes: must be at least 1024, got {self.max_body_bytes}")
        if self.pipeline.stt not in STT_CHOICES:
            raise ServeError(f"stt: '{self.pipeline.stt}' needs a fixture's transcript; live calls use "
                             f"{', '.join(STT_CHOICES)}")
        if not self.static_dir.is_dir():
            raise ServeError(f"{self.static_dir}: static folder not found")


class ApiError(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


# ---- choices ---------------------------------------------------------------------------------------------

def engine_choices(default: str) -> list[str]:
    """The shipped tiny engines that are present, plus the serve default (which may be a folder)."""
    out = shipped_engines()
    if default not in out:
        out.insert(0, default)
    return out


def option_choices(opts: ServeOptions) -> dict[str, list[str]]:
    p = opts.pipeline
    policies = list(POLICY_CHOICES) if p.policy in POLICY_CHOICES else [p.policy, *POLICY_CHOICES]
    return {"engine": engine_choices(p.engine), "sampler": ["default", *SAMPLER_NAMES], "policy": policies,
            "vad": list(VAD_CHOICES), "stt": list(STT_CHOICES)}


def option_defaults(opts: ServeOptions) -> dict[str, str]:
    p = opts.pipeline
    return {"engine": p.engine, "sampler": p.sampler or "default", "policy": p.policy, "vad": p.vad, "stt": p.stt}


def resolve_config(opts: ServeOptions, choices: dict[str, list[str]], request_data: Any) -> PipelineConfig:
    """The serve defaults with the page's choices applied; only listed values are accepted."""
    if request_data is None:
        return opts.pipeline
    if not isinstance(request_data, dict):
        raise ApiError(400, "offer: field 'request_data' must be an object")
    changes: dict[str, Any] = {}
    for key, value in request_data.items():
        if key not in OPTION_KEYS:
            raise ApiError(400, f"offer: field 'request_data.{key}' is not one of {', '.join(OPTION_KEYS)}")
        if not isinstance(value, str) or value not in choices[key]:
            raise ApiError(400, f"offer: field 'request_data.{key}': {str(value)[:40]!r} is not offered "
                                f"(one of {', '.join(choices[key])})")
        changes[key] = None if key == "sampler" and value == "default" else value
    try:
        return replace(opts.pipeline, **changes)
    except (PipelineConfigError, GateConfigError) as e:
        raise ApiError(400, f"offer: {e}") from None


# ---- loopback-only hosts -------------------------------------------------------------------------------

def has_external_ipv4() -> bool:
    import ifaddr

    return any(isinstance(ip.ip, str) and not ip.ip.startswith("127.")
               for adapter in ifaddr.get_adapters() for ip in adapter.ips)


def allow_loopback_ice() -> None:
    """Let aiortc offer 127.0.0.1 as a host candidate.

    aioice gathers host candidates from every interface address except 127.0.0.1, so on a machine whose
    only interface is loopback (a sandbox, a CI container) the server offers no candidate at all and ICE
    cannot connect, even to a browser on the same machine (which itself needs
    --allow-loopback-in-peer-connection). Only used when no other IPv4 address exists, or when asked.
    """
    import aioice.ice as ice

    if getattr(ice.get_host_addresses, "_voicelab_loopback", False):
        return
    original = ice.get_host_addresses

    def with_loopback(use_ipv4: bool, use_ipv6: bool) -> list[str]:
        addresses = original(use_ipv4, use_ipv6)
        if use_ipv4 and "127.0.0.1" not in addresses:
            addresses.append("127.0.0.1")
        return addresses

    with_loopback._voicelab_loopback = True  # type: ignore[attr-defined]
    ice.get_host_addresses = with_loopback


# ---- sessions ------------------------------------------------------------------------------------------

class SessionRegistry:
    """Running sessions by pc_id, plus slots reserved by offers still being answered."""

    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[str, Session] = {}
        self.reserved = 0

    def try_reserve(self) -> bool:
        if len(self.sessions) + self.reserved >= self.max_sessions:
            return False
        self.reserved += 1
        return True

    def release(self) -> None:
        self.reserved = max(0, self.reserved - 1)

    def add(self, session: Session) -> None:
        self.release()
        self.sessions[session.pc_id] = session

    def remove(self, session: Session) -> None:
        if self.sessions.get(session.pc_id) is session:
            del self.sessions[session.pc_id]
            logger.info(f"session {session.pc_id} ended: {session.stop_reason or 'pipeline finished'}")

    async def stop_all(self, reason: str) -> None:
        await asyncio.gather(*(s.stop(reason) for s in list(self.sessions.values())), return_exceptions=True)


# An ended session's pipeline refers to itself (processors, their tasks and event handlers, the WebRTC
# connection), so only a full garbage collection frees it. With torch, pipecat and the models loaded (~520k
# long-lived objects) Python runs one only every few dozen sessions and it then holds the event loop 0.5 to
# 0.9 s; meanwhile the dead sessions' connections, codecs and buffers pile up (issue 12: +2.3 MB of RSS per
# session once the models were shared). So the objects alive at startup, which live as long as the server, are
# frozen out of collection, and a full collection, which then scans only what came later (measured over 100
# soak sessions: 3.6 ms median, 21 ms at most), runs as each session's task ends.

def freeze_startup_heap() -> None:
    """Keep what is alive now (modules, models) out of all later collections (`gc.freeze`, per process)."""
    gc.collect()  # today's garbage is collected, not frozen with the rest
    gc.freeze()


def collect_ended_session(_task: asyncio.Task[None]) -> None:
    """A session's task is done: free its pipeline now (a done callback, so the task holds no frame)."""
    gc.collect()


# ---- request bounds and headers (plain ASGI, so it sees every request) ------------------------------------

class _TooLarge(Exception):
    pass


class LimitsMiddleware:
    """Refuses bodies over `max_body_bytes` (by Content-Length, or while reading a body sent without one)
    and adds the security headers to every response."""

    def __init__(self, app: Callable[..., Awaitable[None]], max_body_bytes: int) -> None:
        self.app = app
        self.max = max_body_bytes

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Awaitable[Any]],
                       send: Callable[..., Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_headers(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                headers += [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
                            (b"referrer-policy", b"no-referrer"), (b"cache-control", b"no-store")]
                message = {**message, "headers": headers}
            await send(message)

        length = next((v for k, v in scope.get("headers", []) if k == b"content-length"), None)
        if length is not None:
            if not length.isdigit():
                await self._refuse(send_with_headers, 400, "bad Content-Length header")
                return
            if int(length) > self.max:
                await self._refuse(send_with_headers, 413, f"request body over {self.max} bytes")
                return
        received = 0

        async def bounded_receive() -> Any:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, bounded_receive, send_with_headers)
        except _TooLarge:
            if not started:
                await self._refuse(send_with_headers, 413, f"request body over {self.max} bytes")

    @staticmethod
    async def _refuse(send: Callable[..., Awaitable[None]], status: int, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def static_files(folder: Path) -> dict[str, Path]:
    """Every regular file under `folder` (no symlinks), by its path relative to it."""
    root = folder.resolve()
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and root in path.resolve().parents:
            out[path.relative_to(root).as_posix()] = path
    return out


async def _body(request: Request, model: type[BaseModel], what: str, allowed_origins: tuple[str, ...]) -> Any:
    """The request body as `model` (JSON only, own origin, shallow: `voicelab.web.requests`), else ApiError."""
    try:
        check_headers(request.headers, request.url.scheme, what, allowed_origins)
        return parse_body(await request.body(), model, what)
    except BodyError as e:
        raise ApiError(e.status, e.message) from None


# ---- the app -------------------------------------------------------------------------------------------

def create_app(options: ServeOptions | None = None, *, pool: ResourcePool | None = None,
               pipeline_factory: PipelineFactory | None = None) -> FastAPI:
    """The FastAPI app for `options`. `pool` shares loaded engines (the serve command preloads one);
    `pipeline_factory(session, transport) -> PipelineWorker` replaces the voicelab pipeline (tests)."""
    from pipecat.transports.smallwebrtc.request_handler import (
        IceCandidate,
        SmallWebRTCPatchRequest,
        SmallWebRTCRequest,
        SmallWebRTCRequestHandler,
    )

    opts = options or ServeOptions()
    if opts.loopback_ice or (opts.loopback_ice is None and not has_external_ipv4()):
        allow_loopback_ice()
    resources = pool or ResourcePool()
    registry = SessionRegistry(opts.max_sessions)
    handler = SmallWebRTCRequestHandler()
    files = static_files(opts.static_dir)
    choices = option_choices(opts)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        freeze_startup_heap()
        try:
            yield
        finally:
            await registry.stop_all("the server is shutting down")
            with contextlib.suppress(Exception):
                await handler.close()
            if pool is None:
                resources.close()
            gc.unfreeze()  # the process may go on (tests): its objects are collectable again

    app = FastAPI(title="voicelab live", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.registry = registry
    app.state.options = opts

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        headers = {"Retry-After": "10"} if exc.status == 503 else None
        return JSONResponse({"error": exc.message, **exc.extra}, status_code=exc.status, headers=headers)

    def _static(name: str) -> Response:
        path = files.get(name)
        if path is None:
            raise ApiError(404, "not found")
        media = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return FileResponse(path, media_type=media)

    @app.get("/")
    async def index() -> Response:
        return _static("index.html")

    @app.get("/static/{name:path}")
    async def static(name: str) -> Response:
        return _static(name)

    @app.get("/favicon.ico")
    async def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/api/options")
    async def get_options() -> dict[str, Any]:
        return {"choices": choices, "defaults": option_defaults(opts), "max_sessions": opts.max_sessions}

    @app.get("/api/status")
    async def status() -> dict[str, Any]:
        states: dict[str, int] = {}
        for s in registry.sessions.values():
            states[s.state] = states.get(s.state, 0) + 1
        return {"sessions": len(registry.sessions), "connecting": registry.reserved,
                "max_sessions": registry.max_sessions, "states": states, "tasks": len(asyncio.all_tasks())}

    @app.post("/api/offer")
    async def offer(request: Request) -> JSONResponse:
        body = await _body(request, OfferBody, "offer", opts.allowed_origins)
        sdp, kind, pc_id = body.sdp, body.type, body.pc_id
        if not sdp.startswith("v=0") or "\nm=audio " not in sdp.replace("\r\n", "\n"):
            raise ApiError(400, "offer: field 'sdp' is not an SDP offer with an audio section (m=audio)")
        if pc_id is not None:  # renegotiation of a running session
            if pc_id not in registry.sessions:
                raise ApiError(404, "offer: no running session has this pc_id")
            req = SmallWebRTCRequest(sdp=sdp, type=kind, pc_id=pc_id, restart_pc=body.restart_pc)
            answer = await handler.handle_web_request(req, _ignore_connection)
            return JSONResponse(answer)
        cfg = resolve_config(opts, choices, body.request_data)
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
        session = Session(connections[0], cfg, resources, limits=opts.limits, on_finished=registry.remove,
                          pipeline_factory=pipeline_factory, runs_dir=opts.runs_dir)
        registry.add(session)
        session.start()
        if session.task is not None:
            session.task.add_done_callback(collect_ended_session)
        logger.info(f"session {session.pc_id} started ({len(registry.sessions)}/{registry.max_sessions})")
        return JSONResponse(answer)

    @app.patch("/api/offer")
    async def candidates(request: Request) -> dict[str, Any]:
        body = await _body(request, CandidatesBody, "candidates", opts.allowed_origins)
        pc_id = body.pc_id
        if pc_id not in registry.sessions:
            raise ApiError(404, "candidates: no running session has this pc_id")
        parsed = [IceCandidate(candidate=c.candidate, sdp_mid=c.sdp_mid or "0", sdp_mline_index=c.sdp_mline_index or 0)
                  for c in body.candidates]
        try:
            await handler.handle_patch_request(SmallWebRTCPatchRequest(pc_id=pc_id, candidates=parsed))
        except Exception as e:
            raise ApiError(400, f"candidates: refused ({type(e).__name__}: {str(e)[:200]})") from None
        return {"added": len(parsed)}

    @app.post("/api/session/close")
    async def close_session(request: Request) -> dict[str, Any]:
        body = await _body(request, CloseBody, "close", opts.allowed_origins)
        session = registry.sessions.get(body.pc_id) if body.pc_id is not None else None
        if session is None:
            return {"closing": False}
        session.request_stop("the page was closed")
        return {"closing": True}

    app.add_middleware(LimitsMiddleware, max_body_bytes=opts.max_body_bytes)
    return app


async def _ignore_connection(_connection: Any) -> None:
    """Renegotiation reuses the session's connection: there is nothing new to start."""
