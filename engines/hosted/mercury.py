"""Inception's Mercury (a hosted diffusion model) over its OpenAI-compatible API, plus its own request
fields `realtime` and `diffusing`.

With `diffusing`, chunks carry intermediate drafts. Two shapes exist in the wild (the official one
could not be verified offline, docs/engines.md): each chunk's `delta.content` is
the whole current draft (replace), or a piece to append (append). `shape="auto"` decides from the
second content chunk: a chunk at least half as long as the text so far that matches its start is a
replacement. Replacements become snapshots whose changed positions are `revised`, so the revision
taxonomy, the gate and the canvas see the model's rewrites. describe() says which shapes were seen.
"""

from __future__ import annotations

import difflib
from typing import Any

from engines.errors import EngineSpecError
from engines.hosted.openai_stream import OpenAIStreamEngine, StreamGeneration
from engines.snapshot import Snapshot
from engines.text_canvas import split_pieces

MERCURY_BASE_URL = "https://api.inceptionlabs.ai/v1"
SHAPES = ("auto", "replace", "append")


def looks_like_replacement(current: str, chunk: str) -> bool:
    """Is `chunk` a new whole draft of `current` rather than a piece to append to it?

    A draft is about as long as the text so far and matches most of it where they overlap (a denoiser
    fixes some positions per step); an appended delta is new text. On the tiny engines' drafts a draft
    pair scores >= 0.44 and a delta <= 0.38 (measured on a 56-word answer in blocks of 8).
    """
    if not current.strip() or len(chunk) < 0.8 * len(current):
        return False
    if chunk.startswith(current[:16]) and len(chunk) >= len(current):
        return True
    return _similar(current, chunk) >= 0.42


def _similar(current: str, chunk: str) -> float:
    """How much of `current` the start of `chunk` restates (0..1)."""
    return difflib.SequenceMatcher(None, current, chunk[:len(current)], autojunk=False).ratio()


class MercuryGeneration(StreamGeneration):
    engine: MercuryEngine

    def __init__(self, engine: MercuryEngine, body: dict[str, Any]) -> None:
        super().__init__(engine, body)
        self.shape: str | None = engine.shape if engine.shape != "auto" else None
        self.content_chunks = 0
        self._prev = ""  # the previous content chunk

    def _on_content(self, content: str, t_ns: int) -> list[Snapshot]:
        if not self.engine.diffusing:
            return super()._on_content(content, t_ns)
        self.content_chunks += 1
        if self.shape is None and self.content_chunks >= 2:
            self.shape = "replace" if looks_like_replacement(self.canvas.text, content) else "append"
            self.engine.shapes_seen[self.shape] = self.engine.shapes_seen.get(self.shape, 0) + 1
        elif (self.shape == "append" and self.engine.shape == "auto" and len(content) >= len(self._prev)
              and _similar(self._prev, content) >= 0.7):
            # a chunk that redrafts the previous one closely: the guess was wrong, these are drafts
            self.shape = "replace"
            self.engine.shapes_seen["replace-late"] = self.engine.shapes_seen.get("replace-late", 0) + 1
        self._prev = content
        if self.shape == "replace" or (self.shape is None and self.content_chunks == 1):
            return [self.canvas.replace(split_pieces(content), t_ns)]
        return [self.canvas.append(content, t_ns)]


class MercuryEngine(OpenAIStreamEngine):
    """Mercury chat completions; `diffusing=True` streams drafts that may revise earlier text."""

    prefix = "mercury"

    def __init__(self, model: str = "mercury-2", base_url: str = MERCURY_BASE_URL, api_key_env: str | None = None, *,
                 realtime: bool | None = True, diffusing: bool = False, shape: str = "auto",
                 reasoning_effort: str | None = None, **kw: Any) -> None:
        if shape not in SHAPES:
            raise EngineSpecError(f"mercury:{model}: unknown diffusing shape '{shape}' (one of {', '.join(SHAPES)})")
        super().__init__(model, base_url, api_key_env, **kw)
        self.realtime = realtime
        self.diffusing = diffusing
        self.shape = shape
        self.reasoning_effort = reasoning_effort
        self.shapes_seen: dict[str, int] = {}  # generations per detected shape (diffusing only)
        if realtime is not None:
            self.extra_body["realtime"] = realtime  # pipecat's Inception service sends it: faster first block
        if diffusing:
            self.extra_body["diffusing"] = True
        if reasoning_effort is not None:
            self.extra_body["reasoning_effort"] = reasoning_effort

    @property
    def kind(self) -> str:
        # drafts may revise text only when diffusing; otherwise the deltas are append-only
        return "diffusion" if self.diffusing else "autoregressive"

    def describe(self) -> dict[str, Any]:
        return super().describe() | {"realtime": self.realtime, "diffusing": self.diffusing, "shape": self.shape,
                                     "reasoning_effort": self.reasoning_effort,
                                     "shapes_seen": dict(self.shapes_seen)}

    def _generation(self, body: dict[str, Any]) -> MercuryGeneration:
        return MercuryGeneration(self, body)
