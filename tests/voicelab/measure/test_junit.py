"""JUnit XML from a run's expectation checks and compare's gates: what a standard parser (xml.etree, junitparser)
reads back is one test case per check and per gate, failed and undecided ones as <failure> and <error>."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import junitparser
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicelab.measure.expectations import score
from voicelab.measure.junit import (
    ERROR,
    FAILED,
    PASSED,
    Case,
    Suite,
    call_error_case,
    expectation_cases,
    gate_cases,
    run_suite,
    to_bytes,
    totals,
    write,
)

HOURS = {"says_any": ["open", "opening hours"], "matches": r"\b(8|9) am\b", "not_says": ["sorry"]}


def _rows() -> list[dict[str, Any]]:
    """Three turns scored by the real scoring: 3 checks (2 pass), none, 1 check (fails)."""
    return [
        {"call_id": "00-support", "turn": 0, "expectations": score("We open at 8 AM, sorry for the wait", HOURS)},
        {"call_id": "00-support", "turn": 1, "expectations": None},
        {"call_id": "01-bye", "turn": 0, "expectations": score("goodbye", {"says_all": ["thanks", "bye"]})},
    ]


def _parsed(data: bytes) -> ET.Element:
    return ET.fromstring(data)


def test_one_case_per_check_named_by_call_and_turn_with_detail_as_the_message() -> None:
    cases = expectation_cases(_rows())
    assert [(c.classname, c.name, c.outcome) for c in cases] == [
        ("00-support", "turn 0 says_any", PASSED), ("00-support", "turn 0 matches", PASSED),
        ("00-support", "turn 0 not_says", FAILED), ("01-bye", "turn 0 says_all", FAILED)]
    assert cases[2].message == "heard 'sorry'" and cases[3].message == "missing 'thanks', 'bye'"
    assert '"sorry"' in cases[2].text  # what was wanted


def test_run_suite_parses_with_etree_counts_and_kinds() -> None:
    summary = {"run_id": "20261203-call", "answers": {"expectations_passed": 2, "expectations": 4}}
    suite = run_suite(summary, _rows(), {"02-dropped": "no audio from the agent within 15 s"})
    root = _parsed(to_bytes([suite]))
    assert root.tag == "testsuites" and (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "2", "1")
    (ts,) = root.findall("testsuite")
    assert ts.get("name") == "20261203-call" and ts.get("tests") == "5"
    props = {p.get("name"): p.get("value") for p in ts.iter("property")}
    assert props == {"run_id": "20261203-call", "expectations_passed": "2", "expectations": "4"}
    cases = ts.findall("testcase")
    assert len(cases) == 5
    assert [c.get("name") for c in cases if c.find("failure") is not None] == ["turn 0 not_says", "turn 0 says_all"]
    (err,) = [c for c in cases if c.find("error") is not None]
    assert err.get("classname") == "02-dropped" and err.get("name") == "call"
    assert err.find("error").get("message") == "no audio from the agent within 15 s"  # type: ignore[union-attr]
    assert totals([suite]) == (5, 2, 1)


def test_junitparser_reads_the_same_results(tmp_path: Path) -> None:
    suite = run_suite({"run_id": "r"}, _rows(), {"02-dropped": "refused"})
    path = write(tmp_path / "out" / "junit.xml", [suite])
    xml = junitparser.JUnitXml.fromfile(str(path))
    kinds = []
    for ts in xml:
        for case in ts:
            kinds.append((case.classname, case.name,
                          "passed" if case.is_passed else type(case.result[0]).__name__.lower()))
    assert kinds == [("00-support", "turn 0 says_any", "passed"), ("00-support", "turn 0 matches", "passed"),
                     ("00-support", "turn 0 not_says", "failure"), ("01-bye", "turn 0 says_all", "failure"),
                     ("02-dropped", "call", "error")]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["junit.xml"]  # no temporary file left


@dataclass(frozen=True)
class _Gate:
    name: str
    outcome: str
    reason: str


def test_gates_pass_fail_and_undecided_become_passed_failure_and_error() -> None:
    gates = [_Gate("far_p50 +150ms", "pass", "b vs a: FAR p50: regression at most -20ms"),
             _Gate("far_p95 +50ms", "fail", "b vs a: FAR p95 regressed by at least 80ms"),
             _Gate("stop_p50 +50ms", "undecided", "b vs a: stop latency p50: too few samples (n 3/3)")]
    root = _parsed(to_bytes([Suite("compare", tuple(gate_cases(gates)))]))
    cases = root.findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == [g.name for g in gates]
    assert all(c.get("classname") == "compare" for c in cases)
    assert [(c.find("failure") is not None, c.find("error") is not None) for c in cases] == [
        (False, False), (True, False), (False, True)]
    assert cases[2].find("error").get("message") == gates[2].reason  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="outcome 'maybe'"):
        gate_cases([_Gate("x", "maybe", "")])


def test_no_checks_is_an_empty_suite_not_a_pass() -> None:
    root = _parsed(to_bytes([run_suite({"run_id": "r"}, [{"call_id": "c", "turn": 0, "expectations": None}])]))
    assert root.get("tests") == "0" and not root.findall("testsuite/testcase")


def test_a_bad_outcome_is_refused() -> None:
    with pytest.raises(ValueError, match="outcome"):
        Case("c", "n", "skipped")


results = st.lists(st.tuples(st.booleans(), st.text(max_size=30)), max_size=4)


@settings(max_examples=60, deadline=None)
@given(turns=st.lists(results, max_size=6), failed=st.dictionaries(st.text(min_size=1, max_size=8), st.text(),
                                                                     max_size=2))
def test_any_checks_and_any_text_make_xml_that_parses_with_matching_counts(
        turns: list[list[tuple[bool, str]]], failed: dict[str, str]) -> None:
    rows = [{"call_id": f"c{i}", "turn": i,
             "expectations": json.dumps([{"check": "says_any", "want": [d], "passed": p, "detail": d}
                                         for p, d in checks]) if checks else None}
            for i, checks in enumerate(turns)]
    suite = run_suite({"run_id": "r\x00"}, rows, failed)
    root = _parsed(to_bytes([suite]))  # control characters and all: still well-formed
    n_checks = sum(len(t) for t in turns)
    n_failed = sum(not p for t in turns for p, _ in t)
    assert len(root.findall("testsuite/testcase")) == n_checks + len(failed) == int(root.get("tests", "-1"))
    assert len(root.findall("testsuite/testcase/failure")) == n_failed == int(root.get("failures", "-1"))
    assert len(root.findall("testsuite/testcase/error")) == len(failed) == int(root.get("errors", "-1"))
    assert totals([suite]) == (n_checks + len(failed), n_failed, len(failed))


def test_outcome_names_are_the_three_kinds() -> None:
    assert (PASSED, FAILED, ERROR) == ("passed", "failed", "error")
    assert call_error_case("c", "why").outcome == ERROR
