"""The composed request phrasings: every slot a caller says is in the words, an omitted one never is."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from engines.shop import business as B
from engines.shop import corpus
from engines.shop import phrasing as PH
from engines.shop.answers import score_reply

_days = st.sampled_from(B.DAYS[:6])
_times = st.sampled_from(B.TIMES)
# "will" is also a word the builders say ("i will not make it")
_names = st.sampled_from([n for n in B.NAMES if n != "will"])


def _has(text: str, value: str) -> bool:
    return f" {value} " in f" {text} "


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10**6), name=_names, day=_days, time=_times, service=st.sampled_from(B.SERVICES),
       omit=st.sampled_from([None, "name", "day", "time"]))
def test_composed_requests_keep_said_slots_and_drop_the_omitted_one(seed: int, name: str, day: str, time: str,
                                                                   service: str, omit: str | None) -> None:
    r = random.Random(seed)
    slots = {"name": name, "day": day, "time": time}
    said = {
        "cancel": PH.cancel_request(r, name, day, omit=omit if omit != "time" else None),
        "reschedule": PH.reschedule_request(r, name, day, time, omit=omit),
        "book": PH.book_request(r, service, day, time, name, omit=omit),
    }
    for kind, text in said.items():
        assert "{" not in text and "  " not in text.strip(), text
        for slot, value in slots.items():
            if kind == "cancel" and slot == "time":
                continue
            assert _has(text, value) == (slot != omit), (kind, slot, text)


def test_hours_and_order_requests_without_their_slot() -> None:
    r = random.Random(3)
    for _ in range(50):
        assert not any(_has(PH.hours_request(r, "friday", omit="day"), d) for d in B.DAYS)
        assert _has(PH.hours_request(r, "friday"), "friday")
        assert not any(c.isdigit() for c in PH.order_request(r, None))
        assert _has(PH.order_request(r, "1 2 3 4 5"), "1 2 3 4 5")


def test_missing_slot_requests_ask_and_never_call_a_tool() -> None:
    r = random.Random(0)
    examples = [corpus._missing_slot(r) for _ in range(300)]
    asks = {corpus.render("clarify"), corpus.render("clarify_day")}
    assert {e.reply for e in examples} == asks
    assert all(e.intent == "clarify" and score_reply(e.reply, "fallback").correct for e in examples)
