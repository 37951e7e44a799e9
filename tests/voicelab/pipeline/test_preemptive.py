"""Preemptive generation: a reply started before the turn is confirmed is held, then released or dropped.

Runs the real tiny diffusion engine through the real engine service, gate and hold processor: what leaves
the hold is what the speaker would play.
"""

from __future__ import annotations

from typing import Any

import pytest
from pipecat.frames.frames import LLMContextFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.tests.utils import SleepFrame, run_test

from engines.local.engine import open_engine
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind as K
from voicelab.pipeline.frames import ChunkTextFrame, PreemptFrame
from voicelab.pipeline.processors.gate_processor import GateProcessor
from voicelab.pipeline.processors.preempt_hold import PreemptHold
from voicelab.pipeline.services.llm_service import EngineLLMService, same_words


@pytest.fixture(scope="module")
def engine() -> Any:
    eng = open_engine("diffusion")
    yield eng
    eng.close()


def _pipeline(engine: Any, log: CallLog, context: LLMContext) -> tuple[Pipeline, EngineLLMService, PreemptHold]:
    llm = EngineLLMService(engine, log, preemptive=True, context=context)
    hold = PreemptHold()
    return Pipeline([llm, GateProcessor(log, "pinned"), hold]), llm, hold


def _confirmed(text: str) -> LLMContext:
    return LLMContext(messages=[{"role": "user", "content": text}])


def _spoken(frames: list[Any]) -> str:
    return " ".join(f.text for f in frames if isinstance(f, ChunkTextFrame))


@pytest.mark.slow
async def test_hit_releases_the_held_reply_without_a_second_generation(engine: Any) -> None:
    log = CallLog("c")
    pipeline, llm, _ = _pipeline(engine, log, LLMContext())
    words = "what time do you open on saturday"
    down, _ = await run_test(pipeline, frames_to_send=[
        PreemptFrame(text=words), SleepFrame(sleep=1.0), LLMContextFrame(context=_confirmed(words)),
        SleepFrame(sleep=1.0)])
    outcomes = [e.payload["outcome"] for e in log.events if e.kind == K.PREEMPT_RESULT]
    assert outcomes == ["hit"]
    assert llm.generations == 1  # the confirmed turn did not generate again
    assert "saturday" in _spoken(down)


@pytest.mark.slow
async def test_miss_drops_every_stale_chunk_and_answers_the_final_words(engine: Any) -> None:
    log = CallLog("c")
    pipeline, llm, hold = _pipeline(engine, log, LLMContext())
    down, _ = await run_test(pipeline, frames_to_send=[
        PreemptFrame(text="what time do you open on sunday"), SleepFrame(sleep=1.0),
        LLMContextFrame(context=_confirmed("what time do you open on saturday")), SleepFrame(sleep=1.0)])
    results = [e.payload for e in log.events if e.kind == K.PREEMPT_RESULT]
    assert [r["outcome"] for r in results] == ["miss"] and results[0]["wasted_engine_ms"] > 0
    assert llm.generations == 2
    assert hold.dropped > 0  # the stale reply reached the hold, and went no further
    spoken = _spoken(down)
    assert "saturday" in spoken and "sunday" not in spoken
    assert sum(1 for e in log.events if e.kind == K.ENGINE_DONE) == 2


@pytest.mark.slow
async def test_a_miss_mid_generation_cancels_the_engine(engine: Any) -> None:
    log = CallLog("c")
    pipeline, _, _ = _pipeline(engine, log, LLMContext())
    down, _ = await run_test(pipeline, frames_to_send=[
        PreemptFrame(text="can i book a tune up on monday at 9 am my name is anna"),
        LLMContextFrame(context=_confirmed("where are you located")), SleepFrame(sleep=1.5)])
    assert [e.payload["outcome"] for e in log.events if e.kind == K.PREEMPT_RESULT] == ["miss"]
    done = [e.payload for e in log.events if e.kind == K.ENGINE_DONE]
    # the stale generation was cancelled before its first step, or during its steps: never finished
    assert not done[-1]["cancelled"] and all(d["cancelled"] for d in done[:-1])
    assert "anna" not in _spoken(down) and "monday" not in _spoken(down)


async def test_the_caller_going_on_withdraws_the_answer(engine: Any) -> None:
    log = CallLog("c")
    pipeline, _, hold = _pipeline(engine, log, LLMContext())
    down, _ = await run_test(pipeline, frames_to_send=[
        PreemptFrame(text="i would like to book"), SleepFrame(sleep=0.5), PreemptFrame(text=""),
        SleepFrame(sleep=0.5)])
    assert [e.payload["outcome"] for e in log.events if e.kind == K.PREEMPT_RESULT] == ["miss"]
    assert _spoken(down) == ""


def test_same_words_ignores_case_punctuation_and_number_spelling() -> None:
    assert same_words("Book me at three thirty.", "book me at 3 30")
    assert not same_words("open on sunday", "open on saturday")
