"""The carrier's playout queue (clear, mark), the line's figures and the audio-only turn figures: pure logic."""

from __future__ import annotations

import numpy as np
import pytest

from voicelab.call.line import LineStats, line_summary
from voicelab.call.playout_queue import PlayoutQueue
from voicelab.call.readback import match_template, score_words
from voicelab.call.reply_spans import cut_in_turns, reply_spans, reply_turn, silence_stops, talk_over_ms
from voicelab.measure.truth import Utterance
from voicelab.speech.text import recognizer_text


def _audio(n: int, value: int = 1000) -> np.ndarray:
    return np.full(n, value, dtype=np.int16)


def test_queue_plays_a_burst_at_line_rate() -> None:
    q = PlayoutQueue()
    q.push_audio(_audio(400))  # 50 ms arrived at once
    ticks = [q.pull(160) for _ in range(4)]
    assert [t.played for t in ticks] == [160, 160, 80, 0]
    assert ticks[2].samples[:80].tolist() == [1000] * 80 and ticks[2].samples[80:].sum() == 0
    assert q.depth == 0 and q.max_depth == 400


def test_queue_joins_small_chunks_without_gaps() -> None:
    q = PlayoutQueue()
    for v in range(1, 6):
        q.push_audio(_audio(50, v))
    t = q.pull(160)
    assert t.played == 160 and t.samples[:50].tolist() == [1] * 50 and t.samples[150:].tolist() == [4] * 10
    assert q.depth == 90


def test_mark_is_answered_when_the_audio_before_it_has_played() -> None:
    q = PlayoutQueue()
    q.push_audio(_audio(200))
    q.push_mark("end-of-sentence")
    q.push_audio(_audio(100, 2))
    t1 = q.pull(160)
    assert t1.marks == []  # 40 samples still to play before the mark
    t2 = q.pull(160)
    assert t2.marks == [] and t2.played == 140  # passed in this tick: heard by its end
    t3 = q.pull(160)
    assert t3.marks == ["end-of-sentence"] and q.pending_marks == 0


def test_mark_on_an_idle_queue_is_answered_at_the_next_tick() -> None:
    q = PlayoutQueue()
    q.push_mark("m")
    assert q.pull(160).marks == ["m"]


def test_clear_drops_audio_at_once_and_returns_every_waiting_mark() -> None:
    q = PlayoutQueue()
    q.push_audio(_audio(1000))
    q.push_mark("a")
    q.push_audio(_audio(1000))
    q.push_mark("b")
    q.pull(160)
    cleared = q.clear()
    assert cleared.dropped == 1840 and cleared.marks == ["a", "b"] and q.depth == 0
    t = q.pull(160)
    assert t.played == 0 and t.marks == [] and not t.samples.any()
    # a mark passed in the last tick, not yet reported, comes back with the clear too
    q.push_audio(_audio(100))
    q.push_mark("c")
    q.push_audio(_audio(500))
    q.pull(160)
    assert q.clear().marks == ["c"]


def test_line_stats_queue_delay_depth_clears_and_marks() -> None:
    s = LineStats()
    s.media(0.0, 8000, depth_before=0)
    s.media(5.0, 8000, depth_before=8000)  # a second arrives while a second waits: heard 1 s later
    for depth in (8000, 4000, 0):
        s.tick(depth)
    s.clear(dropped=800, marks=2)
    s.marks_received, s.marks_played = 3, 1
    s.other("ping")
    d = line_summary([s])
    assert d["queue_delay_ms"]["max"] == 1000.0 and d["queue_depth_ms"]["n"] == 2
    assert d["clears"] == 1 and d["cleared_audio_ms"] == 100.0
    assert d["marks"] == {"received": 3, "played": 1, "cleared": 2} and d["ignored_events"] == {"ping": 1}
    assert d["agent_audio_s"] == 2.0 and d["agent_jitter_ms"] is not None
    empty = line_summary([LineStats()])
    assert empty["queue_delay_ms"]["p50"] is None and empty["agent_jitter_ms"] is None  # not 0


def _track(sr: int, seconds: float, spans: list[tuple[float, float]]) -> np.ndarray:
    x = np.zeros(int(sr * seconds), dtype=np.int16)
    t = np.arange(x.size) / sr
    for a, b in spans:
        m = (t >= a) & (t < b)
        x[m] = (8000 * np.sin(2 * np.pi * 300 * t[m])).astype(np.int16)
    return x


def test_reply_attribution_follows_the_truth_analyzer() -> None:
    said = [Utterance(0, 1.0, 2.0), Utterance(1, 3.0, 3.4, "no_interrupt"),
            Utterance(2, 5.0, 6.0, "interrupt")]
    assert reply_turn(said, 0.5) == -1 and reply_turn(said, 2.1) == 0
    assert reply_turn(said, 3.5) == 0  # a backchannel gets no reply of its own
    assert reply_turn(said, 6.2) == 2
    bot = _track(8000, 8.0, [(0.1, 0.8), (2.4, 4.5), (6.4, 7.0)])
    spans = reply_spans(bot, 8000, said)
    assert sorted(spans) == [-1, 0, 2]
    assert spans[0][0][0] == pytest.approx(2.4, abs=0.01)


def test_talk_over_counts_bot_audio_inside_caller_speech() -> None:
    said = [Utterance(0, 1.0, 2.0), Utterance(1, 3.0, 4.0, "interrupt")]
    bot = _track(8000, 5.0, [(2.5, 3.25)])  # stopped 250 ms into the barge-in
    over = talk_over_ms(bot, 8000, said)
    assert over[0] == 0.0 and over[1] == pytest.approx(250, abs=10)


def test_a_stretch_begun_inside_an_answered_turn_is_a_cut_in() -> None:
    said = [Utterance(0, 1.0, 4.0), Utterance(1, 6.0, 7.0, "interrupt"), Utterance(2, 8.0, 9.0, "no_interrupt")]
    # a reply begun in the caller's pause (2.5 s), one begun before a barge-in, one under a backchannel
    bot = _track(8000, 10.0, [(2.5, 2.9), (4.5, 6.3), (8.5, 9.5)])
    assert cut_in_turns(bot, 8000, said) == {0}
    # the agent already talking when the caller began is talk-over, not a cut-in
    assert cut_in_turns(_track(8000, 6.0, [(0.5, 1.5)]), 8000, said[:1]) == set()
    assert cut_in_turns(_track(8000, 6.0, [(4.3, 5.0)]), 8000, said[:1]) == set()


def test_silence_after_a_backchannel_is_a_stop_and_a_pause_between_sentences_is_not() -> None:
    said = [Utterance(0, 0.0, 0.5), Utterance(1, 2.0, 2.4, "no_interrupt")]
    stopped = _track(8000, 6.0, [(1.0, 2.6)])  # silent from 2.6 s on
    assert silence_stops(stopped, 8000, said, silence_s=0.8, grace_s=1.2) == {1: pytest.approx(2.6, abs=0.01)}
    kept = _track(8000, 6.0, [(1.0, 2.6), (3.0, 5.0)])  # a 0.4 s pause, then more
    assert silence_stops(kept, 8000, said, silence_s=0.8, grace_s=1.2) == {}
    short = _track(8000, 3.0, [(1.0, 2.6)])  # the recording ends before the silence could be told
    assert silence_stops(short, 8000, said, silence_s=0.8, grace_s=1.2) == {}


def test_heard_words_are_scored_against_the_shop_grammar() -> None:
    heard = recognizer_text("On Saturday, we are open from 10 a.m. to 4 p.m.")
    s = score_words(heard, {"intent": "hours", "slots": {"day": "saturday"}})
    assert s["template"] == "hours_open" and s["correct"] and s["coherent"]
    wrong = score_words(heard, {"intent": "hours", "slots": {"day": "sunday"}})
    assert wrong["coherent"] and not wrong["correct"]
    cancel = match_template(recognizer_text("Okay Anna, your appointment on Monday is cancelled."))
    assert cancel is not None and cancel[1].startswith("[cancel(name=anna, day=monday)]")
    assert score_words("you said hello", "fallback") == {
        "template": None, "canonical": None, "coherent": False, "correct": False, "reason": "fits no reply template"}
