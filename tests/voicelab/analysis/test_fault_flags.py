"""The planted-fault detectors (voicelab.analysis.fault_flags): each flags the behaviour it is meant for from a
line run's rows and call record, the clean agent's FAR is the baseline of `far_vs_clean` without the call itself,
and the confusion table counts precision and recall from the flags."""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from voicelab.analysis.fault_flags import (
    DETECTORS,
    EXPECTED,
    FAULTS,
    CallFacts,
    Flagged,
    TurnSeen,
    call_flags,
    confusion,
    flags,
    markdown,
)

ANSWERED = TurnSeen(1, None, 900.0, 0.0, None, False, 0, True)
COUGH = TurnSeen(0, "no_interrupt", None, 200.0, None, False, None, True)
BARGE = TurnSeen(3, "interrupt", 1000.0, 300.0, 250.0, False, 0, True)


def call(fault: str = "none", *turns: TurnSeen, **kw: object) -> CallFacts:
    base = CallFacts(fault, "run", f"{fault}-{len(turns)}", False, turns or (COUGH, ANSWERED, BARGE), 0, 0)
    return replace(base, **kw)  # type: ignore[arg-type]


def raised(c: CallFacts, clean: float | None = 900.0) -> set[str]:
    return {d for d, on in call_flags(c, clean).flags.items() if on}


def test_a_clean_call_is_flagged_by_nothing() -> None:
    assert raised(call()) == set()


def test_each_behaviour_raises_its_own_detector() -> None:
    assert raised(call("cuts-in", COUGH, replace(ANSWERED, talk_over_ms=450.0), BARGE)) == {"false_cut_in"}
    # a reply begun in the caller's pause and cut off before the caller went on: no talk-over, still a cut-in
    assert raised(call("cuts-in", COUGH, replace(ANSWERED, cut_in=True), BARGE)) == {"false_cut_in"}
    assert raised(call("deaf", COUGH, ANSWERED, replace(BARGE, stop_latency_ms=1800.0))) == {"late_stop"}
    assert raised(call("deaf", COUGH, ANSWERED, replace(BARGE, stop_latency_ms=None, talk_over_ms=2100.0))) \
        == {"late_stop"}
    assert raised(call("jumpy", replace(COUGH, false_barge_in=True), ANSWERED, BARGE)) == {"false_barge_in"}
    assert raised(call("slow", COUGH, replace(ANSWERED, far_ms=2500.0), replace(BARGE, far_ms=2600.0))) \
        == {"far_vs_clean"}
    assert raised(call("wrong-fact", COUGH, replace(ANSWERED, checks_failed=1), BARGE)) == {"expectations"}
    assert raised(call("revises", revisions=1)) == {"revision"}
    assert raised(call("mute-turn", COUGH, replace(ANSWERED, far_ms=None), BARGE)) == {"unanswered"}
    assert raised(call("drops", COUGH, replace(ANSWERED, far_ms=None), BARGE, failed=True)) == {"failed_call"}
    assert raised(call("garbled", audio_gaps=3)) == {"audio_gaps"}


def test_a_barge_in_with_no_reply_playing_is_no_late_stop() -> None:
    """An agent that never answered the turn before has nothing to stop (the turn started on the timeout)."""
    timed_out = replace(BARGE, stop_latency_ms=None, talk_over_ms=0.0, bot_was_replying=False)
    assert "late_stop" not in raised(call("mute-turn", COUGH, ANSWERED, timed_out))


def test_the_clean_baseline_leaves_the_call_itself_out() -> None:
    clean = [call("none", replace(ANSWERED, far_ms=far), call_id=f"c{i}") for i, far in enumerate([800.0, 900.0, 3000.0])]
    out = flags(clean)
    assert [f.figures["clean_far_p50_ms"] for f in out] == [1950.0, 1900.0, 850.0]
    assert [f.flags["far_vs_clean"] for f in out] == [False, False, True]


def test_from_run_reads_the_rows_and_the_call_record() -> None:
    meta = {"status": "ok", "line": {"clears_resumed": 2, "clears_unprompted": 1},
            "schedule": [{"turn": 0, "reason": "rule"}, {"turn": 1, "reason": "timeout"}]}
    checks = json.dumps([{"check": "says_all", "passed": True}, {"check": "not_says", "passed": False}])
    rows = [{"turn": 1, "expect": "interrupt", "far_ms": None, "talk_over_ms": 0.0, "stop_latency_ms": None,
             "false_barge_in": None, "expectations": None},
            {"turn": 0, "expect": None, "far_ms": 700.0, "talk_over_ms": 0.0, "stop_latency_ms": None,
             "false_barge_in": None, "expectations": checks}]
    c = CallFacts.from_run("revises", "run", "r1-00-x", meta, rows, 4)
    assert [t.turn for t in c.turns] == [0, 1] and c.turns[0].checks_failed == 1 and c.turns[1].checks_failed is None
    assert not c.turns[1].bot_was_replying and c.revisions == 1
    assert c.audio_gaps == 4 and not c.failed and c.far_p50 == 700.0


@given(st.lists(st.tuples(st.sampled_from(FAULTS), st.lists(st.booleans(), min_size=len(DETECTORS),
                                                             max_size=len(DETECTORS))), min_size=1, max_size=30))
def test_precision_and_recall_count_the_flags(calls: list[tuple[str, list[bool]]]) -> None:
    flagged = [Flagged(fault, "run", str(i), dict(zip(DETECTORS, fl, strict=True))) for i, (fault, fl) in enumerate(calls)]
    out = confusion(flagged)
    for d, fault in EXPECTED.items():
        s = out["detectors"][d]
        assert s["tp"] + s["fn"] == sum(1 for f, _ in calls if f == fault)
        assert s["tp"] + s["fp"] == sum(1 for f in flagged if f.flags[d])
        assert s["recall"]["n"] == s["tp"] + s["fn"] and s["precision"]["n"] == s["tp"] + s["fp"]
    assert sum(row["calls"] for row in out["table"].values()) == len(calls)
    assert out["clean_flagged"]["calls"] == sum(1 for f, _ in calls if f == "none")
    text = markdown(out)
    assert all(f"| {fault} (" in text for fault in out["table"])
    # a detector is listed with its precision and recall when its fault was called or it flagged a call
    assert all((f"| `{d}` | {s['fault']} |" in text) == (s["tp"] + s["fn"] + s["fp"] > 0)
               for d, s in out["detectors"].items())
