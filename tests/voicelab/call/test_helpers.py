"""Small loopback agents for the line tests: real WebSocket servers on 127.0.0.1, each in its own thread.

`ToneAgent` is a scripted phone agent: it greets, answers each caller utterance (heard by energy on the
µ-law it receives) with a burst of tone audio and a mark, and sends `clear` when the caller talks over it for
`clear_after_ms`. The bad agents misbehave in one way each.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import threading
from collections.abc import Awaitable, Callable
from contextlib import contextmanager
from typing import Any

import numpy as np
from websockets.asyncio.server import ServerConnection, serve

from voicelab.pipeline.transport import mulaw

Handler = Callable[[ServerConnection], Awaitable[None]]


def tone(seconds: float, freq: float = 300.0, level: float = 0.3) -> bytes:
    t = np.arange(int(8000 * seconds)) / 8000.0
    return mulaw.encode((level * 32767 * np.sin(2 * np.pi * freq * t)).astype(np.int16))


def media(sid: str, audio: bytes) -> str:
    return json.dumps({"event": "media", "streamSid": sid, "media": {"payload": base64.b64encode(audio).decode()}})


async def read_start(ws: ServerConnection) -> str:
    """Read `connected` and `start`; the stream id."""
    first = json.loads(await ws.recv())
    assert first["event"] == "connected"
    start = json.loads(await ws.recv())
    assert start["event"] == "start" and start["start"]["mediaFormat"]["encoding"] == "audio/x-mulaw"
    return str(start["streamSid"])


class ToneAgent:
    def __init__(self, greeting_s: float = 0.6, reply_s: float = 1.0, burst: bool = True,
                 clear_after_ms: float | None = 200.0, resume_after_ms: float | None = None,
                 reply_after_ms: float = 400.0, gap_ms: float | None = None) -> None:
        self.greeting_s, self.reply_s, self.burst, self.clear_after_ms = greeting_s, reply_s, burst, clear_after_ms
        self.resume_after_ms = resume_after_ms  # after a clear, send the rest this long later: a pause, not a stop
        self.reply_after_ms = reply_after_ms  # the caller's silence before a reply
        self.gap_ms = gap_ms  # silence this long in the middle of every reply (packets lost)
        self.received: list[dict[str, Any]] = []

    async def __call__(self, ws: ServerConnection) -> None:
        sid = await read_start(ws)
        talking_until = 0.0  # agent's own estimate of when its queued audio ends (s of stream time)
        speech_ms = silence_ms = 0.0
        in_speech = False
        t = 0.0

        async def say(seconds: float, name: str) -> float:
            audio = tone(seconds)
            if self.gap_ms is not None and name.startswith("reply"):  # µ-law 0xFF is silence
                mid, n = len(audio) // 2, round(8 * self.gap_ms)
                audio = audio[:mid] + b"\xff" * n + audio[mid + n:]
            if self.burst:
                await ws.send(media(sid, audio))
            else:
                for i in range(0, len(audio), 160):
                    await ws.send(media(sid, audio[i:i + 160]))
            await ws.send(json.dumps({"event": "mark", "streamSid": sid, "mark": {"name": name}}))
            return max(t, talking_until) + seconds

        talking_until = await say(self.greeting_s, "greeting")
        replies = 0
        resume: tuple[float, float] | None = None  # (at t, seconds of the cleared reply left)
        async for raw in ws:
            msg = json.loads(raw)
            self.received.append(msg)
            if msg["event"] != "media":
                continue
            pcm = mulaw.decode(base64.b64decode(msg["media"]["payload"]))
            t += pcm.size / 8000.0
            if resume is not None and t >= resume[0]:
                talking_until = await say(resume[1], "resumed")
                resume = None
            loud = float(np.sqrt(np.mean(pcm.astype(float) ** 2))) > 300
            if loud:
                speech_ms += 20
                silence_ms = 0.0
                if speech_ms >= 60:
                    in_speech = True
                if (self.clear_after_ms is not None and in_speech and t < talking_until
                        and speech_ms >= self.clear_after_ms):
                    await ws.send(json.dumps({"event": "clear", "streamSid": sid}))
                    if self.resume_after_ms is not None:
                        resume = (t + self.resume_after_ms / 1000, talking_until - t)
                    talking_until = t
            else:
                silence_ms += 20
                if in_speech and silence_ms >= self.reply_after_ms:
                    in_speech, speech_ms = False, 0.0
                    replies += 1
                    talking_until = await say(self.reply_s, f"reply-{replies}")


@contextmanager
def serving(handler: Handler):
    """ws://127.0.0.1:PORT/ served by `handler` in a thread of its own; yields the URL."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop: dict[str, Any] = {}
    port_box: dict[str, int] = {}

    async def main() -> None:
        async with serve(handler, "127.0.0.1", 0, compression=None) as server:
            port_box["port"] = server.sockets[0].getsockname()[1]
            stop["future"] = loop.create_future()
            ready.set()
            await stop["future"]

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(5)
    try:
        yield f"ws://127.0.0.1:{port_box['port']}/media-stream"
    finally:
        loop.call_soon_threadsafe(stop["future"].set_result, None)
        thread.join(5)


@contextmanager
def raw_tcp(respond: bytes | None):
    """A TCP server that answers any request with `respond` (None: accepts and says nothing)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    conns: list[socket.socket] = []
    done = threading.Event()

    def loop() -> None:
        srv.settimeout(0.2)
        while not done.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            conns.append(c)
            if respond is not None:
                c.recv(4096)
                c.sendall(respond)
                c.close()

    th = threading.Thread(target=loop, daemon=True)
    th.start()
    try:
        yield f"ws://127.0.0.1:{srv.getsockname()[1]}/media-stream"
    finally:
        done.set()
        th.join(2)
        for c in conns:
            c.close()
        srv.close()


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
