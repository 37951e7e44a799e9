"""A loopback mock of a hosted engine: OpenAI chat completions over SSE, plus Mercury's `diffusing`
drafts, so the HTTP clients can be tested for real and users can rehearse without keys.

    serve_mock("127.0.0.1", 8808)                       # blocking (`voicelab mock-engine`)
    with start_mock() as mock: ...mock.url...          # in a thread (tests, `profile:NAME@http`)

The request's `model` picks content and timing:
- a profile name (`gemini-2.5-flash`, `mercury-2`, ...): the tiny engine's answer (diffusion profiles:
  the tiny diffusion engine; AR ones: the tiny AR engine; or the recorded trace) revealed on the
  profile's clock (engines/simulated/reveal.py). AR profiles stream token deltas; diffusion profiles stream
  finished blocks, or with `diffusing: true` every denoising draft (the replace shape: each chunk is
  the whole draft; `X-Mock-Shape: append` sends only finished text as deltas).
- `diffusion` or `ar`: that tiny engine's own snapshots in real time (`diffusing`: each step's text).
A last user message of several lines is answered line by line and joined (long answers for probes).
With `tools` in the request, tool spans (`[book(day=friday)]`) stream as `tool_calls` fragments.

Faults on demand, by the `X-Mock-Fault` header or a model suffix (`mercury-2~500`): `429`, `500`
(before any byte), `hang` (headers, then nothing), `stall` (silence after two content chunks),
`disconnect` (connection dropped after two content chunks), `malformed` (a broken SSE line after
two content chunks). `FAULTxK` (e.g. `429x1`) faults only the first K requests with that model string.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from engines.errors import EngineSpecError
from engines.protocol import EngineLike
from engines.simulated.profile_engine import answer_pieces, prompt_tokens
from engines.simulated.profiles import PROFILES, Profile
from engines.simulated.reveal import reveal_schedule
from engines.tool_span import OPEN, parse_span, span_end

FAULTS = ("429", "500", "hang", "stall", "disconnect", "malformed")
NATIVE = ("diffusion", "ar")
_FAULT_AFTER = 2  # content chunks before a mid-stream fault


class _Disconnect(Exception):
    """Raised inside the body stream: the server drops the connection without finishing the response."""


@dataclass
class MockOptions:
    trace: Path | None = None  # content from a recorded trace instead of the tiny engines
    seed: int = 0
    jitter: float = 0.2
    block_size: int = 32
    steps_per_block: int = 4
    shape: str = "replace"  # diffusing chunks: "replace" (whole draft) or "append" (finished text only)
    device: str | None = None
    sources: dict[str, EngineLike] = field(default_factory=dict)  # opened lazily, one per kind
    requests: dict[str, int] = field(default_factory=dict)  # per model string, for FAULTxK
    lock: threading.Lock = field(default_factory=threading.Lock)


def _source(opts: MockOptions, kind: str) -> EngineLike:
    key = "trace" if opts.trace is not None else kind
    with opts.lock:
        if key not in opts.sources:
            if opts.trace is not None:
                from engines.trace import ReplayEngine

                opts.sources[key] = ReplayEngine(opts.trace, speed=1e6)  # content only: the profile times it
            else:
                from engines.local.engine import open_engine

                opts.sources[key] = open_engine(kind, device=opts.device)
        return opts.sources[key]


def preload(opts: MockOptions) -> None:
    """Open and warm the content sources now, so no request pays for loading a model."""
    for kind in NATIVE:
        _source(opts, kind).warm_up()


def _parse_fault(model_field: str, header: str | None, opts: MockOptions) -> tuple[str, str | None]:
    model, _, suffix = model_field.partition("~")
    spec = (header or suffix or "").strip().lower()
    if not spec:
        return model, None
    name, _, times = spec.partition("x")
    if name not in FAULTS or (times and not times.isdigit()):
        raise EngineSpecError(f"mock: unknown fault '{spec}' (one of {', '.join(FAULTS)}, optionally xK)")
    with opts.lock:
        n = opts.requests[model_field] = opts.requests.get(model_field, 0) + 1
    return model, (name if not times or n <= int(times) else None)


class _ToolSplitter:
    """Moves `[name(k=v)]` spans out of streamed content into tool_calls fragments."""

    def __init__(self) -> None:
        self.buf = ""
        self.calls = 0

    def feed(self, text: str) -> list[dict[str, Any]]:
        """The deltas `text` completes, in answer order: {"content": ...} and {"tool_calls": [fragment]}. One
        text may hold a span and the words after it (a profile's clock sends what fell due together): the span's
        fragments go before those words, as a real server streams them."""
        self.buf += text
        out: list[dict[str, Any]] = []
        while self.buf:
            at = self.buf.find(OPEN)
            if at < 0:
                out.append({"content": self.buf})
                self.buf = ""
                break
            if at:
                out.append({"content": self.buf[:at]})
            self.buf = self.buf[at:]
            end = span_end(self.buf, 0)
            parsed = parse_span(self.buf[:end]) if end > 0 else None
            if parsed is None:
                break  # an open span waits for its end; a malformed one is held back, never sent as content
            out += [{"tool_calls": [f]} for f in self._fragments(*parsed)]
            self.buf = self.buf[end:].lstrip(" ")
        return out

    def _fragments(self, name: str, args: dict[str, str]) -> list[dict[str, Any]]:
        arg_text = json.dumps(args)
        i = self.calls
        self.calls += 1
        third = max(1, len(arg_text) // 3)  # arguments arrive in pieces, as real servers send them
        frags = [{"index": i, "id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": ""}}]
        frags += [{"index": i, "function": {"arguments": arg_text[j:j + third]}} for j in range(0, len(arg_text), third)]
        return frags


def _chunk(cid: str, model: str, delta: dict[str, Any] | None, finish: str | None = None,
           usage: dict[str, int] | None = None) -> str:
    obj: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
                           "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        obj["usage"] = usage
    return f"data: {json.dumps(obj)}\n\n"


async def _profile_texts(opts: MockOptions, profile: Profile, messages: list[dict[str, str]], diffusing: bool,
                         shape: str, t0: float, meta: dict[str, int]) -> AsyncIterator[tuple[str, bool]]:
    """(text, is_whole_draft) on the profile's clock; meta["tokens"] gets the answer's length."""
    loop = asyncio.get_running_loop()
    src = _source(opts, "diffusion" if profile.kind == "diffusion" else "ar")
    pieces = await loop.run_in_executor(None, answer_pieces, src, messages)
    meta["tokens"] = len(pieces)
    plan = reveal_schedule(pieces, profile, seed=opts.seed, jitter=opts.jitter, block_size=opts.block_size,
                           steps_per_block=opts.steps_per_block)
    sent = 0
    # a late first text (content computed slower than the first-answer wait) restarts the clock, as the
    # profile engine does, so the rest of the answer keeps the profile's speed
    t0 = max(t0, time.monotonic() - plan[0].t_s)
    for i, r in enumerate(plan):
        # skip drafts already overdue, so a slow timer never slows the output speed
        if i and i + 1 < len(plan) and t0 + plan[i + 1].t_s <= time.monotonic():
            continue
        await asyncio.sleep(max(0.0, t0 + r.t_s - time.monotonic()))
        if diffusing and shape == "replace":
            yield "".join(r.pieces), True
        elif r.final > sent:
            yield "".join(r.pieces[sent:r.final]), False
            sent = r.final


async def _native_texts(opts: MockOptions, kind: str, messages: list[dict[str, str]],
                        diffusing: bool, meta: dict[str, int]) -> AsyncIterator[tuple[str, bool]]:
    """The tiny engine's (or the trace's) own snapshots in real time."""
    src = _source(opts, kind)
    if opts.trace is not None:
        from engines.trace import ReplayEngine

        src = ReplayEngine(opts.trace)  # original timing
    sent = ""
    async for snap in src.generate(messages):
        text = snap.text()
        meta["tokens"] = snap.prefix_len
        if diffusing:
            yield text, True
            continue
        final = text if snap.done else snap.text(min(snap.blocks_done, snap.prefix_len))
        if final.startswith(sent) and len(final) > len(sent):
            yield final[len(sent):], False
            sent = final


def create_app(options: MockOptions | None = None) -> FastAPI:
    opts = options or MockOptions()
    app = FastAPI(title="voicelab mock engine")

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": n, "object": "model"} for n in (*PROFILES, *NATIVE)]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        try:
            body = await request.json()
            messages = [{"role": str(m["role"]), "content": str(m["content"])} for m in body["messages"]]
            model, fault = _parse_fault(str(body.get("model", "")), request.headers.get("x-mock-fault"), opts)
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            return JSONResponse({"error": {"message": f"bad request body ({type(e).__name__}: {e})"}}, 400)
        except EngineSpecError as e:
            return JSONResponse({"error": {"message": str(e)}}, 400)
        if model not in PROFILES and model not in NATIVE:
            return JSONResponse({"error": {"message": f"unknown model '{model}' (a profile name, 'diffusion' or "
                                                      "'ar')"}}, 404)
        if fault == "429":
            return JSONResponse({"error": {"message": "rate limited (mock fault)"}}, 429, headers={"Retry-After": "0"})
        if fault == "500":
            return JSONResponse({"error": {"message": "internal error (mock fault)"}}, 500)
        t0 = time.monotonic()
        diffusing = bool(body.get("diffusing"))
        shape = request.headers.get("x-mock-shape", opts.shape)
        meta = {"tokens": 0}
        kind = model if model in NATIVE else ("diffusion" if PROFILES[model].kind == "diffusion" else "ar")
        if model in PROFILES:
            texts = _profile_texts(opts, PROFILES[model], messages, diffusing, shape, t0, meta)
        else:
            texts = _native_texts(opts, model, messages, diffusing, meta)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        splitter = _ToolSplitter() if body.get("tools") and not diffusing else None
        cid = f"chatcmpl-mock-{int(t0 * 1e6)}"
        model_field = str(body.get("model", ""))

        async def stream() -> AsyncIterator[str]:
            if fault == "hang":
                await asyncio.sleep(3600)
            yield _chunk(cid, model_field, {"role": "assistant", "content": ""})
            n_content = 0
            async for text, _whole in texts:
                if splitter is not None:
                    deltas = splitter.feed(text)
                else:
                    deltas = [{"content": text}] if text else []
                for delta in deltas:
                    yield _chunk(cid, model_field, delta)
                n_content += any("content" in d for d in deltas)
                if n_content == _FAULT_AFTER:
                    if fault == "stall":
                        await asyncio.sleep(3600)
                    if fault == "disconnect":
                        raise _Disconnect("mock fault: connection dropped mid-stream")
                    if fault == "malformed":
                        yield 'data: {"choices": [{"delta": {"content": "trunc\n\n'
                        return
            finish = "tool_calls" if splitter is not None and splitter.calls else "stop"
            yield _chunk(cid, model_field, {}, finish)
            if include_usage:
                usage = {"prompt_tokens": prompt_tokens(_source(opts, kind), messages) or 0,
                         "completion_tokens": meta["tokens"]}
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                yield _chunk(cid, model_field, None, usage=usage)
            yield "data: [DONE]\n\n"

        if not body.get("stream", False):
            return JSONResponse({"error": {"message": "the mock serves only stream: true"}}, 400)
        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    return app


def _check_loopback(host: str) -> None:
    try:
        ok = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise EngineSpecError(f"mock engine: host '{host}' is not a loopback address (use 127.0.0.1)")


def serve_mock(host: str = "127.0.0.1", port: int = 8808, *, trace: str | Path | None = None, seed: int = 0,
               jitter: float = 0.2, shape: str = "replace", device: str | None = None,
               log_level: str = "warning") -> None:
    """Run the mock until interrupted (`voicelab mock-engine`); loopback addresses only."""
    import uvicorn

    _check_loopback(host)
    opts = MockOptions(trace=Path(trace) if trace else None, seed=seed, jitter=jitter, shape=shape, device=device)
    preload(opts)
    uvicorn.run(create_app(opts), host=host, port=port, log_level=log_level)


class RunningMock:
    """The mock served by uvicorn in a daemon thread on a free loopback port."""

    def __init__(self, options: MockOptions | None = None, host: str = "127.0.0.1", port: int = 0,
                 log_level: str = "critical") -> None:
        import uvicorn

        _check_loopback(host)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.host, self.port = self.sock.getsockname()[:2]
        self.options = options or MockOptions()
        cfg = uvicorn.Config(create_app(self.options), log_level=log_level, timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(cfg)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name="mock-engine")

    @property
    def url(self) -> str:
        """The base URL an OpenAI-compatible client takes (…/v1)."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> RunningMock:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"mock engine on {self.url} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)
        self.sock.close()
        for src in self.options.sources.values():
            src.close()

    def __enter__(self) -> RunningMock:
        return self if self.thread.is_alive() else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_mock(*, trace: str | Path | None = None, seed: int = 0, jitter: float = 0.2, shape: str = "replace",
               device: str | None = None, host: str = "127.0.0.1", port: int = 0) -> RunningMock:
    """Start the mock in a thread and return it (call .stop(), or use it as a context manager)."""
    opts = MockOptions(trace=Path(trace) if trace else None, seed=seed, jitter=jitter, shape=shape, device=device)
    preload(opts)
    return RunningMock(opts, host, port).start()

