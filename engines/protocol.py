"""The engine protocol: the one contract every text engine meets (docs/architecture.md).

Implemented by `engines.local.engine.Engine` (the tiny and real checkpoints), `engines.trace.ReplayEngine`
and every engine to come (HTTP clients, timing profiles). The voice pipeline, the web demo and the
run writer use only these members, so nothing probes an engine with getattr.

Plain Python, no torch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from engines.snapshot import Snapshot


@dataclass
class Usage:
    """Tokens a call was billed for (the usage chunk; None fields if the server sent none)."""

    input_tokens: int | None = None
    output_tokens: int | None = None

    def to_dict(self) -> dict[str, int | None]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@runtime_checkable
class GenerationLike(Protocol):
    """One answer being generated: iterate it (sync or async); pin() and cancel() from anywhere."""

    def pin(self, n: int) -> None:
        """The first n generated tokens are final: the engine never changes them again."""

    def cancel(self) -> None:
        """Stop within one step (HTTP engines: close the stream)."""

    @property
    def cancelled(self) -> bool: ...

    def __iter__(self) -> Iterator[Snapshot]: ...

    def __aiter__(self) -> AsyncIterator[Snapshot]: ...


@runtime_checkable
class ReportsUsage(Protocol):
    """A generation that knows its token counts (HTTP engines: the server's usage; local ones: the tokenizer's).

    Not part of GenerationLike: wrappers and replays need not know them; the run prices what it can."""

    @property
    def usage(self) -> Usage: ...


@runtime_checkable
class EngineLike(Protocol):
    """A text engine: a chat in, snapshots out."""

    name: str  # which model ("diffusion", a folder name, "replay:…", "openai:MODEL", "profile:NAME")
    sampler: str  # which decoding ("threshold", "autoregressive", "replay", "stream", …)

    @property
    def kind(self) -> str:
        """'diffusion', 'autoregressive' or 'replay': what its snapshots may do (revise or only append)."""

    def describe(self) -> dict[str, Any]:
        """Everything needed to repeat a run with this engine (written to config.json; never secrets)."""

    def generate(self, messages: Sequence[dict[str, str]], **overrides: object) -> GenerationLike:
        """Start one answer to a chat (role/content messages)."""

    def warm_up(self) -> None:
        """Pay one-time costs (first forward, connection) before a call starts; may do nothing."""

    def close(self) -> None:
        """Release threads, sockets, memory."""


class EngineWrapper:
    """An engine around another one: everything but `generate` is the inner engine's (watchdogs, faults)."""

    def __init__(self, inner: EngineLike) -> None:
        self.inner = inner
        self.name = inner.name
        self.sampler = inner.sampler

    @property
    def kind(self) -> str:
        return self.inner.kind

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def generate(self, messages: Sequence[dict[str, str]], **overrides: object) -> GenerationLike:
        return self.inner.generate(messages, **overrides)

    def warm_up(self) -> None:
        self.inner.warm_up()

    def close(self) -> None:
        self.inner.close()


class GenerationWrapper:
    """A generation around another one: pin, cancel and the streams are the inner one's unless overridden."""

    def __init__(self, inner: GenerationLike) -> None:
        self.inner = inner

    def pin(self, n: int) -> None:
        self.inner.pin(n)

    def cancel(self) -> None:
        self.inner.cancel()

    @property
    def cancelled(self) -> bool:
        return self.inner.cancelled

    def __iter__(self) -> Iterator[Snapshot]:
        return iter(self.inner)

    def __aiter__(self) -> AsyncIterator[Snapshot]:
        return aiter(self.inner)

    def __getattr__(self, name: str) -> Any:
        # what the inner generation also knows (its token `usage`, for pricing) shows through the wrapper
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
