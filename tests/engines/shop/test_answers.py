"""Answer scoring on fixed replies: right, wrong slot, incoherent (real bad outputs), fallback."""

from __future__ import annotations

import pytest

from engines.shop import corpus
from engines.shop.answers import score_reply, tool_call_supported, tool_span, tool_span_confidence
from engines.snapshot import Snapshot

CANCEL = "[cancel(name=ben, day=monday)] okay ben, your appointment on monday is cancelled."


def test_right_reply_is_correct_and_coherent() -> None:
    s = score_reply(CANCEL, {"intent": "cancel", "slots": {"name": "ben", "day": "monday"}})
    assert (s.correct, s.coherent, s.intent, s.tool, s.wrong_tool_call) == (True, True, "cancel", "cancel", False)
    s = score_reply("[order_status(number=47129)] let me check order 4 7 1 2 9 for you, one moment.",
                    {"intent": "order_status", "slots": {"number": "47129"}})
    assert s.correct and s.slots["number"] == "47129"
    s = score_reply("on friday we are open from 9 am to 8 pm.", {"intent": "hours", "slots": {"day": "friday"}})
    assert s.correct, s.reason


def test_wrong_slot_is_coherent_but_not_correct() -> None:
    s = score_reply(CANCEL, {"intent": "cancel", "slots": {"name": "anna", "day": "monday"}})
    assert s.coherent and not s.correct and "name" in s.reason
    # the expected tool with a value the caller did not say: a wrong value, not a wrong tool
    assert s.wrong_value and not s.wrong_tool_call
    s = score_reply("on monday we are open from 9 am to 6 pm.", {"intent": "hours", "slots": {"day": "friday"}})
    assert s.coherent and not s.correct and "day" in s.reason
    assert not s.wrong_value and not s.wrong_tool_call  # no tool called
    s = score_reply(CANCEL, {"intent": "cancel", "slots": {"name": "ben", "day": "monday"}})
    assert s.correct and not s.wrong_value


@pytest.mark.parametrize("reply", [
    # real outputs of earlier tiny engine weights
    "sure, a flat tire repair you for asking. how. help with your",
    "on monday we are open from 9 am to 6 help you today",
    "sure, a are welcome repair for you am to 9",
    "how 2 2 today?",
    "[cancel(name=maria, day== pm)]",
])
def test_real_bad_outputs_are_incoherent(reply: str) -> None:
    s = score_reply(reply, "fallback")
    assert not s.coherent and not s.correct and s.intent is None


def test_slots_that_contradict_the_business_are_incoherent() -> None:
    # a well-formed sentence, but friday's hours are 9 am to 8 pm
    s = score_reply("on friday we are open from 9 am to 6 pm.", {"intent": "hours", "slots": {"day": "friday"}})
    assert not s.coherent and "9 am to 8 pm" in s.reason
    s = score_reply("sorry, we are closed on monday. we open again on monday at 9 am.", "fallback")
    assert not s.coherent
    s = score_reply("[order_status(number=47129)] let me check order 4 7 1 9 9 for you, one moment.",
                    {"intent": "order_status", "slots": {"number": "47129"}})
    assert not s.coherent and "47199" in s.reason
    # the name in the tool call and the spoken name differ
    assert not score_reply("[cancel(name=ben, day=monday)] okay anna, your appointment on monday is cancelled.",
                           "fallback").coherent


def test_fallback_accepts_a_clarifying_question_and_flags_tool_calls() -> None:
    assert score_reply(corpus.render("fallback"), "fallback").correct
    assert score_reply(corpus.render("clarify"), "fallback").correct
    assert score_reply(corpus.render("clarify_day"), "fallback").correct
    s = score_reply(CANCEL, "fallback")
    assert s.coherent and not s.correct and s.wrong_tool_call
    s = score_reply("[cancel(name=maria, day== pm)]", "fallback")
    assert s.wrong_tool_call and s.reason == "malformed tool span"
    assert not score_reply(corpus.render("fallback"), {"intent": "address"}).correct


def test_every_corpus_reply_scores_correct_against_its_own_slots() -> None:
    for e in corpus.generate(600, 5):
        s = score_reply(e.reply, {"intent": e.intent, "slots": e.slots})
        assert s.correct and not s.wrong_tool_call, (e.reply, s.reason)


def test_bad_expectations_raise_one_line_errors() -> None:
    for bad in ("maybe", {"slots": {}}, {"intent": "teleport"}, {"intent": "cancel", "slots": {"day": 3}}):
        with pytest.raises(ValueError):
            score_reply("x", bad)


def test_tool_span_parsing() -> None:
    assert tool_span(CANCEL).args == {"name": "ben", "day": "monday"}
    assert tool_span("[cancel(name=maria, day== pm)] ok").well_formed is False
    assert tool_span("hello") is None


def test_tool_calls_need_the_callers_words() -> None:
    args = {"name": "ben", "day": "monday"}
    # the garbled "when do you close today" and an unrelated sentence, as callers said them
    assert tool_call_supported("oh god you can only when it closed today", "cancel", args) is False
    assert tool_call_supported("will we ever forget it", "cancel", args) is False
    assert tool_call_supported("please cancel my appointment on monday my name is ben", "cancel", args) is True
    assert tool_call_supported("please cancel my appointment on monday", "cancel", args) is False
    assert tool_call_supported("cancel it please", "cancel", args, context=["this is ben", "monday"]) is True
    assert tool_call_supported("can you move me to friday at 2 30 pm it is ben", "reschedule",
                               {"name": "ben", "day": "friday", "time": "2 30 pm"}) is True
    assert tool_call_supported("where is my order 4 7 1 2 9", "order_status", {"number": "47129"}) is True
    assert tool_call_supported("where is my order 4 7 1 2", "order_status", {"number": "47129"}) is False
    assert tool_call_supported("hello", "teleport", {}) is None


def _snap(pieces: list[str], conf: list[float]) -> Snapshot:
    n = len(pieces)
    return Snapshot(step=0, t_ns=0, tokens=tuple(range(n)), masked=(False,) * n, confidence=tuple(conf),
                    guesses=tuple(range(n)), pieces=tuple(pieces), eos=None, block_size=n, blocks_done=n,
                    pinned=0, forwards=1, done=True)


def test_tool_span_confidence_is_the_least_confident_span_token() -> None:
    s = _snap(["[", "cancel", "(name=", "ben", ", day=", "monday", ")]", " okay", " ben"],
              [0.99, 0.98, 0.97, 0.41, 0.95, 0.62, 0.99, 0.2, 0.1])
    assert tool_span_confidence(s) == 0.41
    assert tool_span_confidence(_snap(["hello", " there"], [0.5, 0.5])) is None
