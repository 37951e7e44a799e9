"""Piper that fails on purpose, for `voicelab run --inject tts:...` (see `voicelab.rules.faults`).

`FaultyPiperTTS` raises on the targeted reply's first sentence, or never delivers it (a stall: ending it is
the watchdogs' job); the other injected faults are `voicelab.pipeline.processors.faults_wrappers`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

from voicelab.pipeline.processors.faults_wrappers import fail
from voicelab.pipeline.services.tts_piper import PackagedPiperTTS, Sentence
from voicelab.rules.faults import FaultPlan


class FaultyPiperTTS(PackagedPiperTTS):
    """Piper whose targeted reply fails at its first sentence (see the module doc)."""

    def __init__(self, *, plan: FaultPlan, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._plan = plan

    async def _sentence(self, loop: asyncio.AbstractEventLoop, it: Iterator[Sentence], turn: int) -> Sentence | None:
        fault = self._plan.take("tts", turn)
        if fault is not None:
            await fail(fault)
        return await super()._sentence(loop, it, turn)


def faulty_tts_factory(plan: FaultPlan, base: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """A `tts_factory` for `run_call`: Piper with the plan's TTS faults (`base` must be a Piper subclass)."""
    cls = base if isinstance(base, type) and issubclass(base, PackagedPiperTTS) else PackagedPiperTTS
    faulty = type(f"Faulty{cls.__name__}", (FaultyPiperTTS, cls), {})

    def make(**kw: Any) -> Any:
        return faulty(plan=plan, **kw)
    return make
