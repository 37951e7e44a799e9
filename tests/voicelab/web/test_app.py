"""Fast tests of the live demo's web app: static files, request bounds, the session cap, status, teardown.

A real uvicorn server runs the app; sessions are real WebRTC connections made by an aiortc client, running
a pipeline of just the SmallWebRTC transport (the cap and the teardown do not depend on what the pipeline
does, and the voicelab pipeline needs a trained engine: the browser test runs that one).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web_helpers import ServerThread
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.resources import ResourcePool
from voicelab.web.app import create_app
from voicelab.web.options import STATIC_DIR, ServeError, ServeOptions, SessionLimits


async def transport_only(session: Any, transport: Any) -> Any:
    """A pipeline of the WebRTC transport alone (mic in, nothing out)."""
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker

    return PipelineWorker(Pipeline([transport.input(), transport.output()]), params=PipelineParams(),
                          idle_timeout_secs=None, enable_rtvi=False, enable_turn_tracking=False)


def make_server(static_dir: Path = STATIC_DIR, max_sessions: int = 1, **limits: float) -> ServerThread:
    opts = ServeOptions(max_sessions=max_sessions, max_body_bytes=8 * 1024, static_dir=static_dir,
                        limits=SessionLimits(**limits))
    return ServerThread(create_app(opts, pool=ResourcePool(), pipeline_factory=transport_only))


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with make_server() as s:
        yield s


# ---- static files ----------------------------------------------------------------------------------------

def test_page_and_assets_are_served_with_a_strict_csp(server: ServerThread) -> None:
    status, headers, body = server.request("GET", "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b'src="/static/app.js"' in body
    assert "default-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    for name, kind in (("app.js", "javascript"), ("style.css", "text/css")):
        status, headers, body = server.request("GET", f"/static/{name}")
        assert status == 200 and kind in headers["content-type"], (name, headers)
        assert body == (STATIC_DIR / name).read_bytes()


def test_page_loads_nothing_from_other_origins() -> None:
    page = (STATIC_DIR / "index.html").read_text() + (STATIC_DIR / "app.js").read_text()
    page += (STATIC_DIR / "style.css").read_text()
    assert "http://" not in page and "https://" not in page and "//cdn" not in page


@pytest.mark.parametrize("path", [
    "/static/../app.py", "/static/..%2fapp.py", "/static/%2e%2e/app.py", "/static/%2e%2e%2f%2e%2e%2fpyproject.toml",
    "/static/../../../../etc/passwd", "/static//etc/passwd", "/static/%2fetc%2fpasswd", "/static/",
    "/static/.", "/static/..", "/static/%5c..%5capp.py", "/../voicelab/web/app.py", "/static/app.js/..",
    "/static/index.html%00.js", "/app.py", "/pyproject.toml",
])
def test_paths_outside_the_static_folder_are_refused(server: ServerThread, path: str) -> None:
    status, _headers, body = server.request("GET", path)
    assert status in (400, 404), (path, status)
    assert b"import" not in body and b"root:" not in body and b"[project]" not in body


def test_symlink_out_of_the_static_folder_is_not_served(tmp_path: Path) -> None:
    static = tmp_path / "static"
    static.mkdir()
    (static / "index.html").write_text("<!doctype html><title>x</title>")
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (static / "leak.txt").symlink_to(secret)
    with make_server(static_dir=static) as s:
        assert s.request("GET", "/")[0] == 200
        status, _h, body = s.request("GET", "/static/leak.txt")
        assert status == 404 and b"top secret" not in body


# ---- request bounds and validation ----------------------------------------------------------------------

def test_oversized_body_is_refused_with_413(server: ServerThread) -> None:
    big = json.dumps({"sdp": "v=0\r\n" + "a" * 20_000, "type": "offer"}).encode()
    status, headers, body = server.request("POST", "/api/offer", big, {"Content-Type": "application/json"})
    assert status == 413 and headers["content-type"] == "application/json"
    assert "8192 bytes" in json.loads(body)["error"]
    assert server.status()["sessions"] == 0


def test_oversized_chunked_body_is_refused_with_413(server: ServerThread) -> None:
    """A chunked body over the limit is refused with 413. The whole request goes out in one write: a client
    that sends chunk by chunk can still be writing when the server has answered and closed (a broken pipe on
    the client's side, not the server's answer)."""
    import http.client
    import socket

    parts = [b'{"sdp": "', b"x" * 6000, b"y" * 6000, b'", "type": "offer"}']
    body = b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in parts) + b"0\r\n\r\n"
    head = (f"POST /api/offer HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head + body)
        r = http.client.HTTPResponse(sock)
        r.begin()
        assert r.status == 413 and "bytes" in json.loads(r.read())["error"]


SDP = "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"  # passes the app's shape check, not aiortc's


@pytest.mark.parametrize("payload, fragment", [
    ({"type": "offer"}, "'sdp'"),
    ({"sdp": "v=0", "type": "answer"}, "'type'"),
    ({"sdp": SDP, "type": "offer", "request_data": {"engine": "../../etc"}}, "request_data.engine"),
    ({"sdp": SDP, "type": "offer", "request_data": {"policy": "stable:0"}}, "request_data.policy"),
    ({"sdp": SDP, "type": "offer", "request_data": {"stt": "transcript"}}, "request_data.stt"),
    ({"sdp": SDP, "type": "offer", "request_data": {"voice": "x"}}, "request_data.voice"),
    ({"sdp": SDP, "type": "offer", "request_data": ["x"]}, "request_data"),
    ({"sdp": "not an sdp", "type": "offer"}, "m=audio"),
    ({"sdp": "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n", "type": "offer"}, "m=audio"),
    ({"sdp": SDP + "bogus\r\n", "type": "offer"}, "SDP offer was refused"),
])
def test_bad_offers_get_a_json_error_naming_the_field(server: ServerThread, payload: dict[str, Any],
                                                      fragment: str) -> None:
    status, data = server.json("POST", "/api/offer", payload)
    assert status == 400 and fragment in data["error"], data
    assert server.status() == {**server.status(), "sessions": 0, "connecting": 0}


def test_non_json_body_and_unknown_session(server: ServerThread) -> None:
    status, _h, body = server.request("POST", "/api/offer", b"sdp=1", {"Content-Type": "text/plain"})
    assert status == 415 and "application/json" in json.loads(body)["error"]  # a cross-site form cannot post
    status, _h, body = server.request("POST", "/api/offer", b"sdp=1", {"Content-Type": "application/json"})
    assert status == 400 and "not JSON" in json.loads(body)["error"]
    status, data = server.json("PATCH", "/api/offer", {"pc_id": "nope", "candidates": []})
    assert status == 404 and "pc_id" in data["error"]
    status, data = server.json("POST", "/api/offer", {"sdp": SDP, "type": "offer", "pc_id": "nope"})
    assert status == 404


def test_options_list_the_choices_the_offer_accepts(server: ServerThread) -> None:
    status, data = server.json("GET", "/api/options")
    assert status == 200
    assert data["defaults"] == {"engine": "diffusion", "sampler": "default", "policy": "pinned", "vad": "silero",
                                "stt": "whisper"}
    assert "stable:2" in data["choices"]["policy"] and "autoregressive" in data["choices"]["sampler"]
    assert data["choices"]["stt"] == ["whisper", "whisper-base", "moonshine", "pocketsphinx"]


def test_serve_options_are_checked() -> None:
    with pytest.raises(ServeError, match="max_sessions"):
        ServeOptions(max_sessions=0)
    with pytest.raises(ServeError, match="stt"):
        ServeOptions(pipeline=PipelineConfig(stt="transcript"))


# ---- sessions: the cap, the status count and teardown, with a real WebRTC client ---------------------------

class Client:
    """A WebRTC peer made with aiortc, as the page makes it: an audio track and a data channel."""

    def __init__(self, server: ServerThread) -> None:
        from aiortc import RTCPeerConnection
        from aiortc.mediastreams import AudioStreamTrack

        self.server = server
        self.pc = RTCPeerConnection()
        self.pc.addTrack(AudioStreamTrack())
        self.channel = self.pc.createDataChannel("voicelab")
        self.messages: list[dict[str, Any]] = []
        self.channel.on("message", lambda m: self.messages.append(json.loads(m)))
        self.pc_id: str | None = None

    async def offer(self) -> tuple[int, dict[str, Any]]:
        from aiortc import RTCSessionDescription

        await self.pc.setLocalDescription(await self.pc.createOffer())
        body = {"sdp": self.pc.localDescription.sdp, "type": "offer", "request_data": {"policy": "prefix"}}
        status, data = await asyncio.to_thread(self.server.json, "POST", "/api/offer", body)
        if status == 200:
            self.pc_id = data["pc_id"]
            await self.pc.setRemoteDescription(RTCSessionDescription(sdp=data["sdp"], type=data["type"]))
        return status, data

    async def wait_ready(self, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(m.get("type") == "status" and m.get("state") == "ready" for m in self.messages):
            assert time.monotonic() < deadline, f"session not ready: {self.messages}"
            await asyncio.sleep(0.05)

    async def close(self) -> None:
        await self.pc.close()


async def _status(server: ServerThread) -> dict[str, Any]:
    return await asyncio.to_thread(server.status)


async def _wait_sessions(server: ServerThread, n: int, timeout_s: float = 15.0) -> dict[str, Any]:
    return await asyncio.to_thread(server.wait_sessions, n, timeout_s)


@pytest.mark.slow
async def test_session_cap_gives_a_clear_busy_message_and_frees_on_disconnect(server: ServerThread) -> None:
    idle = await _wait_sessions(server, 0)
    first = Client(server)
    status, _ = await first.offer()
    assert status == 200
    await first.wait_ready()
    st = await _status(server)
    assert st["sessions"] == 1 and st["states"] == {"connected": 1}

    second = Client(server)
    status, data = await second.offer()
    assert status == 503
    assert data["error"] == "the demo is busy: 1 of 1 sessions are in use; try again in a minute"
    assert data["sessions"] == 1 and data["max_sessions"] == 1
    await second.close()

    await first.close()  # the browser goes away: its session and its tasks go too
    st = await _wait_sessions(server, 0)
    assert st["sessions"] == 0 and st["connecting"] == 0

    third = Client(server)
    status, _ = await third.offer()
    assert status == 200
    await third.wait_ready()
    await third.close()
    await _wait_sessions(server, 0)
    deadline = time.monotonic() + 10
    while (st := await _status(server))["tasks"] > idle["tasks"] and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert st["tasks"] <= idle["tasks"], (idle, st)


async def test_page_goodbye_and_close_beacon_end_the_session(server: ServerThread) -> None:
    await _wait_sessions(server, 0)
    a = Client(server)
    assert (await a.offer())[0] == 200
    await a.wait_ready()
    a.channel.send(json.dumps({"type": "bye"}))  # the Stop button, before pc.close()
    assert (await _wait_sessions(server, 0))["sessions"] == 0
    await a.close()

    b = Client(server)
    assert (await b.offer())[0] == 200
    await b.wait_ready()
    status, data = await asyncio.to_thread(server.json, "POST", "/api/session/close", {"pc_id": b.pc_id})
    assert status == 200 and data == {"closing": True}
    assert (await _wait_sessions(server, 0))["sessions"] == 0
    await b.close()


@pytest.mark.slow
async def test_silent_page_is_dropped_after_the_idle_timeout() -> None:
    with make_server(idle_timeout_s=1.0, check_s=0.1) as s:
        c = Client(s)
        assert (await c.offer())[0] == 200
        await c.wait_ready()
        c.channel.send(json.dumps({"type": "keepalive"}))  # then nothing more, as from a frozen tab
        await asyncio.sleep(0.3)
        assert (await _status(s))["sessions"] == 1
        st = await _wait_sessions(s, 0, timeout_s=10)
        assert st["sessions"] == 0
        await c.close()


@pytest.mark.slow
async def test_browser_that_never_connects_is_dropped() -> None:
    with make_server(connect_timeout_s=1.0, check_s=0.1) as s:
        c = Client(s)
        await c.pc.setLocalDescription(await c.pc.createOffer())
        body = {"sdp": c.pc.localDescription.sdp, "type": "offer"}
        status, _ = await asyncio.to_thread(s.json, "POST", "/api/offer", body)
        assert status == 200  # ... but the answer is never applied: ICE cannot complete
        assert (await _status(s))["sessions"] == 1
        assert (await _wait_sessions(s, 0, timeout_s=10))["sessions"] == 0
        await c.close()


# ---- the serve command ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args, fragment", [
    (["--policy", "stable:0"], "policy"),
    (["--stt", "transcript"], "stt"),
    (["--vad", "energy"], "vad"),
    (["--max-sessions", "0"], "max_sessions"),
    (["--turn", "sometimes"], "turn"),
    (["--port", "70000"], "port"),
])
def test_serve_refuses_bad_options_with_one_line(args: list[str], fragment: str) -> None:
    import typer
    from typer.testing import CliRunner

    from voicelab.cli.serve import serve

    cli = typer.Typer(add_completion=False)
    cli.command("serve")(serve)
    cli.command("other")(lambda: None)  # two commands, so "serve" is parsed as in voicelab's CLI
    result = CliRunner().invoke(cli, ["serve", *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], result.output
