"""Helpers for the web tests: a real uvicorn server on a free port, in a background thread."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from typing import Any

import uvicorn


class ServerThread:
    """Runs an ASGI app with uvicorn on 127.0.0.1 (a free port) until `stop()`."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        """One raw HTTP request (the path is sent exactly as given, no normalisation)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def json(self, method: str, path: str, payload: Any = None) -> tuple[int, Any]:
        body = None if payload is None else json.dumps(payload).encode()
        status, _h, data = self.request(method, path, body, {"Content-Type": "application/json"})
        return status, json.loads(data) if data else None

    def status(self) -> dict[str, Any]:
        code, data = self.json("GET", "/api/status")
        assert code == 200
        return data

    def wait_sessions(self, n: int, timeout_s: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        st = self.status()
        while st["sessions"] != n and time.monotonic() < deadline:
            time.sleep(0.1)
            st = self.status()
        return st
