"""A fixture's checks of the reply's words (`voicelab.measure.expectations`): phrases on word boundaries in the
comparison normaliser's form, a pattern over the normalised words, one result per check, and one-line problems
for a bad expect_reply."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voicelab.measure import expectations as E
from voicelab.measure.expectations import Expectations

WORDS = st.lists(st.sampled_from(["open", "close", "today", "at", "9", "we", "are", "sorry", "you", "said",
                                  "saturday", "reopened", "hmm"]), min_size=0, max_size=12)
PHRASES = st.lists(st.lists(st.sampled_from(["open", "close", "today", "at", "9", "sorry", "you said"]),
                            min_size=1, max_size=2).map(" ".join), min_size=1, max_size=4)


@given(WORDS, PHRASES)
def test_says_all_is_every_single_phrase_and_says_any_is_one_of_them(words: list[str], phrases: list[str]) -> None:
    heard = " ".join(words)
    each = [E.check(heard, Expectations(says_any=(p,)))[0].passed for p in phrases]
    assert E.check(heard, Expectations(says_all=tuple(phrases)))[0].passed == all(each)
    assert E.check(heard, Expectations(says_any=tuple(phrases)))[0].passed == any(each)
    assert E.check(heard, Expectations(not_says=tuple(phrases)))[0].passed == (not any(each))


@given(WORDS, st.integers(min_value=0, max_value=11), st.integers(min_value=1, max_value=3))
def test_a_run_of_the_heard_words_is_heard_whatever_the_case_and_punctuation(words: list[str], at: int,
                                                                              n: int) -> None:
    if not words:
        return
    at = at % len(words)
    phrase = " ".join(words[at:at + n])
    loud = ", ".join(w.upper() for w in words) + "!"
    assert E.check(loud, Expectations(says_any=(phrase.title() + ".",)))[0].passed


@given(WORDS)
def test_a_pattern_is_searched_in_the_normalised_words(words: list[str]) -> None:
    heard = " ".join(words).upper()
    result = E.check(heard, Expectations(matches=r"\bopen\b"))[0]
    assert result.passed == ("open" in words)


def test_phrases_match_on_word_boundaries_only() -> None:
    assert not E.check("we reopened today", Expectations(says_any=("open",)))[0].passed
    assert E.check("We open at nine.", Expectations(says_all=("open at 9",)))[0].passed  # numbers as digits
    assert not E.check("we open", Expectations(says_any=("we open at",)))[0].passed


def test_results_are_one_per_check_with_what_was_heard() -> None:
    exp = E.parse({"says_any": ["you said"], "says_all": ["saturday", "close"], "matches": r"open\b",
                   "not_says": ["sorry"]})
    assert exp is not None
    results = E.check("You said: what time do you open on Saturday?", exp)
    assert [(r.check, r.passed) for r in results] == [("says_any", True), ("says_all", False), ("matches", True),
                                                      ("not_says", True)]
    assert results[1].detail == "missing 'close'" and results[0].detail == "heard 'you said'"


def test_the_cell_is_a_json_array_a_junit_writer_reads() -> None:
    cell = E.score("we open at nine", {"intent": "hours", "slots": {"day": "monday"}, "says_any": ["open"],
                                       "not_says": ["nine"]})
    assert cell is not None
    items = json.loads(cell)
    assert [set(i) for i in items] == [{"check", "want", "passed", "detail"}] * 2
    assert E.tally(cell) == (1, 2) and E.cell_text(cell) == "1/2 failed not_says"
    assert E.score("anything", {"intent": "hours", "slots": {}}) is None and E.score("x", None) is None
    assert E.tally(E.score(None, {"says_any": ["hello"]})) == (0, 1)  # nothing heard


def test_a_tool_span_is_not_words_heard() -> None:
    assert not E.check("[lookup_order(number=12345)] Let me check.", Expectations(says_any=("lookup order",)))[0].passed


def test_the_shop_part_is_split_from_the_checks() -> None:
    assert E.shop_expect("fallback") == "fallback"
    assert E.shop_expect({"intent": "hours", "slots": {"day": "monday"}, "says_any": ["open"]}) == {
        "intent": "hours", "slots": {"day": "monday"}}
    assert E.shop_expect({"says_any": ["open"]}) is None


@pytest.mark.parametrize(("expect", "problem"), [
    ({"says_any": []}, "says_any: an empty list"),
    ({"says_all": "open"}, "says_all: expected a list of phrases"),
    ({"matches": "(open"}, "matches: '(open' does not compile"),
    ({"saying": ["open"]}, "saying: unknown key"),
    ({"not_says": ["?!"]}, "not_says: '?!' has no words to hear"),
    ({}, "expected the shop's intent and slots and/or any of"),
    ({"intent": "nonsense", "says_any": ["x"]}, "unknown intent 'nonsense'"),
])
def test_a_bad_expectation_is_one_line_naming_it(expect: object, problem: str) -> None:
    found = E.problems(expect)
    assert len(found) == 1 and found[0].startswith(problem) and "\n" not in found[0]
    with pytest.raises(E.ExpectationError, match=re.escape(problem)):
        E.parse(expect)
