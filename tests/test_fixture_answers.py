"""The bundled fixtures say what the right answer is, and that answer is one the shop can give."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engines.shop import business as B
from engines.shop.answers import parse_expect, score_reply
from engines.shop.corpus import render, week_slots
from voicelab.fixtures.format import FIXTURES_ROOT, select
from voicelab.fixtures.suite import SUITE


def _turns(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return list(doc.get("turns") or doc.get("segments") or [])


def _all_fixtures() -> list[Path]:
    return sorted(FIXTURES_ROOT.glob("*/fixture.json"))


def _right_reply(expect: str | dict[str, Any]) -> str:
    """The reply the shop's grammar gives for an expectation (engines/shop/corpus.py REPLIES, business facts)."""
    want = parse_expect(expect)
    s = dict(want.slots)
    if want.intent == "fallback":
        return render("fallback")
    if want.intent == "hours":
        h = B.HOURS[s["day"]]
        return render("hours_closed", day=s["day"]) if h is None else render("hours_open", day=s["day"],
                                                                           open=h[0], close=h[1])
    if want.intent == "hours_week":
        return render("hours_week", **week_slots())
    if want.intent in ("order_status", "readback_phone"):
        spoken = " ".join(s["number"])
        return render(want.intent, number=s["number"], spoken=spoken)
    return render(want.intent, **s)


def test_every_reply_turn_of_the_default_list_says_what_the_answer_is() -> None:
    paths = select(["default"])
    assert paths
    missing = [f"{p.parent.name} turn {i} ({t['text']!r})" for p in paths for i, t in enumerate(_turns(p))
               if t.get("expect") != "no_interrupt" and "expect_reply" not in t]
    assert missing == []


def test_backchannels_carry_no_expected_reply() -> None:
    for p in _all_fixtures():
        for t in _turns(p):
            if t.get("expect") == "no_interrupt":
                assert "expect_reply" not in t, p


def test_real_recordings_expect_the_fallback() -> None:
    real = [p for p in _all_fixtures() if p.parent.name.startswith("hr_")]
    assert len(real) == 5
    assert {t.get("expect_reply") for p in real for t in _turns(p)} == {"fallback"}


@pytest.mark.parametrize("path", _all_fixtures(), ids=lambda p: p.parent.name)
def test_each_expected_reply_is_one_the_shop_gives(path: Path) -> None:
    for t in _turns(path):
        if "expect_reply" in t:
            reply = _right_reply(t["expect_reply"])
            score = score_reply(reply, t["expect_reply"])
            assert score.correct, (path.parent.name, t["text"], reply, score.reason)


def test_build_definitions_write_the_committed_expectations() -> None:
    """A rebuild writes what the committed fixture.json files hold (suite.py is where they are defined)."""
    for spec in SUITE:
        committed = [t.get("expect_reply") for t in _turns(FIXTURES_ROOT / spec.name / "fixture.json")]
        assert committed == [line.expect_reply for line in spec.lines], spec.name
