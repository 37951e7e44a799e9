"""Spoken confirmation of an unsure destructive tool call (`--tool-reason confirm`): the yes/no
rule, the question and reply text, the per-call book, and the real engine service + gate + tool handler asking
"cancel your monday appointment, right?" and running the cancel on the caller's yes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pipecat.frames.frames import Frame, LLMContextFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.frame_processor import FrameDirection
from pipecat.tests.utils import SleepFrame, run_test

from engines.shop.answers import score_reply
from engines.trace import ReplayEngine
from tests.voicelab.pipeline.test_pipeline import write_trace
from voicelab.cli.common import quiet_pipecat_logs
from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture
from voicelab.gate import ToolCall
from voicelab.measure.calllog import CallLog, PlayedUtterance
from voicelab.measure.events import EventKind as K
from voicelab.measure.events import read_events
from voicelab.measure.metrics import summarize
from voicelab.pipeline.assembly import make_tool_handler
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.frames import ChunkTextFrame, PreemptFrame
from voicelab.pipeline.processors.gate_processor import GateProcessor
from voicelab.pipeline.processors.preempt_hold import PreemptHold
from voicelab.pipeline.services.llm_service import EngineLLMService, chat_messages, with_tool_spans
from voicelab.rules.confirm import Asked, Confirmations, answer, confirmed_reply, question
from voicelab.rules.tool_reason import judge, parse_mode
from voicelab.runs.calls import run_config

CANCEL_SPAN = "[cancel(name=ben, day=monday)]"
CANCEL = f"{CANCEL_SPAN} okay ben, your appointment on monday is cancelled."
MOVE = ToolCall("reschedule", {"name": "ana", "day": "friday", "time": "2 pm"},
                "[reschedule(name=ana, day=friday, time=2 pm)]")
ASK_CANCEL = "cancel your monday appointment, right?"


def test_the_question_is_built_from_the_call() -> None:
    assert question("cancel", {"name": "ben", "day": "monday"}) == ASK_CANCEL
    assert question("reschedule", MOVE.args) == "move your appointment to friday at 2 pm, right?"
    assert question("reschedule", {"name": "ana", "day": "friday"}) == "move your appointment to friday, right?"
    assert question("cancel", {"name": "ben"}) == "cancel your appointment, right?"


def test_the_reply_after_a_yes_is_the_span_then_the_shops_words_for_it_done() -> None:
    call = ToolCall("cancel", {"name": "ben", "day": "monday"}, CANCEL_SPAN)
    assert confirmed_reply(call) == CANCEL
    moved = confirmed_reply(MOVE)
    assert moved.startswith(MOVE.raw + " ") and "friday at 2 pm" in moved
    # the engines' reply grammar reads it as the answer to a reschedule with these values
    assert score_reply(moved, {"intent": "reschedule", "slots": {"name": "ana", "day": "friday", "time": "2 pm"}}).correct
    # a call the template cannot be filled for still says something after its span
    short = confirmed_reply(ToolCall("cancel", {"day": "monday"}, "[cancel(day=monday)]"))
    assert short.startswith("[cancel(day=monday)] ") and short.split("]", 1)[1].strip()


@pytest.mark.parametrize("said", ["yes", "Yeah.", "yep", "right", "correct", "that is right", "That's right!",
                                  "please do", "yes please", "Mm-hmm.", "sure, go ahead", "okay",
                                  "yes cancel my monday appointment", "yes, cancel it, thank you"])
def test_a_plain_yes_agrees(said: str) -> None:
    assert answer(said, ASK_CANCEL) == "yes"


@pytest.mark.parametrize("said", ["no", "nope", "no thanks", "that's not right", "yes no wait", "don't cancel it",
                                  "no, tuesday"])
def test_any_negation_is_a_no(said: str) -> None:
    assert answer(said, ASK_CANCEL) == "no"


@pytest.mark.parametrize("said", ["", "is that right", "cancel it", "yes and when do you close today",
                                  "what are your opening hours", "my name is ben"])
def test_anything_else_is_not_a_yes(said: str) -> None:
    assert answer(said, ASK_CANCEL) == "other"


def test_the_reschedule_question_may_be_answered_by_restating_it() -> None:
    asked = question("reschedule", MOVE.args)
    assert answer("yes, move it to friday at 2 p.m.", asked) == "yes"
    assert answer("yes, move it to friday at 3 pm", asked) == "other"  # another time is not a yes to this one


def test_confirm_mode_asks_when_the_words_only_partly_ask() -> None:
    args = {"name": "ben", "day": "monday"}
    assert parse_mode("confirm")[0] == "confirm"
    assert judge("confirm", "cancel", args, "please cancel my appointment on monday my name is ben").outcome == \
        "executed"
    cue_only = judge("confirm", "cancel", args, "please cancel it", earlier=["this is ben"])  # the day is a guess
    assert cue_only.outcome == "asked" and not cue_only.execute and "did not say every value" in cue_only.reason
    # a recogniser's "can sell": every value said, no cue word
    values_only = judge("confirm", "cancel", args, "can sell my monday appointment my name is ben")
    assert values_only.outcome == "asked" and "did not ask for cancel" in values_only.reason
    assert judge("confirm", "cancel", args, "oh god you can only when it closed today").outcome == "refused"
    assert judge("confirm", "book", {"day": "monday"}, "hello").outcome == "executed"
    # the same partial words are refused outright in mode words
    assert judge("words", "cancel", args, "please cancel it", earlier=["this is ben"]).outcome == "refused"


def _asked(call: ToolCall, turn: int = 0) -> Asked:
    return Asked(call, turn, 0.8, question(call.name, call.args), confirmed_reply(call))


def test_the_book_runs_a_confirmed_call_once_and_refuses_the_rest() -> None:
    call = ToolCall("cancel", {"name": "ben", "day": "monday"}, CANCEL_SPAN)
    book = Confirmations()
    assert book.resolve("yes") == []  # nothing asked: nothing to decide
    assert book.ask(_asked(call)) and not book.ask(_asked(MOVE))  # one question at a time
    [yes] = book.resolve("yeah that's right")
    assert yes.outcome == "confirmed" and book.waiting is None
    assert book.take(MOVE) is None
    taken = book.take(call)
    assert taken is not None and taken.asked.call == call and book.take(call) is None
    # a no refuses; a confirmed call whose reply was cut off before it ran is refused at the next turn
    book.ask(_asked(MOVE))
    [no] = book.resolve("no, keep it")
    assert no.outcome == "refused" and "said no" in no.reason
    book.ask(_asked(call))
    book.resolve("yes")
    book.ask(_asked(MOVE, turn=3))
    cut, other = book.resolve("what time do you close")
    assert (cut.asked.call, cut.outcome) == (call, "refused") and "cut off" in cut.reason
    assert (other.asked.call, other.outcome) == (MOVE, "refused") and "did not say yes" in other.reason
    book.ask(_asked(MOVE))
    [ended] = book.close()
    assert ended.outcome == "refused" and "call ended" in ended.reason and book.waiting is None


class _TurnsFromContext(EngineLLMService):
    """The engine service, with the reply turn the context's caller turns give (no turn-taking in this test)."""

    def __init__(self, engine: Any, log: CallLog, **kwargs: Any) -> None:
        super().__init__(engine, log, **kwargs)
        self.call_log = log

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, LLMContextFrame):
            self.call_log.reply_turn = len([m for m in chat_messages(frame.context) if m["role"] == "user"]) - 1
        await super().process_frame(frame, direction)


def _context(*said: str) -> LLMContextFrame:
    """Caller and bot taking turns, the caller first."""
    roles = ("user", "assistant")
    return LLMContextFrame(LLMContext(messages=[{"role": roles[i % 2], "content": s} for i, s in enumerate(said)]))


async def _two_turns(tmp_path: Path, answer_text: str, second_reply: str) -> tuple[CallLog, Any, list[Any], dict]:
    """Turn 1: "please cancel it" (the day is the engine's guess) draws a cancel; turn 2 answers the question."""
    first = "please cancel it"
    engine = ReplayEngine(write_trace(tmp_path / "t.jsonl", [(first, CANCEL), (answer_text, second_reply)],
                                      step_ms=2, confidence=0.9))
    log = CallLog("c")
    llm = _TurnsFromContext(engine, log)
    tools: list[dict[str, Any]] = []
    gate = GateProcessor(log, "pinned", tool_handler=make_tool_handler("confirm", llm, log, tools))
    hello = ("hi this is ben", "hi ben, how can i help?")
    down, _ = await run_test(Pipeline([llm, gate]), frames_to_send=[
        _context(*hello, first), _context(*hello, first, ASK_CANCEL, answer_text)])
    said: dict[int, str] = {}
    for f in down:
        if isinstance(f, ChunkTextFrame):
            said[f.turn] = f"{said.get(f.turn, '')} {f.text}".strip()
    return log, llm, tools, said


async def test_an_unsure_cancel_is_asked_and_runs_on_the_callers_yes(tmp_path: Path) -> None:
    log, llm, tools, said = await _two_turns(tmp_path, "yes", "unused: the reply to a yes is not generated")
    # turn 1 (the second caller turn) says the question instead of "your appointment ... is cancelled"
    assert said == {1: ASK_CANCEL, 2: "okay ben, your appointment on monday is cancelled."}
    rows = [(e.turn, e.payload) for e in log.events if e.kind == K.TOOL_CALL]
    assert [(t, p["outcome"]) for t, p in rows] == [(1, "asked"), (2, "confirmed")]
    asked, done = rows[0][1], rows[1][1]
    assert asked["question"] == ASK_CANCEL and "did not say every value" in asked["reason"]
    assert done["raw"] == CANCEL_SPAN and done["args"] == {"name": "ben", "day": "monday"}
    assert done["confidence"] == asked["confidence"] == pytest.approx(0.9)  # the engine's, not the script's
    assert "'yes'" in done["reason"]
    assert llm.generations == 1  # the yes was answered without the engine
    assert [e.payload.get("scripted", False) for e in log.events if e.kind == K.LLM_REQUEST] == [False, True]
    # the engine's history gets the call, in front of the reply that ran it, only now
    assert llm.tool_memory == {"yes": [CANCEL_SPAN]}
    history = with_tool_spans([{"role": "user", "content": "please cancel it"},
                               {"role": "assistant", "content": ASK_CANCEL}, {"role": "user", "content": "yes"},
                               {"role": "assistant", "content": said[2]}], llm.tool_memory)
    assert history[1]["content"] == ASK_CANCEL and history[3]["content"] == CANCEL
    assert [t["outcome"] for t in tools] == ["asked", "confirmed"]
    assert summarize(log.events, {"run_id": "t"})["tool_calls"] == {"executed": 0, "confirmed": 1, "refused": 0}


async def test_a_no_refuses_the_asked_call_and_the_engine_answers(tmp_path: Path) -> None:
    reply = "sorry, i can only help with bike service, orders and our opening hours."
    log, llm, tools, said = await _two_turns(tmp_path, "no, keep it", reply)
    assert said == {1: ASK_CANCEL, 2: reply}
    rows = [(e.turn, e.payload) for e in log.events if e.kind == K.TOOL_CALL]
    assert [(t, p["outcome"]) for t, p in rows] == [(1, "asked"), (2, "refused")]
    assert "said no" in rows[1][1]["reason"] and rows[1][1]["confidence"] == pytest.approx(0.9)
    assert llm.generations == 2 and llm.tool_memory == {}
    assert [t["outcome"] for t in tools] == ["asked", "refused"]
    assert summarize(log.events, {"run_id": "t"})["tool_calls"] == {"executed": 0, "confirmed": 0, "refused": 1}


@pytest.mark.slow
async def test_a_held_preemptive_reply_asks_once_released_and_no_engine_answers_the_yes(tmp_path: Path) -> None:
    """Preemptive generation: the question of a held reply is said when the turn confirms it; while it waits,
    the caller's "yes" at the VAD stop starts no engine (its words decide first)."""
    first = "please cancel it"
    engine = ReplayEngine(write_trace(tmp_path / "t.jsonl", [(first, CANCEL)], step_ms=2, confidence=0.9))
    log = CallLog("c")
    yes_at = log.now_ns() + 1_500_000_000  # the caller's second utterance starts after the first reply
    log.utterances += [PlayedUtterance(0, 0, 0, 0, 0, None, first),
                       PlayedUtterance(1, yes_at, yes_at, yes_at, yes_at, None, "yes")]
    llm = _TurnsFromContext(engine, log, preemptive=True, context=LLMContext())
    tools: list[dict[str, Any]] = []
    gate = GateProcessor(log, "pinned", tool_handler=make_tool_handler("confirm", llm, log, tools))
    down, _ = await run_test(Pipeline([llm, gate, PreemptHold()]), frames_to_send=[
        PreemptFrame(text=first), SleepFrame(sleep=0.5), _context(first), SleepFrame(sleep=1.5),
        PreemptFrame(text="yes"), SleepFrame(sleep=0.3), _context(first, ASK_CANCEL, "yes"), SleepFrame(sleep=0.5)])
    starts = [e.payload["text"] for e in log.events if e.kind == K.PREEMPT_START]
    assert starts == [first]  # none for "yes"
    assert [e.payload["outcome"] for e in log.events if e.kind == K.PREEMPT_RESULT] == ["hit"]
    spoken = [f.text for f in down if isinstance(f, ChunkTextFrame)]
    assert " ".join(spoken) == f"{ASK_CANCEL} okay ben, your appointment on monday is cancelled."
    assert [e.payload["outcome"] for e in log.events if e.kind == K.TOOL_CALL] == ["asked", "confirmed"]
    assert llm.generations == 1 and llm.tool_memory == {"yes": [CANCEL_SPAN]}


@pytest.mark.slow
def test_a_call_asks_hears_yes_and_runs_the_cancel(tmp_path: Path) -> None:
    """In real time through the whole pipeline (`--stt transcript`): the recogniser heard "can sell" for "cancel"
    (the fixture's text stands in for it), so the engine's cancel is only partly asked for; the bot says the
    question, Piper speaks it, the context keeps it, and the caller's "yeah" runs the cancel."""
    src = FIXTURES_ROOT / "pause_mid_cancel"
    yeah = FIXTURES_ROOT / "backchannel_yeah_rp" / "t1_yeah.wav"
    if not (src / "fixture.json").is_file() or not yeah.is_file():
        pytest.skip("audio_fixtures not built")
    fdir = tmp_path / "confirm_cancel"
    fdir.mkdir()
    shutil.copy(src / "t0_please_cancel_my.wav", fdir / "a.wav")
    shutil.copy(yeah, fdir / "b.wav")
    shutil.copy(src / "t1_thanks_bye.wav", fdir / "c.wav")
    heard = ["please can sell my appointment on wednesday my name is ben", "yeah", "thanks bye"]
    after = {"after": "bot_audio_end", "delay_s": 0.5}
    (fdir / "fixture.json").write_text(json.dumps({
        "name": "confirm_cancel", "description": "a misheard cancel is confirmed by the caller's yeah",
        "turns": [{"audio": a, "text": t, "start": after} for a, t in zip(("a.wav", "b.wav", "c.wav"), heard,
                                                                           strict=True)]}))
    span = "[cancel(name=ben, day=wednesday)]"
    trace = write_trace(tmp_path / "trace.jsonl", [
        (heard[0], f"{span} okay ben, your appointment on wednesday is cancelled."),
        (heard[2], "you are welcome. have a great day, goodbye!")])
    quiet_pipecat_logs("ERROR")
    cfg = PipelineConfig(engine=f"replay:{trace}", stt="transcript", tool_reason="confirm")
    run = run_config(cfg, [load_fixture(fdir)], tmp_path / "out")
    events = read_events(run / "events.jsonl")
    rows = [(e.turn, e.payload) for e in events if e.kind == K.TOOL_CALL]
    assert [(t, p["outcome"]) for t, p in rows] == [(0, "asked"), (1, "confirmed")]
    asked = question("cancel", {"name": "ben", "day": "wednesday"})
    assert rows[0][1]["question"] == asked and rows[1][1]["raw"] == span
    # the question was heard whole and is what the context says the bot said; the yes got the shop's words
    context = {e.turn: e.payload["content"] for e in events if e.kind == K.CONTEXT_UPDATE}
    assert context[0] == asked
    assert context[1] == "okay ben, your appointment on wednesday is cancelled."
    assert context[2] == "you are welcome. have a great day, goodbye!"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["tool_calls"] == {"executed": 0, "confirmed": 1, "refused": 0}
    meta = json.loads(next((run / "calls").glob("*.json")).read_text())
    assert [(t["turn"], t["outcome"]) for t in meta["tool_calls"]] == [(0, "asked"), (1, "confirmed")]
