"""An OpenAI-compatible chat-completions streaming engine (OpenAI, Gemini's OpenAI endpoint, Groq, vLLM,
SGLang, llama.cpp's server, Ollama, and the project's mock server).

    engine = OpenAIStreamEngine("gpt-4.1-nano", base_url="https://api.openai.com/v1",
                                api_key_env="OPENAI_API_KEY")
    async for snap in engine.generate([{"role": "user", "content": "hi"}]):
        ...

Every appended delta becomes one canvas position of an append-only Snapshot (`kind` autoregressive),
so the gate, the metrics and the canvas treat it like the tiny AR engine. A finished tool call is
appended as a `[name(k=v)]` span. Failures raise the typed `engines.errors.EngineStreamError`s; the
request is retried once, only before the first byte arrives (after that the caller has waited and may
have heard text, so a retry would repeat it). `cancel()` cancels the pending read and closes the stream.
"""

from __future__ import annotations

import asyncio
import os
import queue
import ssl
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import certifi
import httpx

from engines.errors import (
    EngineConnectError,
    EngineProtocolError,
    EngineRateLimitError,
    EngineServerError,
    EngineSpecError,
    EngineStreamError,
    EngineTimeoutError,
)
from engines.hosted.chat_stream import DONE, ChunkAssembler, parse_sse_line
from engines.protocol import Usage
from engines.snapshot import Snapshot
from engines.text_canvas import TextCanvas

OPENAI_BASE_URL = "https://api.openai.com/v1"
_CANCELLED = object()
_BODY_OVERRIDES = {"max_tokens": "max_tokens", "canvas": "max_tokens", "temperature": "temperature", "seed": "seed"}


class _Retry(Exception):
    """A failure before the first byte that one more attempt may cure (connect, 429, 5xx, first byte)."""

    def __init__(self, error: EngineStreamError, wait_s: float) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait_s = wait_s


class StreamGeneration:
    """One streamed answer. Iterate it (async in the pipeline; sync through a helper thread)."""

    def __init__(self, engine: OpenAIStreamEngine, body: dict[str, Any]) -> None:
        self.engine = engine
        self.body = body
        self.canvas = engine.new_canvas()
        self.assembler = ChunkAssembler(engine.url)
        self.t_start_ns = time.monotonic_ns()
        self.t_first_byte_ns: int | None = None
        self.attempts = 0
        self.last: Snapshot | None = None
        self.overhead_ns = 0  # time spent turning received lines into snapshots (the client's own cost)
        self.lines = 0
        self._cancelled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: asyncio.Future[Any] | None = None
        self._owned_loop = False  # True when __iter__ runs this generation in a loop of its own

    # ---- the GenerationLike controls ----------------------------------------------------------------

    def pin(self, n: int) -> None:
        """Noted in the snapshots; a remote model cannot be told to keep text, so revisions stay visible."""
        self.canvas.pin(n)

    def cancel(self) -> None:
        self._cancelled = True
        loop, pending = self._loop, self._pending
        if loop is not None and pending is not None and not loop.is_closed():
            loop.call_soon_threadsafe(pending.cancel)  # wakes the pending read at once

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def usage(self) -> Usage:
        return self.assembler.usage

    @property
    def finish_reason(self) -> str | None:
        return self.assembler.finish_reason

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return self.assembler.tool_calls()

    # ---- streaming ----------------------------------------------------------------------------------

    async def _wait(self, aw: Any, timeout_s: float | None, what: str) -> Any:
        """Await one step of the stream, interruptible by cancel() and bounded by a timeout."""
        task = asyncio.ensure_future(aw)
        self._pending = task
        try:
            done, _ = await asyncio.wait({task}, timeout=timeout_s)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            self._pending = None
        if self._cancelled:
            task.cancel()
            return _CANCELLED
        if not done:
            task.cancel()
            raise EngineTimeoutError(f"{self.engine.url}: {what} after {timeout_s:g} s")
        return task.result()

    async def _open(self, client: httpx.AsyncClient) -> tuple[httpx.Response | None, AsyncIterator[str] | None, Any]:
        """Send the request and read the first line: (response, line iterator, first line) or cancelled."""
        eng = self.engine
        deadline = time.monotonic() + eng.first_byte_timeout_s
        req = client.build_request("POST", eng.url, json=self.body, headers=eng.headers())
        resp: httpx.Response | None = None
        try:
            resp = await self._wait(client.send(req, stream=True), eng.first_byte_timeout_s,
                                    "no first byte of the answer")
            if resp is _CANCELLED:
                return None, None, _CANCELLED
            if resp.status_code != 200:
                text = (await resp.aread()).decode("utf-8", "replace")[:160].replace("\n", " ")
                msg = f"{eng.url}: HTTP {resp.status_code}: {text}"
                if resp.status_code == 429:
                    raise _Retry(EngineRateLimitError(msg), _retry_after(resp))
                err = EngineServerError(msg, resp.status_code)
                if resp.status_code >= 500:
                    raise _Retry(err, 0.2)
                raise err
            lines = resp.aiter_lines()
            first = await self._wait(anext(lines, None), max(0.0, deadline - time.monotonic()),
                                     "no first byte of the answer")
            if first is None:
                raise _Retry(EngineProtocolError(f"{eng.url}: stream closed before the first byte"), 0.2)
            return resp, lines, first
        except EngineTimeoutError as e:
            await _close(resp)
            raise _Retry(e, 0.0) from None
        except httpx.TimeoutException as e:
            await _close(resp)
            raise _Retry(EngineConnectError(f"{eng.url}: connect timeout ({type(e).__name__})"), 0.2) from None
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as e:
            await _close(resp)
            raise _Retry(EngineConnectError(f"{eng.url}: {type(e).__name__}: {str(e)[:100]}"), 0.2) from None
        except BaseException:
            await _close(resp)
            raise

    async def __aiter__(self) -> AsyncIterator[Snapshot]:
        self._loop = asyncio.get_running_loop()
        client = self.engine.client(self._loop, owned=self._owned_loop)
        try:
            while True:
                self.attempts += 1
                try:
                    async for snap in self._stream(client):
                        yield snap
                    return
                except _Retry as r:  # raised only before any text was yielded
                    if self.attempts >= 2 or self._cancelled:
                        raise r.error from None
                    self.canvas, self.assembler = self.engine.new_canvas(), ChunkAssembler(self.engine.url)
                    await asyncio.sleep(r.wait_s)
        finally:
            if self._owned_loop:
                await client.aclose()

    async def _stream(self, client: httpx.AsyncClient) -> AsyncIterator[Snapshot]:
        """One attempt. Until the first snapshot, the first-byte deadline applies and failures may retry
        (servers often send a role-only chunk at once and the answer's first text much later)."""
        eng = self.engine
        deadline = time.monotonic() + eng.first_byte_timeout_s
        resp, lines, line = await self._open(client)
        try:
            if line is _CANCELLED or lines is None:
                return
            self.t_first_byte_ns = time.monotonic_ns()
            while True:
                t0 = time.monotonic_ns()
                snaps = self._on_line(line, t0)
                self.overhead_ns += time.monotonic_ns() - t0
                for snap in snaps:
                    self.last = snap
                    yield snap
                    if snap.done:
                        return
                if self._cancelled:
                    return
                first = self.last is None
                timeout = max(0.0, deadline - time.monotonic()) if first else eng.stall_timeout_s
                try:
                    line = await self._wait(anext(lines, None), timeout,
                                            "no first byte of the answer" if first else "stream stalled")
                except EngineTimeoutError as e:
                    if first:
                        raise _Retry(e, 0.0) from None
                    raise
                except (httpx.RemoteProtocolError, httpx.ReadError) as e:
                    err = EngineProtocolError(f"{eng.url}: connection lost mid-answer ({type(e).__name__}: "
                                              f"{str(e)[:80]})")
                    if first:
                        raise _Retry(err, 0.2) from None
                    raise err from None
                if line is _CANCELLED:
                    return
                if line is None:
                    break
            if self.assembler.finish_reason is None:
                err = EngineProtocolError(f"{eng.url}: stream ended before [DONE] (disconnected mid-answer)")
                if self.last is None:
                    raise _Retry(err, 0.2)
                raise err
            for snap in self._finish(time.monotonic_ns()):  # finish_reason without [DONE]: llama.cpp-style
                self.last = snap
                yield snap
        finally:
            await _close(resp)

    def _on_line(self, line: str, t_ns: int) -> list[Snapshot]:
        self.lines += 1
        obj = parse_sse_line(line, self.engine.url)
        if obj is None:
            return []
        if obj is DONE:
            return self._finish(t_ns)
        out: list[Snapshot] = []
        for kind, text in self.assembler.feed(obj).items:
            out += self._on_content(text, t_ns) if kind == "content" else [self.canvas.append(text, t_ns)]
        return out

    def _on_content(self, content: str, t_ns: int) -> list[Snapshot]:
        """A content delta: appended (the Mercury engine overrides this for diffusing drafts)."""
        return [self.canvas.append(content, t_ns)]

    def _finish(self, t_ns: int) -> list[Snapshot]:
        u, tot = self.usage, self.engine.usage_total  # the run prices calls from these
        tot.input_tokens = (tot.input_tokens or 0) + (u.input_tokens or 0)
        tot.output_tokens = (tot.output_tokens or 0) + (u.output_tokens or 0)
        out = [self.canvas.append(span, t_ns) for span in self.assembler.close_tools()]
        return out + [self.canvas.finish(t_ns)]

    def __iter__(self) -> Iterator[Snapshot]:
        """Sync iteration: the stream runs in a helper thread's event loop; cancel() works from here."""
        q: queue.Queue[Any] = queue.Queue()
        end = object()

        self._owned_loop = True

        async def pump() -> None:
            async for snap in self:
                q.put(snap)

        def run() -> None:
            try:
                asyncio.run(pump())
            except BaseException as e:  # handed to the consumer's thread
                q.put(e)
            q.put(end)

        th = threading.Thread(target=run, name=f"stream-{self.engine.name}", daemon=True)
        th.start()
        try:
            while (item := q.get()) is not end:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if th.is_alive():
                self.cancel()
                th.join(timeout=5)


async def _close(resp: httpx.Response | None) -> None:
    if resp is not None and not resp.is_closed:
        await resp.aclose()


def _retry_after(resp: httpx.Response) -> float:
    """The server's Retry-After, capped: a caller is waiting, so never more than 2 s."""
    try:
        return min(2.0, max(0.0, float(resp.headers.get("retry-after", "0.5"))))
    except ValueError:
        return 0.5


class OpenAIStreamEngine:
    """Chat completions over SSE from any OpenAI-compatible server."""

    sampler = "stream"
    prefix = "openai"

    def __init__(self, model: str, base_url: str = OPENAI_BASE_URL, api_key_env: str | None = None, *,
                 connect_timeout_s: float = 5.0, first_byte_timeout_s: float = 15.0, stall_timeout_s: float = 10.0,
                 max_tokens: int | None = None, temperature: float | None = 0.0,
                 tools: list[dict[str, Any]] | None = None, extra_body: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        if not model:
            raise EngineSpecError(f"{self.prefix}: a model name is needed, e.g. '{self.prefix}:gpt-4.1-nano'")
        if api_key_env is not None and not os.environ.get(api_key_env):
            raise EngineSpecError(f"{self.prefix}:{model}: environment variable {api_key_env} (the API key) is not set")
        self.model = model
        self.name = f"{self.prefix}:{model}"
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self._api_key_env = api_key_env  # only the variable's name is kept; the key is read per request
        self.connect_timeout_s = connect_timeout_s
        self.first_byte_timeout_s = first_byte_timeout_s
        self.stall_timeout_s = stall_timeout_s
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.tools = tools
        self.extra_body = dict(extra_body or {})
        self.extra_headers = dict(headers or {})
        self.usage_total = Usage(0, 0)  # summed over every finished generation, for pricing a run
        # one client (keep-alive connections) per event loop that streams from this engine
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary())
        self._ssl: ssl.SSLContext | None = None

    @property
    def kind(self) -> str:
        return "autoregressive"

    def new_canvas(self) -> TextCanvas:
        return TextCanvas(block_size=1)

    def client(self, loop: asyncio.AbstractEventLoop, owned: bool = False) -> httpx.AsyncClient:
        """The loop's pooled client; a fresh one for a loop that lives only for one generation."""
        if self._ssl is None:  # built once: httpx builds one per client otherwise (~70 ms each, even for http)
            self._ssl = ssl.create_default_context(cafile=certifi.where())
        if owned or loop not in self._clients:
            c = httpx.AsyncClient(timeout=httpx.Timeout(self.connect_timeout_s, read=None), verify=self._ssl)
            if owned:
                return c
            self._clients[loop] = c
        return self._clients[loop]

    def headers(self) -> dict[str, str]:
        h = {"Accept": "text/event-stream", **self.extra_headers}
        key = os.environ.get(self._api_key_env) if self._api_key_env else None
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def request_body(self, messages: Sequence[dict[str, str]], **overrides: object) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages], "stream": True,
                                "stream_options": {"include_usage": True}}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.tools:
            body["tools"] = self.tools
        body |= self.extra_body
        for k, v in overrides.items():
            if k not in _BODY_OVERRIDES:
                raise EngineSpecError(f"{self.name}: unknown generation option '{k}' "
                                      f"(one of {', '.join(sorted(_BODY_OVERRIDES))})")
            body[_BODY_OVERRIDES[k]] = v
        return body

    def describe(self) -> dict[str, Any]:
        """The request as configured (never the key, nor the variable holding it)."""
        return {"engine": self.name, "sampler": self.sampler, "kind": self.kind, "protocol": "openai-chat-sse",
                "base_url": self.base_url, "model": self.model, "auth": "bearer" if self._api_key_env else "none",
                "connect_timeout_s": self.connect_timeout_s, "first_byte_timeout_s": self.first_byte_timeout_s,
                "stall_timeout_s": self.stall_timeout_s, "max_tokens": self.max_tokens,
                "temperature": self.temperature, "extra_body": dict(self.extra_body)}

    def generate(self, messages: Sequence[dict[str, str]], **overrides: object) -> StreamGeneration:
        return self._generation(self.request_body(messages, **overrides))

    def _generation(self, body: dict[str, Any]) -> StreamGeneration:
        return StreamGeneration(self, body)

    def warm_up(self) -> None:
        """Nothing to pay ahead: connections belong to the event loop that streams (one per generation)."""

    def close(self) -> None:
        """Close the pooled clients of loops still running (others closed with their loop)."""
        for loop, c in list(self._clients.items()):
            if loop.is_running() and not loop.is_closed():
                asyncio.run_coroutine_threadsafe(c.aclose(), loop)
        self._clients.clear()

