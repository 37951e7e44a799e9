"""How the web app refuses a request: an `ApiError` (status, one-line message, extra fields) becomes the JSON
`{"error": "...", ...}` with that status (and `Retry-After` on a 503)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse


class ApiError(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


async def api_error_response(_request: Request, exc: ApiError) -> JSONResponse:
    """The app's handler for `ApiError`."""
    headers = {"Retry-After": "10"} if exc.status == 503 else None
    return JSONResponse({"error": exc.message, **exc.extra}, status_code=exc.status, headers=headers)
