"""Expectation verdicts of two runs paired turn by turn (voicelab.analysis.agreement)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from voicelab.analysis.agreement import ExpectationVerdict, agreement, verdict, verdicts


def _checks(*passed: bool) -> str:
    return json.dumps([{"check": "says_any", "want": ["x"], "passed": p, "detail": ""} for p in passed])


def _row(call_id: str, turn: int, correct: bool | None = None, checks: str | None = None,
         expect: str = "reply", words: str = "w") -> dict[str, object]:
    return {"call_id": call_id, "turn": turn, "expect": expect, "answer_correct": correct, "expectations": checks,
            "answer_text": words}


def _fixture(call_id: str) -> str:
    return call_id.split("-", 1)[1]


def test_a_turn_passes_only_when_its_answer_and_every_check_pass() -> None:
    assert verdict(_row("00-a", 0, correct=True, checks=_checks(True, True))) == ExpectationVerdict(True, "w")
    assert verdict(_row("00-a", 0, correct=True, checks=_checks(True, False))).passed is False  # type: ignore[union-attr]
    assert verdict(_row("00-a", 0, correct=False)).passed is False  # type: ignore[union-attr]
    assert verdict(_row("00-a", 0, checks=_checks(True))).passed is True  # type: ignore[union-attr]
    assert verdict(_row("00-a", 0, correct=float("nan"), checks=None)) is None  # nothing scored it
    assert verdict(_row("00-a", 0)) is None


def test_turns_pair_by_fixture_turn_and_repetition_and_backchannels_are_left_out() -> None:
    a = verdicts([_row("r1-00-hours", 0, True), _row("r2-00-hours", 0, True), _row("r1-01-bye", 1, False),
                  _row("r1-02-mm", 1, True, expect="no_interrupt")], lambda c: c.split("-", 2)[2])
    assert sorted(a) == [("bye", 1, 0), ("hours", 0, 0), ("hours", 0, 1)]
    b = verdicts([_row("00-hours", 0, True), _row("01-bye", 1, True, words="bye now")], _fixture)
    got = agreement(a, b)
    assert (got.paired, got.agree, got.only_a, got.only_b) == (2, 1, 1, 0)
    assert [d.key for d in got.disagreements] == [("bye", 1, 0)]
    assert got.disagreements[0].b.words == "bye now"
    assert "agree on 1 of 2 turns" in got.line() and "(50 %)" in got.line()


def test_no_turn_scored_in_both_says_so() -> None:
    got = agreement({("a", 0, 0): ExpectationVerdict(True, "")}, {})
    assert got.share is None and "no turn scored in both" in got.line()


keys = st.tuples(st.sampled_from("abc"), st.integers(0, 3), st.integers(0, 1))
runs = st.dictionaries(keys, st.builds(ExpectationVerdict, st.booleans(), st.just("")), max_size=12)


@given(runs, runs)
def test_agreement_is_symmetric_and_counts_add_up(a: dict, b: dict) -> None:  # type: ignore[type-arg]
    ab, ba = agreement(a, b), agreement(b, a)
    assert (ab.paired, ab.agree) == (ba.paired, ba.agree) and (ab.only_a, ab.only_b) == (ba.only_b, ba.only_a)
    assert ab.paired == ab.agree + len(ab.disagreements)
    assert ab.paired + ab.only_a == len(a) and ab.paired + ab.only_b == len(b)
    assert agreement(a, a).agree == len(a)


def test_compare_pairs_the_verdicts_of_two_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from voicelab.analysis import load_run
    from voicelab.analysis.compare import compare_runs
    from voicelab.runs.synthetic import plain_call, write_run

    calls = [plain_call(f"c{i}") for i in range(3)]
    a, b = (load_run(write_run(tmp_path, calls=calls, seed=s, run_id=f"r{s}")) for s in (1, 2))
    assert compare_runs(a, b, n_resamples=99).expectations is None  # nothing scored: nothing said
    n = len(a.turns)
    a.turns["answer_correct"] = [True] * n
    b.turns["answer_correct"] = [True] * (n - 1) + [False]
    got = compare_runs(a, b, n_resamples=99).expectations
    assert got is not None and (got.paired, got.agree) == (n, n - 1) and len(got.disagreements) == 1
