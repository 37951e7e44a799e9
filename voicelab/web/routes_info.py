"""What the server offers and holds: `GET /api/options` (the page's choices and defaults) and `GET /api/status`
(how many sessions hold a pipeline now, and the number of asyncio tasks in the server: a leak check, it
returns to its idle value when sessions end)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter

from voicelab.web.options import option_defaults
from voicelab.web.server_state import Server

router = APIRouter()


@router.get("/api/options")
async def get_options(server: Server) -> dict[str, Any]:
    opts = server.opts
    return {"choices": server.choices, "defaults": option_defaults(opts), "max_sessions": opts.max_sessions}


@router.get("/api/status")
async def status(server: Server) -> dict[str, Any]:
    registry = server.registry
    states: dict[str, int] = {}
    for s in registry.sessions.values():
        states[s.state] = states.get(s.state, 0) + 1
    return {"sessions": len(registry.sessions), "connecting": registry.reserved,
            "max_sessions": registry.max_sessions, "states": states, "tasks": len(asyncio.all_tasks())}
