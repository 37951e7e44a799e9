"""An asyncio event loop on a virtual clock, for running pipecat strategies against the bench's replays."""

from __future__ import annotations

import asyncio


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop on a virtual clock: with nothing ready, time jumps to the next timer."""

    def __init__(self) -> None:
        super().__init__()
        self._now = 0.0

    def time(self) -> float:
        return self._now

    def _run_once(self) -> None:
        ready = getattr(self, "_ready")  # noqa: B009 - the base loop's own queues
        scheduled = getattr(self, "_scheduled")  # noqa: B009
        if not ready and scheduled:
            self._now = max(self._now, scheduled[0].when())
        super()._run_once()  # type: ignore[misc]
