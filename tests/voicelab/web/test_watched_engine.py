"""A live session's engine runs behind the same watchdog as a recorded call's (`WatchedEngine`): a stalled
engine ends the reply (a `watchdog` row), it cannot hang the browser session."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from pipecat.observers.base_observer import BaseObserver

from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.processors.watchdog import Limits, WatchedEngine
from voicelab.pipeline.services.llm_service import EngineLLMService
from voicelab.pipeline.turns.turn_models import TurnModels
from voicelab.web.calllog import LiveCallLog
from voicelab.web.pipeline import build_live_pipeline


class Stalled:
    """An engine whose generation never yields a snapshot."""

    name = "stalled"
    sampler = "none"
    kind = "diffusion"

    def generate(self, _messages: Any, **_kw: object) -> Any:
        import asyncio

        class Gen:
            cancelled = False

            def pin(self, n: int) -> None:
                pass

            def cancel(self) -> None:
                self.cancelled = True

            def __aiter__(self) -> Any:
                return self

            async def __anext__(self) -> Any:
                await asyncio.sleep(3600)

        return Gen()

    def describe(self) -> dict[str, Any]:
        return {}

    def warm_up(self) -> None:
        pass

    def close(self) -> None:
        pass


class Pool:
    def __init__(self) -> None:
        self.turn_models = TurnModels()

    async def get(self, _cfg: PipelineConfig) -> Any:
        # the voice is not used before a chunk is spoken
        return SimpleNamespace(engine=Stalled(), voice=object(), recognizer=None, decision=None)


class Transport:
    def input(self) -> Any:
        from pipecat.processors.frame_processor import FrameProcessor
        return FrameProcessor(name="in")

    def output(self) -> Any:
        from pipecat.processors.frame_processor import FrameProcessor
        return FrameProcessor(name="out")


async def test_live_pipeline_engine_is_watched_and_a_stall_ends_the_reply() -> None:
    cfg = PipelineConfig(stt="pocketsphinx", turn="timeout:500", greeting="", preemptive=False)
    log = LiveCallLog("live-test")
    session = SimpleNamespace(cfg=cfg, log=log, pool=Pool(), canvas=SimpleNamespace(spoken_words=None),
                              page_observer=BaseObserver(), engine=None, voice=None, mic=None, playout=None)
    worker = await build_live_pipeline(session, Transport())
    llms = [p for p in _flat(worker.pipeline) if isinstance(p, EngineLLMService)]
    assert len(llms) == 1 and isinstance(llms[0].engine, WatchedEngine)
    assert isinstance(llms[0].engine.inner, Stalled) and session.engine is llms[0].engine.inner

    # the wrapped engine's stall ends within its limit and logs why
    watched = WatchedEngine(session.engine, log, Limits(engine_first_snapshot_s=0.2, engine_total_s=1.0))
    with pytest.raises(Exception, match="engine_first_snapshot limit"):
        async for _ in watched.generate([{"role": "user", "content": "hi"}]):
            pass
    assert any(e.kind == "watchdog" and e.payload["what"] == "engine_first_snapshot" for e in log.events)



def _flat(p: Any) -> list[Any]:
    """Every processor of a pipeline, nested pipelines opened."""
    inner = getattr(p, "processors", None)
    return [p] if not inner else [q for sub in inner for q in _flat(sub)]
