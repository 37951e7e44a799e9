"""Watchdogs: documented limits that end a stuck turn or call cleanly, log why, and let the next call run.

| limit (`Limits`)            | default | what happens when it is passed                                         |
|-----------------------------|---------|------------------------------------------------------------------------|
| `engine_first_snapshot_s`   | 10 s    | the reply ends (no text), `watchdog` + `error` rows, the call goes on  |
| `engine_total_s`            | 30 s    | the reply ends where it is (text released so far is spoken)            |
| `tts_chunk_s`               | 10 s    | the chunk ends (the wait for its next sentence of audio), the reply goes on |
| `stt_final_s`               | 3 s     | logged: no final transcript that long after the VAD stop; pipecat's turn-stop timeout ends the turn without a reply |
| `call_s`                    | derived | the call is hung up (`call_limit` row) and the run goes on to the next call |

`call_s` None derives the limit from the fixture: its clips and delays, one no-reply timeout per turn, plus
`call_extra_s` (60 s). After the limit (or after the caller's script ended and the pipeline did not stop
within `grace_s`), the call is hung up: a `CancelFrame` from the caller's side, then the runner is cancelled,
then its task; each step waits at most `grace_s`, so `run_call` always returns.

The defaults are far above what any healthy component takes here (the tiny engine's first snapshot takes
~50 ms, an 8B model on a GPU or a hosted API a few hundred ms; Piper synthesizes a sentence in ~70 ms;
pocketsphinx finalizes in ~200 ms): a limit fires only on a stall, never on a slow but working call.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pipecat.frames.frames import (
    Frame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from engines.protocol import EngineLike, EngineWrapper, GenerationLike, GenerationWrapper
from engines.snapshot import Snapshot
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind

K = EventKind
T = TypeVar("T")


class WatchdogTimeout(Exception):
    """A component passed its limit; the message says which limit and how long."""


@dataclass(frozen=True)
class Limits:
    """The watchdog limits of one call, in seconds (see the module doc)."""

    engine_first_snapshot_s: float = 10.0
    engine_total_s: float = 30.0
    tts_chunk_s: float = 10.0
    stt_final_s: float = 3.0
    call_s: float | None = None
    call_extra_s: float = 60.0
    end_wait_s: float = 10.0  # after the caller's script ends, for the pipeline to stop by itself
    grace_s: float = 5.0  # for each step of hanging up a call that did not stop

    def __post_init__(self) -> None:
        for name in ("engine_first_snapshot_s", "engine_total_s", "tts_chunk_s", "stt_final_s", "call_extra_s",
                     "end_wait_s", "grace_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"limits: {name} must be > 0 s, got {getattr(self, name)}")
        if self.call_s is not None and not self.call_s > 0:
            raise ValueError(f"limits: call_s must be > 0 s, got {self.call_s}")

    def call_limit_s(self, script_s: float, turns: int, no_reply_timeout_s: float) -> float:
        """The whole-call limit: `call_s`, or the script's length plus a no-reply timeout per turn plus slack."""
        if self.call_s is not None:
            return self.call_s
        return script_s + no_reply_timeout_s * turns + self.call_extra_s


def fire(log: CallLog | None, what: str, limit_s: float, turn: int | None = None, **extra: Any) -> WatchdogTimeout:
    """Log the `watchdog` row and return the exception that ends the stuck step."""
    if log is not None:
        log.log(K.WATCHDOG, turn, {"what": what, "limit_s": limit_s, **extra})
    return WatchdogTimeout(f"{what} limit of {limit_s:g} s passed")


async def guard(step: Awaitable[T], limit_s: float | None, log: CallLog | None, what: str,
                turn: int | None = None) -> T:
    """Await `step` for at most `limit_s` (None: no limit); past it, log and raise `WatchdogTimeout`."""
    if limit_s is None:
        return await step
    try:
        return await asyncio.wait_for(step, timeout=limit_s)
    except TimeoutError:
        raise fire(log, what, limit_s, turn) from None


# ---- engine ------------------------------------------------------------------------------------------------

class WatchedGeneration(GenerationWrapper):
    """A generation whose async stream is bounded: first snapshot within one limit, the whole within another."""

    def __init__(self, inner: GenerationLike, log: CallLog, limits: Limits, turn: int) -> None:
        super().__init__(inner)
        self._log = log
        self._limits = limits
        self._turn = turn

    async def __aiter__(self) -> AsyncIterator[Snapshot]:
        lim = self._limits
        start = time.monotonic()
        stream = aiter(self.inner)
        first = True
        try:
            while True:
                left = lim.engine_total_s - (time.monotonic() - start)
                what, limit = ("engine_total", lim.engine_total_s)
                if first and lim.engine_first_snapshot_s < left:
                    what, limit, left = "engine_first_snapshot", lim.engine_first_snapshot_s, lim.engine_first_snapshot_s
                if left <= 0:
                    raise fire(self._log, what, limit, self._turn)
                try:
                    snap = await asyncio.wait_for(anext(stream), timeout=left)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    raise fire(self._log, what, limit, self._turn) from None
                first = False
                yield snap
        finally:
            self.inner.cancel()  # a stalled engine must not keep stepping for nobody


class WatchedEngine(EngineWrapper):
    """An `EngineLike` whose generations are bounded by `Limits` (see the module doc)."""

    def __init__(self, inner: EngineLike, log: CallLog, limits: Limits) -> None:
        super().__init__(inner)
        self._log = log
        self._limits = limits

    def generate(self, messages: Sequence[dict[str, str]], **overrides: object) -> WatchedGeneration:
        return WatchedGeneration(self.inner.generate(messages, **overrides), self._log, self._limits,
                                 self._log.request_turn)


# ---- STT ---------------------------------------------------------------------------------------------------

class SttFinalWatchdog(FrameProcessor):
    """Between the STT and the user aggregator: logs a `watchdog` row (what `stt_final`) when no final
    transcript follows a VAD stop within `limit_s` (and the caller did not start speaking again)."""

    def __init__(self, log: CallLog, limit_s: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._log = log
        self._limit_s = limit_s
        self._timer: asyncio.Task[None] | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, VADUserStoppedSpeakingFrame):
            await self._stop_timer()
            self._timer = self.create_task(self._expire(), name="stt_final_watchdog")
        elif isinstance(frame, VADUserStartedSpeakingFrame) or (
                isinstance(frame, TranscriptionFrame) and frame.finalized):
            await self._stop_timer()
        await self.push_frame(frame, direction)

    async def _expire(self) -> None:
        await asyncio.sleep(self._limit_s)
        self._timer = None
        fire(self._log, "stt_final", self._limit_s, self._log.caller_turn_at(self._log.now_ns()))

    async def _stop_timer(self) -> None:
        if self._timer is not None:
            timer, self._timer = self._timer, None
            await self.cancel_task(timer)

    async def cleanup(self) -> None:
        await super().cleanup()
        await self._stop_timer()


# ---- the whole call ----------------------------------------------------------------------------------------

async def run_within(run: Coroutine[Any, Any, None], limits: Limits, limit_s: float, log: CallLog, *,
                     finished: asyncio.Event, hang_up: Callable[[], Awaitable[None]],
                     cancel_runner: Callable[[], Awaitable[None]]) -> bool:
    """Run the call's pipeline and make sure it ends. The caller's script is over when `finished` is set (the
    player then queues an EndFrame, or set it at its own `limit_s`); if the pipeline has not stopped
    `end_wait_s` later, or `limit_s + end_wait_s` after the start whatever happens, it is hung up: `hang_up`,
    then `cancel_runner`, then its task is cancelled, each given `grace_s`. Returns True when it had to be cut
    (a `watchdog` row, what `call_end`, or a `call_limit` row says why)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s + limits.end_wait_s
    task = asyncio.ensure_future(run)
    over = asyncio.ensure_future(finished.wait())
    try:
        await asyncio.wait({task, over}, timeout=limit_s + limits.end_wait_s, return_when=asyncio.FIRST_COMPLETED)
        if over.done() and not task.done():  # the queued EndFrame should stop the pipeline by now
            await asyncio.wait({task}, timeout=max(0.0, min(limits.end_wait_s, deadline - loop.time())))
        if task.done():
            task.result()
            return False
        if loop.time() >= deadline - 1e-3:
            log.log(K.CALL_LIMIT, -1, {"limit_s": round(limit_s, 3)})
        else:
            fire(log, "call_end", limits.end_wait_s, -1)
        await _stop(task, hang_up, cancel_runner, limits.grace_s)
        return True
    finally:
        over.cancel()


async def _stop(task: asyncio.Future[None], hang_up: Callable[[], Awaitable[None]],
                cancel_runner: Callable[[], Awaitable[None]], grace_s: float) -> None:
    """Escalate until the pipeline task is done (or has been given up on)."""
    for step in (hang_up, cancel_runner):
        with contextlib.suppress(Exception):  # a step that fails only moves on to the next one
            await asyncio.wait_for(step(), timeout=grace_s)
        await asyncio.wait({task}, timeout=grace_s)
        if task.done():
            return
    task.cancel()
    await asyncio.wait({task}, timeout=grace_s)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: a pipeline cut short may end in an error, already logged by its processors
