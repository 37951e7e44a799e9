"""Metrics on hand-built event logs whose figures are worked out by hand in the comments."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from voicelab.measure.events import Event, EventKind
from voicelab.measure.metrics import (
    FAR_PARTS,
    _Anchors,
    _anchors,
    _attributed_reply,
    _critical_path,
    _onset,
    _stop_latency,
    _utterance,
    latency_stats,
    percentile,
    spoken_words,
    summarize,
    turn_table,
    word_edit_distance,
)

K = EventKind
SUMMARY_KEYS = {"run_id", "engine", "sampler", "policy", "calls", "turns", "far_ms", "far_breakdown_ms",
                "stop_latency_ms", "recovery_ms", "heard_text_word_errors", "false_barge_ins", "revisions",
                "engine_figures", "truth", "false_cut_ins", "stt_wer", "preemptive", "answers", "false_pauses",
                "pauses", "resume_gap_ms", "first_token_to_audio_ms"}


def ev(turn: int, ms: float, kind: K, call: str = "c1", **payload: Any) -> Event:
    return Event(call, turn, int(ms * 1_000_000), kind, payload)


def snap(turn: int, ms: float, text: str, revised_chars: list[int] | None = None) -> Event:
    return ev(turn, ms, K.ENGINE_SNAPSHOT, step=0, text=text, revised_chars=revised_chars or [])


def call_log() -> list[Event]:
    """Turn 0 answered, turn 1 barges in on it, turn 2 is a backchannel that wrongly stops the bot."""
    return [
        ev(-1, 0, K.CALL_START),
        # turn 0: speech ends 2000, heard at 2800 -> FAR 800 = 300 + 100 + 200 + 10 + 90 + 100
        ev(0, 500, K.CALLER_SPEECH_START, expect=None),
        ev(0, 2000, K.CALLER_SPEECH_END),
        ev(0, 2300, K.TURN_END),
        ev(0, 2350, K.STT_FINAL, text="when do you open"),
        ev(0, 2400, K.LLM_REQUEST),
        snap(0, 2450, "we"),
        snap(0, 2500, "we open at"),
        ev(0, 2600, K.GATE_COMMIT, chunk_id=0, text="we open", start_char=0, end_char=7),
        ev(0, 2610, K.TTS_REQUEST, chunk_id=0, text="we open"),
        snap(0, 2650, "we open at 9 am."),
        ev(0, 2700, K.TTS_FIRST_AUDIO, chunk_id=0),
        ev(0, 2700, K.GATE_COMMIT, chunk_id=1, text="at 9 am.", start_char=7, end_char=16),
        ev(0, 2700, K.ENGINE_DONE, tokens=5, steps=5, forwards=10, cancelled=False),
        ev(0, 2705, K.TTS_REQUEST, chunk_id=1, text="at 9 am."),
        ev(0, 2750, K.PLAYOUT_START, chunk_id=0, text="we open"),
        ev(0, 2800, K.BOT_AUDIBLE_ONSET),
        ev(0, 2900, K.TTS_FIRST_AUDIO, chunk_id=1),
        ev(0, 3400, K.PLAYOUT_STOP, chunk_id=0, text="we open", interrupted=False),
        ev(0, 3400, K.PLAYOUT_START, chunk_id=1, text="at 9 am."),
        # turn 1 (expect=interrupt) starts at 3800; the bot is last heard at 4000 -> stop latency 200
        ev(1, 3800, K.CALLER_SPEECH_START, expect="interrupt"),
        ev(1, 3900, K.INTERRUPTION, bot_speaking=True),
        ev(0, 3950, K.PLAYOUT_STOP, chunk_id=1, text="at 9 am.", played="at 9", interrupted=True),
        ev(0, 4000, K.BOT_AUDIBLE_END),
        # kept "we open at 9 am" but heard "we open at 9": one word error
        ev(0, 4010, K.CONTEXT_UPDATE, content="we open at 9 am", interrupted=True),
        # turn 1: FAR 600 = 200 + 50 + 150 + 10 + 90 + 100
        ev(1, 5000, K.CALLER_SPEECH_END),
        ev(1, 5200, K.TURN_END),
        ev(1, 5250, K.LLM_REQUEST),
        snap(1, 5300, "sunday we"),
        snap(1, 5350, "sunday we are closed."),
        snap(1, 5360, "sunday we are open"),  # churn: nothing released yet
        snap(1, 5390, "sunday we are closed."),  # churn again
        ev(1, 5400, K.GATE_COMMIT, chunk_id=0, text="sunday we are closed.", start_char=0, end_char=21),
        ev(1, 5410, K.TTS_REQUEST, chunk_id=0, text="sunday we are closed."),
        snap(1, 5420, "sunday we are closed.", [10]),  # sent to TTS, not played: post-synthesis
        ev(1, 5500, K.TTS_FIRST_AUDIO, chunk_id=0),
        ev(1, 5500, K.ENGINE_DONE, tokens=4, steps=4, forwards=8, cancelled=False),
        ev(1, 5550, K.PLAYOUT_START, chunk_id=0, text="sunday we are closed."),
        snap(1, 5560, "sunday we are closed.", [0]),  # already playing: audible
        ev(1, 5600, K.BOT_AUDIBLE_ONSET),
        # turn 2: a backchannel while the bot speaks; the bot stops anyway (false barge-in)
        ev(2, 6000, K.CALLER_SPEECH_START, expect="no_interrupt"),
        ev(2, 6100, K.INTERRUPTION, bot_speaking=True),
        ev(2, 6300, K.CALLER_SPEECH_END),
        ev(1, 6400, K.PLAYOUT_STOP, chunk_id=0, text="sunday we are closed.", interrupted=False),
        ev(1, 6500, K.BOT_AUDIBLE_END),
        ev(-1, 7000, K.CALL_END),
    ]


def test_turn_table_known_answers() -> None:
    rows = turn_table(call_log())
    assert [(r["call_id"], r["turn"], r["expect"]) for r in rows] == [
        ("c1", 0, None), ("c1", 1, "interrupt"), ("c1", 2, "no_interrupt")]
    t0, t1, t2 = rows
    parts = ("endpointing_ms", "stt_ms", "engine_first_commit_ms", "gate_to_tts_ms", "tts_first_audio_ms",
             "playout_ms")
    assert [t0[p] for p in parts] == [300, 100, 200, 10, 90, 100]
    assert [t1[p] for p in parts] == [200, 50, 150, 10, 90, 100]
    for r in (t0, t1):
        assert sum(r[p] for p in parts) == pytest.approx(r["far_ms"])  # the breakdown adds up
    assert (t0["far_ms"], t1["far_ms"], t2["far_ms"]) == (800, 600, None)
    assert (t0["stop_latency_ms"], t1["stop_latency_ms"], t2["stop_latency_ms"]) == (None, 200, None)
    assert (t0["recovery_ms"], t1["recovery_ms"]) == (None, 600)
    assert (t0["interrupted"], t0["heard_word_errors"], t1["heard_word_errors"]) == (True, 1, None)
    assert (t0["spoken_words"], t1["spoken_words"]) == (4, 4)
    assert (t0["false_barge_in"], t1["false_barge_in"], t2["false_barge_in"]) == (None, None, True)
    assert (t0["churn"], t0["post_synthesis"], t0["audible"]) == (0, 0, 0)
    assert (t1["churn"], t1["post_synthesis"], t1["audible"]) == (2, 1, 1)
    assert t2["churn"] is None  # no engine ran for the backchannel
    assert (t0["first_snapshot_ms"], t0["engine_ms"], t0["tokens"], t0["chunks"]) == (50, 300, 5, 2)
    # first visible text 2450 / 5300, first TTS audio 2700 / 5500; 4 tokens in 0.2 s, 3 in 0.26 s
    assert (t0["first_token_ms"], t0["first_token_to_audio_ms"], t0["output_tokens_per_s"]) == (50, 250, 20.0)
    assert (t1["first_token_ms"], t1["first_token_to_audio_ms"], t1["output_tokens_per_s"]) == (50, 200, 11.54)
    assert t2["first_token_to_audio_ms"] is None


def test_summary_known_answers() -> None:
    truth = [{"call_id": "c1", "turn": 0, "far_ms": 810.0, "stop_latency_ms": None},
             {"call_id": "c1", "turn": 1, "far_ms": 590.0, "stop_latency_ms": 215.0}]
    s = summarize(call_log(), {"run_id": "r1", "engine": "tiny-diffusion", "sampler": "low_confidence",
                               "policy": "pinned"}, truth)
    assert SUMMARY_KEYS <= set(s)
    assert (s["run_id"], s["engine"], s["sampler"], s["policy"]) == ("r1", "tiny-diffusion", "low_confidence",
                                                                    "pinned")
    assert (s["calls"], s["turns"]) == (1, 3)
    assert s["far_ms"] == {"p50": 700.0, "p95": 790.0, "n": 2,  # 600 + 0.95 * (800 - 600)
                           "p50_ci": [600.0, 800.0], "p95_ci": [600.0, 800.0]}  # resamples of 2 values
    assert s["far_breakdown_ms"] == {"endpointing": 250.0, "stt": 75.0, "engine_first_commit": 175.0,
                                     "tts_first_audio": 90.0, "playout": 100.0,
                                     "vad_stop": None, "stt_final_wait": None, "rule_wait": None}  # no VAD stops
    assert s["stop_latency_ms"] == {"p50": 200.0, "p95": 200.0, "n": 1, "p50_ci": None, "p95_ci": None}
    assert s["recovery_ms"] == {"p50": 600.0, "p95": 600.0, "n": 1, "p50_ci": None, "p95_ci": None}
    assert s["heard_text_word_errors"] == 1
    assert s["false_barge_ins"] == 1
    assert s["revisions"] == {"churn": 2, "post_synthesis": 1, "audible": 1, "spoken_words": 8,
                              "audible_per_100_words": 12.5}
    # 9 tokens in 0.3 s + 0.25 s; 18 forwards for 9 tokens
    assert s["engine_figures"] == {"first_commit_ms_p50": 175.0, "tokens_per_s": 16.36, "forwards_per_token": 2.0,
                                   "ttft_ms_p50": 50.0, "output_tokens_per_s_p50": 15.77}  # (20 + 11.54) / 2
    assert s["first_token_to_audio_ms"] == {"p50": 225.0, "p95": 247.5, "n": 2,  # 200 + 0.95 * (250 - 200)
                                            "p50_ci": [200.0, 250.0], "p95_ci": [200.0, 250.0]}
    assert s["truth"] == {"far_abs_diff_ms_p95": 10.0, "stop_abs_diff_ms_p95": 15.0}


def test_no_samples_give_null_never_zero() -> None:
    events = [ev(0, 100, K.CALLER_SPEECH_START), ev(0, 900, K.CALLER_SPEECH_END)]
    s = summarize(events, {})
    assert SUMMARY_KEYS <= set(s)
    assert (s["calls"], s["turns"]) == (1, 1)
    assert s["far_ms"] == {"p50": None, "p95": None, "n": 0, "p50_ci": None, "p95_ci": None}
    assert s["far_breakdown_ms"] == dict.fromkeys(
        ("endpointing", "stt", "engine_first_commit", "tts_first_audio", "playout", "vad_stop", "stt_final_wait",
         "rule_wait"))
    assert s["stop_latency_ms"]["p50"] is None and s["recovery_ms"]["n"] == 0
    assert s["heard_text_word_errors"] is None and s["false_barge_ins"] is None
    assert s["revisions"] == {"churn": None, "post_synthesis": None, "audible": None, "spoken_words": 0,
                              "audible_per_100_words": None}
    assert s["engine_figures"] == {"first_commit_ms_p50": None, "tokens_per_s": None, "forwards_per_token": None,
                                   "ttft_ms_p50": None, "output_tokens_per_s_p50": None}
    assert s["first_token_to_audio_ms"] == {"p50": None, "p95": None, "n": 0, "p50_ci": None, "p95_ci": None}
    assert s["truth"] == {"far_abs_diff_ms_p95": None, "stop_abs_diff_ms_p95": None}
    assert summarize([], {})["turns"] == 0


def test_zero_revisions_measured_is_zero_not_null() -> None:
    events = [ev(0, 0, K.CALLER_SPEECH_START), ev(0, 10, K.CALLER_SPEECH_END), snap(0, 20, "ok"),
              snap(0, 30, "ok then")]
    rev = summarize(events, {})["revisions"]
    assert (rev["churn"], rev["post_synthesis"], rev["audible"]) == (0, 0, 0)
    assert rev["audible_per_100_words"] is None  # nothing was spoken


def test_stop_latency_needs_the_bot_to_be_audible_after_the_barge_in() -> None:
    events = [
        ev(0, 0, K.CALLER_SPEECH_START), ev(0, 1000, K.CALLER_SPEECH_END),
        ev(0, 1500, K.BOT_AUDIBLE_ONSET), ev(0, 2000, K.BOT_AUDIBLE_END),
        ev(1, 2500, K.CALLER_SPEECH_START, expect="interrupt"),  # the bot had already finished
        ev(1, 3000, K.CALLER_SPEECH_END),
    ]
    rows = turn_table(events)
    assert rows[1]["stop_latency_ms"] is None and rows[1]["recovery_ms"] is None


def test_stop_latency_takes_the_last_audio_of_the_old_reply_only() -> None:
    events = [
        ev(0, 0, K.CALLER_SPEECH_START), ev(0, 1000, K.CALLER_SPEECH_END),
        ev(0, 1500, K.BOT_AUDIBLE_ONSET), ev(0, 2100, K.BOT_AUDIBLE_END),
        ev(0, 2150, K.BOT_AUDIBLE_ONSET),  # a pause between chunks, then more of the old reply
        ev(1, 2200, K.CALLER_SPEECH_START, expect="interrupt"),
        ev(0, 2480, K.BOT_AUDIBLE_END),
        ev(1, 3000, K.CALLER_SPEECH_END),
        ev(1, 3700, K.BOT_AUDIBLE_ONSET), ev(1, 4200, K.BOT_AUDIBLE_END),
    ]
    r = turn_table(events)[1]
    assert (r["stop_latency_ms"], r["recovery_ms"]) == (280, 700)


def test_unattributed_acoustic_onset_is_matched_by_time() -> None:
    events = [
        ev(0, 0, K.CALLER_SPEECH_START), ev(0, 1000, K.CALLER_SPEECH_END),
        ev(0, 1300, K.PLAYOUT_START, chunk_id=0, text="hi"),
        ev(-1, 1200, K.BOT_AUDIBLE_ONSET),  # before this reply's playout: not its onset
        ev(-1, 1350, K.BOT_AUDIBLE_ONSET),
    ]
    assert turn_table(events)[0]["far_ms"] == 350


def test_backchannel_interruption_counts_only_while_the_bot_speaks() -> None:
    events = [
        ev(0, 0, K.CALLER_SPEECH_START, expect="no_interrupt"), ev(0, 300, K.CALLER_SPEECH_END),
        ev(0, 200, K.INTERRUPTION, bot_speaking=False),
        ev(1, 1000, K.CALLER_SPEECH_START, expect="no_interrupt"), ev(1, 1300, K.CALLER_SPEECH_END),
    ]
    rows = turn_table(events)
    assert [r["false_barge_in"] for r in rows] == [False, False]
    assert summarize(events, {})["false_barge_ins"] == 0


def test_heard_text_unknown_when_an_interrupted_chunk_has_no_played_words() -> None:
    events = [
        ev(0, 0, K.CALLER_SPEECH_START), ev(0, 500, K.CALLER_SPEECH_END),
        ev(0, 600, K.GATE_COMMIT, chunk_id=0, text="we open at nine", start_char=0, end_char=15),
        ev(0, 700, K.PLAYOUT_START, chunk_id=0),
        ev(0, 900, K.PLAYOUT_STOP, chunk_id=0, interrupted=True),
        ev(0, 910, K.CONTEXT_UPDATE, content="we open", interrupted=True),
    ]
    row = turn_table(events)[0]
    assert row["interrupted"] is True and row["heard_word_errors"] is None
    assert summarize(events, {})["heard_text_word_errors"] is None


def test_calls_are_kept_apart() -> None:
    a = call_log()
    b = [Event("c2", e.turn, e.t_ns, e.kind, e.payload) for e in call_log()]
    s = summarize(b + a, {})
    assert (s["calls"], s["turns"]) == (2, 6)
    assert s["far_ms"]["n"] == 4 and s["false_barge_ins"] == 2
    assert [r["call_id"] for r in turn_table(a + b)] == ["c1"] * 3 + ["c2"] * 3


def test_helpers() -> None:
    assert percentile([], 50) is None
    assert percentile([5.0], 95) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert latency_stats([]) == {"p50": None, "p95": None, "n": 0, "p50_ci": None, "p95_ci": None}
    one = latency_stats([5.0])
    assert one["p50"] == 5.0 and one["p50_ci"] is None and one["p95_ci"] is None
    lo, hi = latency_stats([100.0, 120.0, 140.0, 160.0, 900.0])["p50_ci"]
    assert lo <= 140.0 <= hi
    assert word_edit_distance([], []) == 0
    assert word_edit_distance(["a", "b", "c"], ["a", "c"]) == 1
    assert word_edit_distance(["a", "b"], ["b", "a"]) == 2
    assert word_edit_distance(["we", "open"], ["we", "open", "at", "nine"]) == 2
    assert spoken_words("Sure, [book(day=friday)] you're booked!") == ["sure", "you're", "booked"]


def test_stt_wer_and_false_cut_in_per_turn() -> None:
    events = [
        ev(0, 100, K.CALLER_SPEECH_START, expect=None, text="what time do you open on saturday"),
        ev(0, 1900, K.CALLER_SPEECH_END, text="what time do you open on saturday"),
        ev(0, 2000, K.STT_FINAL, text="what time do you open on sunday"),
        # the bot starts talking at 1500 ms, inside the caller's speech: a reply to half a sentence
        ev(0, 1500, K.BOT_AUDIBLE_ONSET),
        ev(1, 3000, K.CALLER_SPEECH_START, expect=None, text="book me for 3 30"),
        ev(1, 4000, K.CALLER_SPEECH_END, text="book me for 3 30"),
        ev(1, 4100, K.STT_FINAL, text="book me for three thirty"),
        ev(1, 4600, K.BOT_AUDIBLE_ONSET),
    ]
    rows = {r["turn"]: r for r in turn_table(events)}
    assert rows[0]["stt_wer"] == pytest.approx(1 / 7, abs=1e-3)  # one substitution in seven words
    assert rows[0]["false_cut_in"] is True and rows[0]["far_ms"] == -400.0
    assert rows[1]["stt_wer"] == 0.0  # digits and spelled numbers compare equal
    assert rows[1]["false_cut_in"] is False
    s = summarize(events, {})
    assert s["false_cut_ins"] == 1
    assert s["stt_wer"]["n"] == 2 and s["stt_wer"]["mean"] == pytest.approx(1 / 14, abs=1e-3)


def test_no_recognised_turns_give_null_wer() -> None:
    s = summarize([ev(0, 100, K.CALLER_SPEECH_START), ev(0, 900, K.CALLER_SPEECH_END)], {})
    assert s["stt_wer"] == {"mean": None, "p95": None, "n": 0} and s["false_cut_ins"] == 0


def test_answers_are_scored_against_the_fixture() -> None:
    saturday = {"intent": "hours", "slots": {"day": "saturday"}}
    events = [
        ev(0, 100, K.CALLER_SPEECH_START, expect=None, text="when do you open on saturday", expect_reply=saturday),
        ev(0, 1000, K.CALLER_SPEECH_END, text="when do you open on saturday"),
        ev(0, 1400, K.ENGINE_DONE, tokens=12, cancelled=False, text="on saturday we are open from 10 am to 4 pm."),
        ev(1, 3000, K.CALLER_SPEECH_START, expect=None, text="when do you open on monday",
           expect_reply={"intent": "hours", "slots": {"day": "monday"}}),
        ev(1, 4000, K.CALLER_SPEECH_END, text="when do you open on monday"),
        ev(1, 4300, K.ENGINE_DONE, tokens=12, cancelled=False, text="on monday we are open from 9 am to 6 help you"),
    ]
    rows = {r["turn"]: r for r in turn_table(events)}
    assert rows[0]["answer_correct"] is True and rows[0]["coherent"] is True
    assert rows[1]["answer_correct"] is False and rows[1]["coherent"] is False
    answers = summarize(events, {})["answers"]
    assert answers["correct"] == 0.5 and answers["coherent"] == 0.5 and answers["n"] == 2


def _reply(first_audio_ms: float, gen_id: int | None = 7) -> list[Event]:
    """A diffusion reply whose first snapshots are all masked (empty text): the first visible token is at 1300."""
    g = {} if gen_id is None else {"gen_id": gen_id}
    return [ev(0, 0, K.CALLER_SPEECH_START), ev(0, 1000, K.CALLER_SPEECH_END), ev(0, 1100, K.LLM_REQUEST, **g),
            ev(0, 1150, K.ENGINE_SNAPSHOT, step=0, text="", **g), ev(0, 1200, K.ENGINE_SNAPSHOT, step=1, text="", **g),
            ev(0, 1300, K.ENGINE_SNAPSHOT, step=2, text="we open", **g),
            ev(0, 1700, K.ENGINE_SNAPSHOT, step=3, text="we open at nine on saturday", **g),
            ev(0, 1700, K.ENGINE_DONE, tokens=9, cancelled=False, **g),
            ev(0, first_audio_ms - 60, K.TTS_REQUEST, chunk_id=0, text="we open"),
            ev(0, first_audio_ms, K.TTS_FIRST_AUDIO, chunk_id=0)]


@pytest.mark.parametrize("gen_id", [7, None])
def test_first_token_to_audio_skips_masked_snapshots(gen_id: int | None) -> None:
    pinned, final = turn_table(_reply(1400, gen_id))[0], turn_table(_reply(1800, gen_id))[0]
    assert pinned["first_token_ms"] == 200  # 1100 -> 1300, not the empty snapshot at 1150
    assert (pinned["first_token_to_audio_ms"], final["first_token_to_audio_ms"]) == (100, 500)
    assert pinned["output_tokens_per_s"] == 20.0  # 8 tokens after the first visible text in 0.4 s


def test_first_token_to_audio_none_without_visible_text() -> None:
    events = [e for e in _reply(1400) if not (e.kind == K.ENGINE_SNAPSHOT and e.payload["text"])]
    row = turn_table(events)[0]
    assert (row["first_token_ms"], row["first_token_to_audio_ms"], row["output_tokens_per_s"]) == (None, None, None)


# ---- the steps of a turn row, one at a time ----------------------------------------------------------------

def ns(ms: float) -> int:
    return int(ms * 1_000_000)


def test_reply_attribution_takes_the_turns_reply_rows_only() -> None:
    events = call_log()
    reply = _attributed_reply(events, 1)
    assert all(e.turn == 1 for e in reply)
    assert K.CALLER_SPEECH_START not in {e.kind for e in reply}  # the caller's own rows are not the reply
    assert [e.kind for e in reply][:3] == [K.INTERRUPTION, K.TURN_END, K.LLM_REQUEST]
    assert len(reply) == sum(1 for e in events if e.turn == 1) - 2
    assert _attributed_reply(events, 5) == []


def test_reply_attribution_drops_a_withdrawn_preemptive_reply() -> None:
    events = [
        ev(0, 0, K.CALLER_SPEECH_START), ev(0, 1000, K.CALLER_SPEECH_END),
        ev(0, 800, K.LLM_REQUEST),  # started before the turn end ...
        ev(0, 900, K.GATE_COMMIT, chunk_id=0, text="we", start_char=0, end_char=2),
        ev(0, 1100, K.TURN_END),
        ev(0, 1150, K.PREEMPT_RESULT, outcome="miss", wasted_engine_ms=300.0),  # ... and withdrawn
        ev(0, 1200, K.LLM_REQUEST),
        ev(0, 1400, K.GATE_COMMIT, chunk_id=0, text="we open", start_char=0, end_char=7),
    ]
    reply = _attributed_reply(events, 0)
    assert [(e.kind, e.t_ns) for e in reply] == [
        (K.TURN_END, ns(1100)), (K.PREEMPT_RESULT, ns(1150)), (K.LLM_REQUEST, ns(1200)), (K.GATE_COMMIT, ns(1400))]
    row = turn_table(events)[0]
    assert (row["preemptive"], row["preempt_wasted_ms"], row["first_commit_ms"]) == ("miss", 300, 200)


def test_onset_is_the_replys_first_audible_sample() -> None:
    reply = _attributed_reply(call_log(), 0)
    onset = _onset(reply, call_log())
    assert onset is not None and (onset.kind, onset.t_ns) == (K.BOT_AUDIBLE_ONSET, ns(2800))


def test_onset_without_attribution_is_matched_from_when_the_reply_plays() -> None:
    events = [
        ev(0, 0, K.CALLER_SPEECH_START), ev(0, 1000, K.CALLER_SPEECH_END),
        ev(-1, 1200, K.BOT_AUDIBLE_ONSET),  # before the reply could be heard: someone else's
        ev(0, 1250, K.TTS_FIRST_AUDIO, chunk_id=0),
        ev(-1, 1300, K.BOT_AUDIBLE_ONSET),  # at or after the reply's first TTS audio: its onset
        ev(-1, 1400, K.BOT_AUDIBLE_ONSET),
    ]
    onset = _onset(_attributed_reply(events, 0), events)
    assert onset is not None and onset.t_ns == ns(1300)
    playout = [*events, ev(0, 1350, K.PLAYOUT_START, chunk_id=0)]  # playout_start, when logged, comes first
    onset = _onset(_attributed_reply(playout, 0), playout)
    assert onset is not None and onset.t_ns == ns(1400)
    silent = [e for e in events if e.kind != K.TTS_FIRST_AUDIO]  # nothing says the reply ever played
    assert _onset(_attributed_reply(silent, 0), silent) is None


def test_anchors_pair_the_first_tts_request_with_its_own_chunks_audio() -> None:
    reply = [
        ev(0, 1100, K.TURN_END), ev(0, 1150, K.STT_FINAL, text="hi"),
        ev(0, 1200, K.LLM_REQUEST), ev(0, 1250, K.LLM_REQUEST),  # the last request before the commit counts
        ev(0, 1400, K.GATE_COMMIT, chunk_id=3, text="we", start_char=0, end_char=2),
        ev(0, 1450, K.LLM_REQUEST),  # after the first commit: not this reply's request
        ev(0, 1500, K.TTS_FIRST_AUDIO, chunk_id=2),  # another chunk's audio
        ev(0, 1410, K.TTS_REQUEST, chunk_id=3, text="we"),
        ev(0, 1600, K.TTS_FIRST_AUDIO, chunk_id=3),
    ]
    assert _anchors(reply) == _Anchors(turn_end=ns(1100), llm_request=ns(1250), stt_end=ns(1250),
                                       commit=ns(1400), tts_request=ns(1410), tts_first_audio=ns(1600))
    no_llm = [e for e in reply if e.kind != K.LLM_REQUEST]  # the stt_final ends the stt part instead
    assert _anchors(no_llm).stt_end == ns(1150) and _anchors(no_llm).llm_request is None


def test_critical_path_parts_add_up_to_far() -> None:
    at = _Anchors(turn_end=ns(1300), llm_request=ns(1400), stt_end=ns(1400), commit=ns(1600),
                  tts_request=ns(1610), tts_first_audio=ns(1700))
    parts = _critical_path(ns(1000), at, ns(1800))
    assert parts == {"endpointing_ms": 300, "stt_ms": 100, "engine_first_commit_ms": 200, "gate_to_tts_ms": 10,
                     "tts_first_audio_ms": 90, "playout_ms": 100,
                     "vad_stop_ms": None, "stt_final_wait_ms": None, "rule_wait_ms": None}  # no VAD stop logged
    assert sum(v for k, v in parts.items() if k in FAR_PARTS) == 800  # FAR: 1000 -> 1800


def test_critical_path_charges_nothing_for_a_step_that_ran_ahead() -> None:
    # a preemptive reply: requested and committed before the turn end, so only waiting on the turn end counts
    at = _Anchors(turn_end=ns(1500), llm_request=ns(900), stt_end=ns(900), commit=ns(1200),
                  tts_request=ns(1550), tts_first_audio=ns(1650))
    parts = _critical_path(ns(1000), at, ns(1700))
    assert {k: parts[k] for k in FAR_PARTS} == {"endpointing_ms": 500, "stt_ms": 0, "engine_first_commit_ms": 0,
                                                "gate_to_tts_ms": 50, "tts_first_audio_ms": 100, "playout_ms": 50}
    assert sum(parts[k] for k in FAR_PARTS) == 700
    # no step is later than the onset; a missing anchor gives a missing part, the chain goes on past it
    late = _Anchors(turn_end=ns(1100), llm_request=None, stt_end=None, commit=ns(1300), tts_request=ns(1400),
                    tts_first_audio=ns(1900))
    parts = _critical_path(ns(1000), late, ns(1600))
    assert (parts["stt_ms"], parts["engine_first_commit_ms"]) == (None, None)
    assert (parts["gate_to_tts_ms"], parts["tts_first_audio_ms"], parts["playout_ms"]) == (100, 200, 0)
    assert _critical_path(ns(1000), at, None)["playout_ms"] is None  # never heard: no playout part


def test_stop_latency_step() -> None:
    events = call_log()
    said = _utterance(events, 1)
    assert (said.start, said.end, said.expect) == (ns(3800), ns(5000), "interrupt")
    assert _stop_latency(events, 1, said, ns(5600)) == 200  # heard until 4000, barge-in at 3800
    assert _stop_latency(events, 1, said, ns(3900)) is None  # the old reply's end is after this onset
    assert _stop_latency(events, 0, _utterance(events, 0), ns(2800)) is None  # not expected to interrupt


def test_endpointing_splits_into_vad_stop_final_reading_and_rule_wait() -> None:
    """speech end 1000 -> VAD stop 1250 -> final reading 1400 -> turn end 1650: 250 + 150 + 250 = 650."""
    at = _Anchors(turn_end=ns(1650), llm_request=ns(1650), stt_end=ns(1650), commit=ns(1700),
                  tts_request=ns(1710), tts_first_audio=ns(1760), vad_stop=ns(1250), stt_final=ns(1400))
    parts = _critical_path(ns(1000), at, ns(1800))
    assert (parts["vad_stop_ms"], parts["stt_final_wait_ms"], parts["rule_wait_ms"]) == (250, 150, 250)
    assert parts["vad_stop_ms"] + parts["stt_final_wait_ms"] + parts["rule_wait_ms"] == parts["endpointing_ms"]
    early = _critical_path(ns(1000), replace(at, stt_final=ns(1200)), ns(1800))  # the final before the stop
    assert (early["vad_stop_ms"], early["stt_final_wait_ms"], early["rule_wait_ms"]) == (250, 0, 400)
    none = _critical_path(ns(1000), replace(at, vad_stop=None), ns(1800))
    assert none["vad_stop_ms"] is None and none["endpointing_ms"] == 650


def _request_paused_mid_way(first_answer: list[Event]) -> list[Event]:
    """The caller pauses 1 s mid-request (500-3000); the pause is taken for the end, the bot starts "hello,"
    (`first_answer`: what it played of it), the caller's words stop it, and the real reply follows the true end
    of the turn (onset 3600)."""
    return [
        ev(-1, 0, K.CALL_START),
        ev(0, 500, K.CALLER_SPEECH_START, expect=None),
        ev(0, 1500, K.VAD_STOP),  # the 1 s pause inside the request
        ev(0, 1700, K.TURN_END),  # ... taken for the end of the turn
        ev(0, 1710, K.LLM_REQUEST),
        snap(0, 1720, "hello,"),
        ev(0, 1730, K.GATE_COMMIT, chunk_id=0, text="hello,", start_char=0, end_char=6),
        ev(0, 1740, K.TTS_REQUEST, chunk_id=0, text="hello,"),
        ev(0, 1790, K.TTS_FIRST_AUDIO, chunk_id=0),
        ev(0, 1800, K.PLAYOUT_START, chunk_id=0, text="hello,"),
        *first_answer,
        ev(0, 3000, K.CALLER_SPEECH_END),  # the caller went on and finished at 3000
        ev(0, 3250, K.VAD_STOP),
        ev(0, 3300, K.STT_FINAL, text="can you check my order 5 1 2 0 8"),
        ev(0, 3450, K.TURN_END),
        ev(0, 3450, K.LLM_REQUEST),
        snap(0, 3480, "your order"),
        ev(0, 3500, K.GATE_COMMIT, chunk_id=1, text="your order", start_char=0, end_char=10),
        ev(0, 3510, K.TTS_REQUEST, chunk_id=1, text="your order"),
        ev(0, 3560, K.TTS_FIRST_AUDIO, chunk_id=1),
        ev(0, 3570, K.PLAYOUT_START, chunk_id=1, text="your order"),
        ev(0, 3600, K.BOT_AUDIBLE_ONSET),
        ev(0, 4000, K.PLAYOUT_STOP, chunk_id=1, text="your order"),
        ev(-1, 5000, K.CALL_END),
    ]


def test_an_unheard_abandoned_reply_is_not_the_turns_reply() -> None:
    """The caller pauses 1 s mid-request; the bot starts "hello," (paused after 30 ms: nothing audible), the
    caller's words stop it, and the real reply follows the true end of the turn. The breakdown follows the
    reply that was heard, the heard text is nothing cut, and the unheard reply is no audible revision."""
    evs = _request_paused_mid_way([
        ev(0, 1830, K.PLAYOUT_STOP, chunk_id=0, text="hello,", played="", interrupted=True),
        ev(0, 1835, K.CONTEXT_UPDATE, content="hello,", interrupted=True),
    ])
    row = turn_table(evs)[0]
    assert row["far_ms"] == 600  # 3000 -> 3600
    assert (row["endpointing_ms"], row["vad_stop_ms"], row["stt_final_wait_ms"], row["rule_wait_ms"]) == (
        450, 250, 50, 150)
    assert row["playout_ms"] == 40  # 3560 -> 3600, not the whole FAR
    assert not row["false_cut_in"]
    assert row["heard_word_errors"] is None and not row["interrupted"]  # nothing of "hello," was heard
    assert not row["audible"]


def test_an_audible_cut_in_is_flagged_and_far_follows_the_answer_heard_after_the_turn() -> None:
    """As above, but "hello," was heard for 40 ms inside the caller's pause: a false cut-in. FAR, its breakdown
    and the answer follow the reply heard after the caller finished, as the recording shows it (the WAV
    analyzer takes the first sound that starts after the speech end)."""
    evs = _request_paused_mid_way([
        ev(0, 1820, K.BOT_AUDIBLE_ONSET),
        ev(0, 1860, K.BOT_AUDIBLE_END),
        ev(0, 1870, K.PLAYOUT_STOP, chunk_id=0, text="hello,", played="hello", interrupted=True),
    ])
    row = turn_table(evs)[0]
    assert row["false_cut_in"] is True
    assert row["far_ms"] == 600  # 3000 -> 3600, not 1820 - 3000
    assert (row["endpointing_ms"], row["rule_wait_ms"], row["playout_ms"]) == (450, 150, 40)
    assert sum(row[k] for k in FAR_PARTS) == 600


def test_slots_read_tells_a_misheard_request_from_one_heard_right() -> None:
    from voicelab.measure.metrics import slots_read

    order = {"intent": "order_status", "slots": {"number": "51208"}}
    assert slots_read("Can you check my order 51208?", order) is True
    assert slots_read("can you check my order five one two oh eight", order) is True
    assert slots_read("can you check my order 5128", order) is False
    move = {"intent": "reschedule", "slots": {"name": "tom", "day": "thursday", "time": "1 30 pm"}}
    assert slots_read("This is Tom, move it to Thursday at 1:30 PM.", move) is True
    assert slots_read("this is tom move it to thursday at 1 pm", move) is False
    assert slots_read("hello there", "fallback") is None  # no slot word to read
    assert slots_read(None, order) is None and slots_read("order 51208", None) is None
