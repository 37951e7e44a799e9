"""Tool calls need a reason: the rule, the commit-time confidence, and the real gate
processor + tool handler refusing a cancel nobody asked for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pipecat.frames.frames import LLMContextFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.tests.utils import run_test

from engines.snapshot import Snapshot
from engines.trace import ReplayEngine
from tests.voicelab.pipeline.test_pipeline import write_trace
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind as K
from voicelab.measure.metrics import summarize
from voicelab.pipeline.assembly import make_tool_handler
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.pipeline.processors.gate_processor import GateProcessor
from voicelab.pipeline.services.llm_service import EngineLLMService
from voicelab.rules.tool_reason import CONFIDENCE_BAR, CommitConfidence, ToolReasonError, judge, parse_mode

CANCEL = "[cancel(name=ben, day=monday)] okay ben, your appointment on monday is cancelled."
ASKED = "please cancel my appointment on monday my name is ben"
UNRELATED = "oh god you can only when it closed today"  # a garbled "when do you close today"


def _snap(pieces: list[str], masked: list[bool], conf: list[float], tokens: list[int] | None = None) -> Snapshot:
    n = len(pieces)
    toks = tuple(tokens or range(10, 10 + n))
    return Snapshot(step=0, t_ns=0, tokens=tuple(0 if m else t for m, t in zip(masked, toks, strict=True)),
                    masked=tuple(masked), confidence=tuple(conf), guesses=toks,
                    pieces=tuple("" if m else p for m, p in zip(masked, pieces, strict=True)), eos=None,
                    block_size=n, blocks_done=0, pinned=0, forwards=1, done=False)


def test_judge_destructive_calls_by_mode() -> None:
    args = {"name": "ben", "day": "monday"}
    assert judge("words", "cancel", args, ASKED).execute
    refused = judge("words", "cancel", args, UNRELATED)
    assert not refused.execute and refused.outcome == "refused" and "do not ask for cancel" in refused.reason
    # the day and name may come from the caller's earlier turns; the cue word must be in this one
    assert judge("words", "cancel", args, "please cancel it", earlier=["this is ben about monday"]).execute
    assert not judge("words", "cancel", args, "this is ben about monday").execute
    assert judge("confidence", "cancel", args, UNRELATED, confidence=CONFIDENCE_BAR).execute
    low = judge("confidence", "cancel", args, ASKED, confidence=CONFIDENCE_BAR - 0.01)
    assert not low.execute and "<" in low.reason
    assert not judge("confidence", "cancel", args, ASKED, confidence=None).execute
    assert judge("off", "reschedule", {"name": "x"}, UNRELATED).execute
    # booking and order lookups undo nothing: never refused
    assert judge("words", "book", {"day": "monday"}, UNRELATED).execute
    assert judge("confidence", "order_status", {"number": "1"}, UNRELATED, confidence=0.1).execute


def test_modes_parse_and_bad_ones_are_refused() -> None:
    assert parse_mode("words") == ("words", CONFIDENCE_BAR)
    assert parse_mode("confidence:0.6") == ("confidence", 0.6)
    for bad in ("never", "words:0.5", "confidence:1.5", "confidence:x", ""):
        with pytest.raises(ToolReasonError):
            parse_mode(bad)
    assert PipelineConfig(tool_reason="off").tool_reason == "off"
    with pytest.raises(PipelineConfigError, match="tool_reason"):
        PipelineConfig(tool_reason="maybe")


def test_commit_confidence_keeps_the_value_a_token_was_committed_with() -> None:
    pieces = ["[cancel(", "name=ben", ", day=monday", ")]", " okay"]
    cc = CommitConfidence()
    cc.observe(_snap(pieces, [False, False, True, True, True], [0.99, 0.97, 0.3, 0.2, 0.1]))
    # later steps report other values (a finished block reads 0.0): the commit-time ones are kept
    cc.observe(_snap(pieces, [False, False, False, False, True], [0.0, 0.0, 0.95, 0.7, 0.4]))
    last = _snap(pieces, [False] * 5, [0.0, 0.0, 0.0, 0.0, 0.99])
    assert cc.tool_span(last) == pytest.approx(0.7)
    # a revised token takes the value it was committed with the second time
    cc2 = CommitConfidence()
    cc2.observe(_snap(pieces, [False] * 5, [0.99, 0.5, 0.99, 0.99, 0.99]))
    revised = _snap(pieces, [False] * 5, [0.99, 0.96, 0.99, 0.99, 0.99], tokens=[10, 99, 12, 13, 14])
    assert cc2.tool_span(revised) == pytest.approx(0.96)
    assert CommitConfidence().tool_span(_snap(["okay", " bye"], [False, False], [0.9, 0.9])) is None


async def _one_reply(tmp_path: Path, said: str, mode: str, conf: float = 0.9) -> tuple[CallLog, Any, list[Any]]:
    engine = ReplayEngine(write_trace(tmp_path / "t.jsonl", [(said, CANCEL)], step_ms=2, confidence=conf))
    log = CallLog("c")
    log.reply_turn = 0
    llm = EngineLLMService(engine, log)
    tools: list[dict[str, Any]] = []
    gate = GateProcessor(log, "pinned", tool_handler=make_tool_handler(mode, llm, log, tools))
    await run_test(Pipeline([llm, gate]),
                   frames_to_send=[LLMContextFrame(LLMContext(messages=[{"role": "user", "content": said}]))])
    return log, llm, tools


async def test_a_cancel_on_an_unrelated_utterance_is_refused(tmp_path: Path) -> None:
    log, llm, tools = await _one_reply(tmp_path, UNRELATED, "words")
    rows = [e for e in log.events if e.kind == K.TOOL_CALL]
    assert len(rows) == 1
    row = rows[0].payload
    assert row["name"] == "cancel" and row["outcome"] == "refused" and "do not ask" in row["reason"]
    assert row["confidence"] == pytest.approx(0.9)
    assert llm.tool_memory == {}  # not put back into the engine's history as done
    assert [t["outcome"] for t in tools] == ["refused"]
    summary = summarize(log.events, {"run_id": "t"})
    assert summary["tool_calls"] == {"executed": 0, "confirmed": 0, "refused": 1}


async def test_a_cancel_the_caller_asked_for_is_executed(tmp_path: Path) -> None:
    log, llm, tools = await _one_reply(tmp_path, ASKED, "words")
    row = next(e for e in log.events if e.kind == K.TOOL_CALL).payload
    assert row["outcome"] == "executed" and row["args"] == {"name": "ben", "day": "monday"}
    assert llm.tool_memory == {ASKED: ["[cancel(name=ben, day=monday)]"]}
    assert summarize(log.events, {"run_id": "t"})["tool_calls"] == {"executed": 1, "confirmed": 0, "refused": 0}


async def test_confidence_mode_reads_the_engines_commit_confidence(tmp_path: Path) -> None:
    log, llm, _ = await _one_reply(tmp_path, UNRELATED, "confidence", conf=0.99)
    assert next(e for e in log.events if e.kind == K.TOOL_CALL).payload["outcome"] == "executed"
    log, llm, _ = await _one_reply(tmp_path, ASKED, "confidence", conf=0.8)
    row = next(e for e in log.events if e.kind == K.TOOL_CALL).payload
    assert row["outcome"] == "refused" and llm.tool_memory == {}
    log, _, _ = await _one_reply(tmp_path, UNRELATED, "off")
    assert next(e for e in log.events if e.kind == K.TOOL_CALL).payload["outcome"] == "executed"
