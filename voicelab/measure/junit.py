"""JUnit XML for a CI: one test case per expectation check of a run's turns, one per `compare --fail-on` gate.

A CI reads JUnit XML (GitHub Actions reporters, GitLab, Jenkins): `<testsuites>` of `<testsuite>`s of
`<testcase classname=... name=...>`, each passed, or holding a `<failure message=...>` (the agent did not do what
was asked) or an `<error message=...>` (nothing could be decided: a call that failed, a gate without enough
samples for its interval). Here:

- an expectation check (`voicelab.measure.expectations`, a turn's `expectations` cell): classname the call
  (`00-echo_hours`, the call id: its fixture's name after the list position), name `turn N CHECK`, the
  failure's message the check's `detail` and its text what was wanted;
- a call that failed on the line (`voicelab call`): classname the call, name `call`, an error;
- a `--fail-on` gate of `voicelab compare` (anything with the `GateLike` attributes, e.g.
  `voicelab.analysis.compare.FailOnGate`): classname `compare`, name the gate (`far_p50 +150ms`), a failure when the
  regression's interval is beyond the threshold, an error when the runs cannot decide it.

Pure: builds the tree with the standard library (`xml.etree.ElementTree`) from rows, summaries and gates; the
one file it touches is the one `write` is given (written whole, then moved into place).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from xml.etree import ElementTree as ET

from voicelab.measure.expectations import from_json

PASSED, FAILED, ERROR = "passed", "failed", "error"
GATE_OUTCOMES = {"pass": PASSED, "fail": FAILED, "undecided": ERROR}
# characters XML 1.0 cannot hold at all (escaping does not help): control characters, lone surrogates, U+FFFE/F
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class Case:
    """One test case: passed, failed (`<failure>`) or undecided (`<error>`), with a one-line message."""

    classname: str
    name: str
    outcome: str = PASSED
    message: str = ""
    text: str = ""  # the failure's or error's body: what was wanted, what was seen

    def __post_init__(self) -> None:
        if self.outcome not in (PASSED, FAILED, ERROR):
            raise ValueError(f"outcome {self.outcome!r}: expected {PASSED}, {FAILED} or {ERROR}")


@dataclass(frozen=True)
class Suite:
    """One `<testsuite>`: a run folder's checks, or a comparison's gates."""

    name: str
    cases: tuple[Case, ...] = ()
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def failures(self) -> int:
        return sum(c.outcome == FAILED for c in self.cases)

    @property
    def errors(self) -> int:
        return sum(c.outcome == ERROR for c in self.cases)


class GateLike(Protocol):
    """What a gate must tell: its name (the figure and threshold), its outcome and why."""

    @property
    def name(self) -> str: ...  # e.g. "far_p50 +150ms"

    @property
    def outcome(self) -> str: ...  # "pass", "fail" or "undecided"

    @property
    def reason(self) -> str: ...  # one line


def expectation_cases(rows: Iterable[Mapping[str, Any]]) -> list[Case]:
    """A case per check of every turn's `expectations` cell, in row order (turns without checks give none)."""
    out = []
    for row in rows:
        for r in from_json(row.get("expectations")):
            want = r.get("want")
            out.append(Case(
                classname=str(row.get("call_id")), name=f"turn {row.get('turn')} {r.get('check')}",
                outcome=PASSED if r.get("passed") else FAILED, message=str(r.get("detail", "")),
                text=f"want {r.get('check')}: {json.dumps(want, ensure_ascii=False)}; {r.get('detail', '')}"))
    return out


def call_error_case(call_id: str, reason: str) -> Case:
    """A call that failed on the line: nothing of it could be checked."""
    return Case(classname=call_id, name="call", outcome=ERROR, message=reason, text=reason)


def run_suite(summary: Mapping[str, Any], rows: Iterable[Mapping[str, Any]],
              failed_calls: Mapping[str, str] | None = None) -> Suite:
    """A run folder's suite: named by its run id, a case per expectation check and per failed call; the
    summary's expectation counts as properties."""
    answers = summary.get("answers") or {}
    props = [("run_id", str(summary.get("run_id", "")))]
    props += [(k, str(answers[k])) for k in ("expectations_passed", "expectations") if k in answers]
    cases = expectation_cases(rows) + [call_error_case(c, r) for c, r in (failed_calls or {}).items()]
    return Suite(str(summary.get("run_id", "run")), tuple(cases), tuple(props))


def gate_cases(gates: Iterable[GateLike], classname: str = "compare") -> list[Case]:
    """A case per gate: pass, fail (`<failure>`) or undecided (`<error>`), its reason the message."""
    out = []
    for g in gates:
        if g.outcome not in GATE_OUTCOMES:
            raise ValueError(f"gate {g.name}: outcome {g.outcome!r}, expected one of {', '.join(GATE_OUTCOMES)}")
        out.append(Case(classname, g.name, GATE_OUTCOMES[g.outcome], "" if g.outcome == "pass" else g.reason,
                        g.reason))
    return out


def xml_text(text: str) -> str:
    """Text an XML 1.0 file can hold: a character it cannot (a control character from a fixture's phrase) becomes
    U+FFFD; ElementTree escapes the rest."""
    return _NOT_XML.sub("\ufffd", text)


def tree(suites: Sequence[Suite]) -> ET.Element:
    """`<testsuites>` with the counts a CI reads (tests, failures, errors) on it and on every suite."""
    root = ET.Element("testsuites", name="voicelab")
    _counts(root, [c for s in suites for c in s.cases])
    for s in suites:
        el = ET.SubElement(root, "testsuite", name=xml_text(s.name))
        _counts(el, s.cases)
        if s.properties:
            props = ET.SubElement(el, "properties")
            for k, v in s.properties:
                ET.SubElement(props, "property", name=xml_text(k), value=xml_text(v))
        for c in s.cases:
            case = ET.SubElement(el, "testcase", classname=xml_text(c.classname), name=xml_text(c.name), time="0")
            if c.outcome != PASSED:
                kind = "failure" if c.outcome == FAILED else "error"
                sub = ET.SubElement(case, kind, message=xml_text(c.message), type=kind)
                sub.text = xml_text(c.text or c.message)
    return root


def _counts(el: ET.Element, cases: Sequence[Case]) -> None:
    el.set("tests", str(len(cases)))
    el.set("failures", str(sum(c.outcome == FAILED for c in cases)))
    el.set("errors", str(sum(c.outcome == ERROR for c in cases)))
    el.set("skipped", "0")
    el.set("time", "0")


def to_bytes(suites: Sequence[Suite]) -> bytes:
    root = tree(suites)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write(path: str | Path, suites: Sequence[Suite]) -> Path:
    """The JUnit file, written whole beside its place and moved there (a CI never reads half a file)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(to_bytes(suites))
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


def totals(suites: Sequence[Suite]) -> tuple[int, int, int]:
    """(tests, failures, errors) over every suite."""
    return (sum(len(s.cases) for s in suites), sum(s.failures for s in suites), sum(s.errors for s in suites))
