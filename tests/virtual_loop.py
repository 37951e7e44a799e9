"""An asyncio event loop on a virtual clock, for running pipecat strategies against the bench's replays."""

from __future__ import annotations

import asyncio
from typing import Any

from pipecat.clocks.system_clock import SystemClock
from pipecat.processors.frame_processor import FrameProcessorSetup
from pipecat.utils.asyncio.task_manager import TaskManager, TaskManagerParams

from voicelab.pcm import SAMPLE_RATE


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


async def started(strategy: Any, loop: VirtualLoop) -> list[float]:
    """Set up a pipecat user-turn stop strategy on `loop` and open a user turn; the returned list gets the
    virtual time of each turn end the strategy declares."""
    tm = TaskManager()
    tm.setup(TaskManagerParams(loop=loop))
    await strategy.setup(FrameProcessorSetup(clock=SystemClock(), task_manager=tm, pipeline_worker=None,  # type: ignore[arg-type]
                                             audio_in_sample_rate=SAMPLE_RATE))
    ended: list[float] = []

    async def on_stopped(*_: Any) -> None:
        ended.append(loop.time())

    strategy.add_event_handler("on_user_turn_stopped", on_stopped)
    await strategy.handle_user_turn_started()
    return ended
