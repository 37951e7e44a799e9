"""The pure side of barge-in by pause: the word rule, one pause's decision, and the pause figures."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voicelab.measure.events import Event, EventKind
from voicelab.measure.metrics import summarize, turn_table
from voicelab.measure.pauses import pauses_by_turn
from voicelab.rules.barge_in import (
    BACKCHANNEL_MAX_WORDS,
    PauseAction,
    PausedBot,
    PauseThresholds,
    decide_interruption,
    word_count_p,
    words_plausible,
)

K = EventKind
WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


def test_word_rule_backchannel_vs_sentence() -> None:
    assert word_count_p("") is None
    assert word_count_p("the") < 0.3  # pocketsphinx's "mm hmm"
    assert word_count_p("i have") < 0.3  # pocketsphinx's "uh huh"
    assert word_count_p("when do you close") >= PauseThresholds().stop_p


def test_backchannel_resumes_once_the_caller_stops() -> None:
    p = PausedBot(paused_at_ms=0.0)
    p.hear("i have", word_count_p)
    assert p.decide(100.0).action == PauseAction.WAIT  # caller still speaking
    p.caller_speaking = False
    assert p.decide(100.0).action == PauseAction.WAIT  # settling
    assert p.decide(300.0).action == PauseAction.RESUME


def test_sentence_stops_while_the_caller_speaks() -> None:
    p = PausedBot(paused_at_ms=1000.0)
    p.hear("when do you", word_count_p)
    assert p.decide(1100.0).action == PauseAction.STOP


def test_silence_resumes_and_long_wordless_sound_resumes() -> None:
    p = PausedBot(paused_at_ms=0.0, caller_speaking=False)
    assert p.decide(300.0).action == PauseAction.RESUME
    q = PausedBot(paused_at_ms=0.0)
    assert q.decide(1999.0).action == PauseAction.WAIT
    assert q.decide(2000.0).action == PauseAction.RESUME


@given(words=st.lists(WORD, max_size=8), speaking=st.booleans(),
       times=st.lists(st.floats(min_value=0, max_value=5000), min_size=2, max_size=6))
def test_decision_is_final_once_taken(words: list[str], speaking: bool, times: list[float]) -> None:
    """For fixed inputs, once STOP or RESUME at t, the same at every later t (no flip-flopping)."""
    p = PausedBot(paused_at_ms=0.0, caller_speaking=speaking)
    p.hear(" ".join(words), word_count_p)
    seen = None
    for t in sorted(times):
        a = p.decide(t).action
        if seen is not None:
            assert a == seen
        elif a != PauseAction.WAIT:
            seen = a


@given(words=st.lists(WORD, min_size=1, max_size=8))
def test_word_rule_is_monotone_in_words(words: list[str]) -> None:
    p = word_count_p(" ".join(words))
    assert p is not None
    assert (p >= PauseThresholds().stop_p) == (len(words) > BACKCHANNEL_MAX_WORDS)


def ev(turn: int, ms: float, kind: K, call: str = "c1", **payload: Any) -> Event:
    return Event(call, turn, int(ms * 1_000_000), kind, payload)


def _call() -> list[Event]:
    """A reply paused by a backchannel (resumed after 250 ms) and later by an interruption (stopped)."""
    return [
        ev(0, 0, K.CALLER_SPEECH_START, expect=None, text="q"), ev(0, 1000, K.CALLER_SPEECH_END, expect=None),
        ev(0, 1500, K.BOT_AUDIBLE_ONSET),
        ev(1, 3000, K.CALLER_SPEECH_START, expect="no_interrupt"), ev(1, 3300, K.CALLER_SPEECH_END),
        ev(0, 3200, K.PLAYOUT_PAUSE, reason="onset_vad"), ev(0, 3450, K.PLAYOUT_RESUME, gap_ms=250.0, reason="x"),
        ev(2, 6000, K.CALLER_SPEECH_START, expect="interrupt"), ev(2, 6900, K.CALLER_SPEECH_END),
        ev(0, 6210, K.PLAYOUT_PAUSE, reason="onset_vad"), ev(0, 6215, K.BOT_AUDIBLE_END),
        ev(2, 6500, K.INTERRUPTION, bot_speaking=True),
    ]


def test_pauses_are_attributed_to_the_caller_utterance() -> None:
    got = pauses_by_turn(_call())
    assert got[1].pauses == 1 and got[1].resume_gaps_ms == [250.0]
    assert got[2].pauses == 1 and got[2].resume_gaps_ms == []


def test_turn_table_and_summary_pause_figures() -> None:
    rows = {r["turn"]: r for r in turn_table(_call())}
    assert rows[1]["false_pause"] is True and rows[1]["resume_gap_ms"] == 250.0
    assert rows[1]["false_barge_in"] is False
    assert rows[2]["false_pause"] is None and rows[2]["stop_latency_ms"] == 215.0
    s = summarize(_call(), {"run_id": "r"})
    assert s["false_pauses"] == 1 and s["pauses"] == 2 and s["false_barge_ins"] == 0
    assert s["resume_gap_ms"]["n"] == 1 and s["resume_gap_ms"]["p50"] == 250.0


def test_a_partial_reading_never_decides_alone() -> None:
    """'all' (a partial of 'all right') reads as an interruption; the final reading is a backchannel: the bot,
    already silent, waits for the final and resumes."""
    judge = {"all": 0.99, "all right": 0.01}.get
    p = PausedBot(paused_at_ms=0.0)
    p.hear("all", judge, final=False)
    assert p.decide(150.0).action == PauseAction.WAIT  # caller still speaking
    p.caller_speaking = False
    assert p.decide(300.0).action == PauseAction.WAIT  # the partial's verdict is not taken before resume_ms
    p.hear("all right", judge, final=True)
    assert p.decide(320.0).action == PauseAction.RESUME
    q = PausedBot(paused_at_ms=0.0, caller_speaking=False)  # no final ever lands: the partial decides late
    q.hear("no wait", lambda w: 0.95, final=False)
    assert q.decide(300.0).action == PauseAction.WAIT
    assert q.decide(PauseThresholds().resume_ms).action == PauseAction.STOP


def test_a_reading_longer_than_the_speech_could_hold_is_no_evidence() -> None:
    th = PauseThresholds()
    assert words_plausible(5, 500.0) and not words_plausible(6, 500.0)  # 1 + 6 words/s x (0.5 + 0.25 s)
    assert words_plausible(50, None)  # unknown length: no test
    p = PausedBot(paused_at_ms=0.0)
    p.vad_started(100.0, start_secs=0.2)
    p.vad_stopped(500.0, stop_secs=0.12)  # ~0.48 s of speech
    assert p.speech_ms(600.0) == pytest.approx(480.0)
    p.hear("i b i b i b i", lambda w: 1.0, final=True)  # the model calls the loop an interruption
    d = p.decide(th.settle_ms + 600.0)
    assert d.action == PauseAction.RESUME and d.reason == "untrusted reading: no words"
    # the same words over 2 s of speech are an interruption
    q = PausedBot(paused_at_ms=0.0)
    q.vad_started(100.0, start_secs=2.0)
    q.vad_stopped(500.0)
    q.hear("i b i b i b i", lambda w: 1.0, final=True)
    assert q.decide(600.0).action == PauseAction.STOP


def test_once_the_caller_stops_the_rule_waits_for_the_final_reading() -> None:
    th = PauseThresholds()
    p = PausedBot(paused_at_ms=0.0)
    p.vad_started(50.0, start_secs=0.2)
    p.hear("all", {"all": 0.99, "all right": 0.01}.get, final=False)
    p.vad_stopped(400.0, stop_secs=0.12)
    assert p.decide(400.0 + th.final_wait_ms - 1).action == PauseAction.WAIT  # past resume_ms: still waiting
    p.hear("all right", {"all": 0.99, "all right": 0.01}.get, final=True)
    assert p.decide(400.0 + th.final_wait_ms - 1).action == PauseAction.RESUME
    # a final that never lands (a cough Whisper reads as nothing): the partial decides once it is overdue
    q = PausedBot(paused_at_ms=0.0)
    q.vad_started(50.0, start_secs=0.2)
    q.vad_stopped(400.0, stop_secs=0.12)
    assert q.decide(400.0 + th.final_wait_ms - 1).action == PauseAction.WAIT
    assert q.decide(400.0 + th.final_wait_ms).action == PauseAction.RESUME


def test_long_speech_over_the_bot_stops_it_even_when_its_reading_is_implausible() -> None:
    th = PauseThresholds()
    d = decide_interruption("", None, th.max_hold_ms, True, th, heard_words=9)
    assert d.action == PauseAction.STOP
    assert decide_interruption("", None, th.max_hold_ms, True, th).action == PauseAction.RESUME


@given(words=st.sampled_from(["", "uh", "no wait", "all right", "one two three four five"]),
       p=st.one_of(st.none(), st.floats(0.0, 1.0)), final=st.booleans(), speaking=st.booleans(),
       t=st.floats(0.0, 3000.0), stop=st.one_of(st.none(), st.floats(0.0, 3000.0)), later=st.floats(0.0, 3000.0),
       complete=st.one_of(st.none(), st.floats(0.0, 1.0)))
def test_the_outcome_stays_once_reached_as_all_clocks_move(words: str, p: float | None, final: bool,
                                                          speaking: bool, t: float, stop: float | None,
                                                          later: float, complete: float | None) -> None:
    first = decide_interruption(words, p, t, speaking, words_final=final, awaiting_final_ms=stop,
                                complete_p=complete).action
    if first is not PauseAction.WAIT:
        again = decide_interruption(words, p, t + later, speaking, words_final=final,
                                    awaiting_final_ms=None if stop is None else stop + later,
                                    complete_p=complete).action
        assert again is first


def test_a_fragment_the_caller_dropped_does_not_stop_the_bot() -> None:
    """Two words the interruption task calls the start of a request, but not a whole utterance, and the caller
    has stopped: they yielded the floor. A short whole interruption ("hold on") still stops the bot."""
    th = PauseThresholds()
    complete = {"i b": 0.27, "hold on": 0.77, "can you check my": 0.0}.get
    for words, action in (("i b", PauseAction.RESUME), ("hold on", PauseAction.STOP),
                          ("can you check my", PauseAction.STOP)):
        p = PausedBot(paused_at_ms=0.0)
        p.vad_started(0.0, start_secs=0.3)
        p.vad_stopped(400.0)
        p.hear(words, lambda w: 1.0, final=True, complete=complete)
        assert p.complete_p == (None if len(words.split()) > th.fragment_words else complete(words))
        d = p.decide(400.0 + th.settle_ms)
        assert d.action == action, words
    assert PauseAction.RESUME == decide_interruption("i b", 1.0, 300.0, False, complete_p=0.27).action
    # while the caller still talks, a fragment waits; a partial is never judged a fragment
    assert decide_interruption("i b", 1.0, 300.0, True, complete_p=0.27).action == PauseAction.WAIT
    assert decide_interruption("i b", 1.0, 300.0, False, words_final=False, complete_p=0.27).action != PauseAction.RESUME
