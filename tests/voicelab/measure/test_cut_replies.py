"""A reply the caller cut short is not scored (voicelab.measure.metrics.unscore_cut_replies), in process and on
the line alike."""

from __future__ import annotations

from typing import Any

from voicelab.measure.metrics import CUT_REPLY_SCORES, unscore_cut_replies


def _row(turn: int, expect: str | None = None, stop: float | None = None) -> dict[str, Any]:
    return {"call_id": "c", "turn": turn, "expect": expect, "stop_latency_ms": stop, "answer_text": f"reply {turn}",
            "answer_correct": True, "coherent": True, "wrong_tool_call": False, "expectations": "[]"}


def test_the_reply_before_an_interruption_that_stopped_the_bot_is_unscored() -> None:
    rows = unscore_cut_replies([_row(0), _row(1, "interrupt", stop=80.0), _row(2)])
    assert all(rows[0][k] is None for k in CUT_REPLY_SCORES) and rows[0]["answer_text"] == "reply 0"
    assert rows[1]["answer_correct"] is True and rows[2]["answer_correct"] is True


def test_an_interruption_that_found_the_bot_silent_leaves_the_reply_scored() -> None:
    rows = unscore_cut_replies([_row(0), _row(1, "interrupt", stop=None), _row(2, "no_interrupt", stop=None)])
    assert [r["answer_correct"] for r in rows] == [True, True, True]
