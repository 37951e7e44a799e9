"""The page: `GET /` and `GET /static/<file>`. Only the regular files found in the static folder when the
app is created are served, by exact name; any other path is a 404 (nothing outside that folder)."""

from __future__ import annotations

import mimetypes
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, Response

from voicelab.web.errors import ApiError
from voicelab.web.server_state import Server

router = APIRouter()


def static_files(folder: Path) -> dict[str, Path]:
    """Every regular file under `folder` (no symlinks), by its path relative to it."""
    root = folder.resolve()
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and root in path.resolve().parents:
            out[path.relative_to(root).as_posix()] = path
    return out


def static_response(files: dict[str, Path], name: str) -> Response:
    path = files.get(name)
    if path is None:
        raise ApiError(404, "not found")
    media = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return FileResponse(path, media_type=media)


@router.get("/")
async def index(server: Server) -> Response:
    return static_response(server.files, "index.html")


@router.get("/static/{name:path}")
async def static(name: str, server: Server) -> Response:
    return static_response(server.files, name)


@router.get("/favicon.ico")
async def favicon() -> Response:
    return Response(status_code=204)
