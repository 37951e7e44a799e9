"""The OpenAI chat-completions streaming protocol, read: SSE lines in, content deltas, finished tool
calls, finish_reason and usage out (facts and sources: docs/engines.md).

Plain Python, no I/O: the HTTP engines feed it lines; the mock server and the tests write the same
format. Tool calls are rendered as the tiny engines' spans, `[name(key=value, ...)]`, so the gate
never speaks them and parses them like any other tool call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from engines.errors import EngineProtocolError
from engines.protocol import Usage

DONE = object()  # the `data: [DONE]` sentinel


@dataclass
class ToolCallParts:
    """One tool call assembled from its fragments (every field but the index may arrive late)."""

    index: int
    id: str = ""
    name: str = ""
    arguments: str = ""  # JSON text, concatenated from string pieces

    def span(self) -> str:
        return render_tool_span(self.name, self.arguments)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.id, "name": self.name, "arguments": self.arguments}


def _value(v: Any) -> str:
    s = v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))
    # the gate ends a span at the first "]": keep brackets out of values
    s = s.replace("[", "(").replace("]", ")")
    if any(c in s for c in ",'\"=") or s != s.strip():
        q = '"' if '"' not in s else "'"
        s = q + s.replace(q, "") + q
    return s


def render_tool_span(name: str, arguments: str) -> str:
    """`[name(k=v, ...)]` from a function name and its JSON arguments (raw text if not a JSON object)."""
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        args = None
    if isinstance(args, dict):
        body = ", ".join(f"{k}={_value(v)}" for k, v in args.items())
    else:
        body = f"arguments={_value(arguments)}"
    return f"[{name or 'tool'}({body})]"


def parse_sse_line(line: str, where: str) -> dict[str, Any] | object | None:
    """One SSE line: the chunk's JSON, DONE, or None for lines without data (comments, blanks, event:)."""
    if not line or line.startswith(":"):
        return None
    field_name, _, value = line.partition(":")
    if field_name != "data":
        if field_name in ("event", "id", "retry"):
            return None
        raise EngineProtocolError(f"{where}: malformed SSE line {line[:60]!r}")
    value = value[1:] if value.startswith(" ") else value
    if value.strip() == "[DONE]":
        return DONE
    try:
        obj = json.loads(value)
    except json.JSONDecodeError as e:
        raise EngineProtocolError(f"{where}: malformed JSON in SSE data ({e.msg}): {value[:60]!r}") from None
    if not isinstance(obj, dict):
        raise EngineProtocolError(f"{where}: SSE data is not a JSON object: {value[:60]!r}")
    if "error" in obj and "choices" not in obj:
        raise EngineProtocolError(f"{where}: error in stream: {str(obj['error'])[:120]}")
    return obj


@dataclass
class ChunkUpdate:
    """What one chunk added, in answer order: ("content", text) and ("tool", span) items, and the finish reason."""

    items: list[tuple[str, str]] = field(default_factory=list)
    finish_reason: str | None = None


class ChunkAssembler:
    """Reads chat.completion.chunk objects of one answer (choice 0) and keeps the answer's state."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.tools: dict[int, ToolCallParts] = {}
        self._open: int | None = None  # the tool call whose fragments are still arriving
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.model: str | None = None
        self.chunks = 0

    def feed(self, chunk: dict[str, Any]) -> ChunkUpdate:
        self.chunks += 1
        up = ChunkUpdate()
        self.model = chunk.get("model", self.model)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = Usage(usage.get("prompt_tokens"), usage.get("completion_tokens"))
        choices = chunk.get("choices") or []  # the usage chunk has [] (vLLM: null)
        if not isinstance(choices, list):
            raise EngineProtocolError(f"{self.where}: 'choices' is not a list in chunk {str(chunk)[:80]}")
        for ch in choices:
            if not isinstance(ch, dict) or ch.get("index", 0) != 0:
                continue
            delta = ch.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                # content after tool fragments: that tool call is complete, and came first
                up.items += [("tool", s) for s in self.close_tools()] + [("content", content)]
            for frag in delta.get("tool_calls") or []:
                self._tool_fragment(frag, up)
            if ch.get("finish_reason"):
                up.finish_reason = self.finish_reason = ch["finish_reason"]
                up.items += [("tool", s) for s in self.close_tools()]
        return up

    def _tool_fragment(self, frag: dict[str, Any], up: ChunkUpdate) -> None:
        idx = frag.get("index")
        if not isinstance(idx, int):
            raise EngineProtocolError(f"{self.where}: tool_calls fragment without an integer index")
        if self._open is not None and idx != self._open:
            up.items += [("tool", s) for s in self.close_tools()]  # a new index: the previous call is complete
        tc = self.tools.setdefault(idx, ToolCallParts(idx))
        self._open = idx
        tc.id = frag.get("id") or tc.id
        fn = frag.get("function") or {}
        tc.name += fn.get("name") or ""
        tc.arguments += fn.get("arguments") or ""

    def close_tools(self) -> list[str]:
        """Spans of the tool call still open (none if none): called at a new index and at the end."""
        if self._open is None:
            return []
        span = self.tools[self._open].span()
        self._open = None
        return [span]

    def tool_calls(self) -> list[dict[str, Any]]:
        return [self.tools[i].to_dict() for i in sorted(self.tools)]
