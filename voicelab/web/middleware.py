"""Request bounds and headers, as plain ASGI so it sees every request: bodies over `max_body_bytes` are
refused (HTTP 413, JSON `{"error": "..."}`), and every response carries a content security policy that only
allows this origin (the page uses no CDN) and the other security headers."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' blob:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'")


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
