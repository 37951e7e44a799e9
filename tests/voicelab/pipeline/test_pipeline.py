"""Engine LLM service + gate processor as pipecat processors, and the pipeline configuration."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pipecat.frames.frames import InterruptionFrame, LLMContextFrame, LLMFullResponseEndFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.tests.utils import SleepFrame, run_test

from engines.snapshot import Snapshot
from engines.trace import ReplayEngine
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind as K
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.pipeline.frames import ChunkTextFrame
from voicelab.pipeline.processors.gate_processor import GateProcessor
from voicelab.pipeline.services.llm_service import EngineLLMService, chat_messages
from voicelab.rules.turn_kinds import TurnSpec

ANSWER = "on friday we are open from 9 am to 8 pm. can i help with anything else?"


def write_trace(path: Path, answers: list[tuple[str, str]], step_ms: int = 5, confidence: float = 0.9) -> Path:
    """A trace whose generations unmask one word per step, left to right (a safe, prefix-only sampler), each
    word committed with `confidence`."""
    with path.open("w") as f:
        f.write(json.dumps({"type": "header", "engine": "scripted", "sampler": "threshold", "version": 1}) + "\n")
        for user, ans in answers:
            f.write(json.dumps({"type": "generation", "messages": [{"role": "user", "content": user}]}) + "\n")
            pieces = [("" if i == 0 else " ") + w for i, w in enumerate(ans.split(" "))] + [""]
            n = len(pieces)
            for k in range(n):
                masked = [i > k for i in range(n)]
                snap = Snapshot(step=k, t_ns=0, tokens=tuple(range(10, 10 + n)), masked=tuple(masked),
                                confidence=(confidence,) * n, guesses=tuple(range(10, 10 + n)),
                                pieces=tuple("" if m else p for m, p in zip(masked, pieces, strict=True)),
                                eos=n - 1 if k == n - 1 else None, block_size=n, blocks_done=0, pinned=0,
                                forwards=k + 1, done=k == n - 1)
                f.write(json.dumps({"type": "snapshot", "dt_ns": (k + 1) * step_ms * 1_000_000,
                                    **snap.to_dict()}) + "\n")
    return path


class FailingEngine:
    """A real engine whose generation raises after `fail_at` steps (a checkpoint read failing mid-stream)."""

    def __init__(self, inner: Any, fail_at: int, fail_generations: tuple[int, ...] = (1,)) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "engine")
        self.sampler = getattr(inner, "sampler", "?")
        self.fail_at = fail_at
        self.fail_generations = fail_generations
        self.calls = 0

    def describe(self) -> dict[str, Any]:
        return {"engine": self.name, "failing_at_step": self.fail_at}

    def generate(self, messages: Any) -> Any:
        self.calls += 1
        gen = self.inner.generate(messages)
        if self.calls not in self.fail_generations:
            return gen
        return _FailingGeneration(gen, self.fail_at)


class _FailingGeneration:
    def __init__(self, gen: Any, fail_at: int) -> None:
        self.gen = gen
        self.fail_at = fail_at

    def pin(self, n: int) -> None:
        self.gen.pin(n)

    def cancel(self) -> None:
        self.gen.cancel()

    async def __aiter__(self) -> Any:
        k = 0
        async for snap in self.gen:
            if k == self.fail_at:
                raise OSError("checkpoint shard unreadable (injected)")
            yield snap
            k += 1


def _context(text: str) -> LLMContext:
    return LLMContext(messages=[{"role": "user", "content": text}])


async def test_llm_and_gate_release_the_answer_in_chunks(tmp_path: Path) -> None:
    engine = ReplayEngine(write_trace(tmp_path / "t.jsonl", [("when do you close on friday", ANSWER)]))
    log = CallLog("c")
    log.reply_turn = 0
    llm = EngineLLMService(engine, log)
    gate = GateProcessor(log, "pinned")
    down, _ = await run_test(Pipeline([llm, gate]), frames_to_send=[LLMContextFrame(_context("when do you close on friday"))])
    chunks = [f for f in down if isinstance(f, ChunkTextFrame)]
    assert len(chunks) >= 2  # a short first chunk, then phrases
    assert " ".join(c.text for c in chunks) == ANSWER
    assert len(chunks[0].text.split()) <= 4
    assert [c.chunk_id for c in chunks] == list(range(len(chunks)))
    assert any(isinstance(f, LLMFullResponseEndFrame) for f in down)
    kinds = [e.kind for e in log.events]
    assert kinds[0] == K.LLM_REQUEST and kinds.count(K.GATE_COMMIT) == len(chunks)
    done = next(e for e in log.events if e.kind == K.ENGINE_DONE)
    assert done.payload["cancelled"] is False and done.payload["steps"] == len(ANSWER.split()) + 1
    assert all(e.turn == 0 for e in log.events)


async def test_pinned_gate_pins_before_the_next_step(tmp_path: Path) -> None:
    engine = ReplayEngine(write_trace(tmp_path / "t.jsonl", [("x", ANSWER)]))
    pins: list[int] = []

    class Spy:
        name, sampler = "spy", "threshold"

        def describe(self) -> dict[str, Any]:
            return {}

        def generate(self, messages: Any) -> Any:
            gen = engine.generate(messages)
            real_pin = gen.pin

            def pin(n: int) -> None:
                pins.append(n)
                real_pin(n)

            gen.pin = pin  # type: ignore[method-assign]
            return gen

    log = CallLog("c")
    await run_test(Pipeline([EngineLLMService(Spy(), log), GateProcessor(log, "pinned")]),
                   frames_to_send=[LLMContextFrame(_context("x"))])
    assert pins and pins == sorted(pins) and pins[-1] >= len(ANSWER.split())


async def test_interruption_cancels_the_generation(tmp_path: Path) -> None:
    engine = ReplayEngine(write_trace(tmp_path / "t.jsonl", [("x", ANSWER)], step_ms=60))
    log = CallLog("c")
    down, _ = await run_test(Pipeline([EngineLLMService(engine, log), GateProcessor(log, "pinned")]),
                             frames_to_send=[LLMContextFrame(_context("x")), SleepFrame(sleep=0.3),
                                             InterruptionFrame(), SleepFrame(sleep=0.3)])
    done = next(e for e in log.events if e.kind == K.ENGINE_DONE)
    assert done.payload["cancelled"] is True
    assert done.payload["steps"] < len(ANSWER.split())
    interrupted_at = next(e.t_ns for e in log.events if e.kind == K.ENGINE_DONE)
    snaps_after = [e for e in log.events if e.kind == K.ENGINE_SNAPSHOT and e.t_ns > interrupted_at]
    assert not snaps_after


async def test_engine_crash_is_logged_and_the_reply_ends(tmp_path: Path) -> None:
    engine = FailingEngine(ReplayEngine(write_trace(tmp_path / "t.jsonl", [("x", ANSWER)])), fail_at=3)
    log = CallLog("c")
    down, _ = await run_test(Pipeline([EngineLLMService(engine, log), GateProcessor(log, "pinned")]),
                             frames_to_send=[LLMContextFrame(_context("x")), LLMContextFrame(_context("x"))])
    errors = [e for e in log.events if e.kind == K.ERROR]
    assert len(errors) == 1 and errors[0].payload["where"] == "engine"
    assert "checkpoint shard unreadable" in errors[0].payload["message"]
    assert sum(isinstance(f, LLMFullResponseEndFrame) for f in down) == 2
    # the second request (not failing) answers in full
    chunks = [f for f in down if isinstance(f, ChunkTextFrame)]
    assert " ".join(c.text for c in chunks).endswith(ANSWER)


def test_chat_messages_keeps_text_roles() -> None:
    ctx = LLMContext(messages=[{"role": "user", "content": "hi"}, {"role": "user", "content": "there"},
                               {"role": "assistant", "content": "hello"},
                               {"role": "user", "content": [{"type": "text", "text": "book it"}]},
                               {"role": "tool", "content": "x"}])
    assert chat_messages(ctx) == [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": "hello"},
                                  {"role": "user", "content": "book it"}]


@pytest.mark.parametrize(("field", "value"), [("barge_in", "words:0"), ("barge_in", "loud"), ("turn", "smart:x"),
                                              ("turn", "timeout:-1"), ("stt", "vosk"), ("vad", "energy"),
                                              ("vad_stop_secs", 0.0), ("policy", "stable"), ("stt_beam", 0)])
def test_bad_config_names_the_field(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field.split("_")[0]):
        PipelineConfig(**{field: value})


def test_config_options() -> None:
    cfg = PipelineConfig(engine="ar", sampler="autoregressive", policy="prefix", barge_in="vad", turn="timeout:600")
    assert cfg.barge_in_words() is None and cfg.turn_spec() == TurnSpec("timeout", 0.6)
    assert cfg.slug() == "ar-autoregressive-prefix"
    assert PipelineConfig(barge_in="words:3").barge_in_words() == 3
    assert PipelineConfig().turn_spec() == TurnSpec("decide")
    assert PipelineConfig(turn="smart").turn_spec() == TurnSpec("smart", 2.0)
    with pytest.raises(PipelineConfigError):
        PipelineConfig(sample_rate=8000)


def test_run_config_accepts_the_sweep_dict() -> None:
    from voicelab.runs.calls import as_config

    cfg = as_config({"engine": "diffusion", "sampler": None, "policy": "stable:2", "shaper": {"max_words": 9},
                     "fixtures": ["default"], "seed": 3})
    assert cfg.policy == "stable:2" and cfg.shaper.max_words == 9 and cfg.seed == 3
    with pytest.raises(PipelineConfigError, match="nonsense"):
        as_config({"engine": "diffusion", "nonsense": 1})


async def test_ack_wait_is_bounded_without_a_gate(tmp_path: Path) -> None:
    engine = ReplayEngine(write_trace(tmp_path / "t.jsonl", [("x", "yes.")]))
    log = CallLog("c")
    llm = EngineLLMService(engine, log, ack_timeout_s=0.05)
    t0 = asyncio.get_running_loop().time()
    await run_test(llm, frames_to_send=[LLMContextFrame(_context("x"))])
    assert asyncio.get_running_loop().time() - t0 < 2.0


def test_default_matrix_and_tables() -> None:
    from rich.console import Console

    from voicelab.measure.metrics import summarize
    from voicelab.runs.console import print_summary, print_turns
    from voicelab.runs.matrix import default_matrix

    m = default_matrix()
    assert [(c.engine, c.sampler, c.policy) for c in m] == [
        ("diffusion", "threshold", "pinned"), ("diffusion", "threshold", "final"),
        ("diffusion", "revising", "stable:2"), ("diffusion", "revising", "stable:2"),
        ("ar", "autoregressive", "prefix")]
    assert [c.speculative_tts for c in m] == [None, None, None, 0.9, None]
    assert len({c.slug() for c in m}) == 5
    console = Console(record=True, width=200)
    print_summary(console, [summarize([], {"run_id": "r"})])
    print_turns(console, [])
    assert "FAR p50" in console.export_text()
