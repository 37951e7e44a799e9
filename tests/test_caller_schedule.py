"""Caller scheduling on hand-made bot event sequences (voicelab/caller_schedule.py)."""

from __future__ import annotations

import pytest

from voicelab.fixtures.schedule import CallerScheduler, ScheduledClip, StartRule, TurnPlan


def plan(after: str, delay: float = 0.0, dur: float = 2.0, on: float = 0.25, off: float = 1.65,
         expect: str | None = None) -> TurnPlan:
    return TurnPlan(start=StartRule(after, delay), duration_s=dur, speech_onset_s=on, speech_offset_s=off,
                    expect=expect)  # type: ignore[arg-type]


def run_until(s: CallerScheduler, t: float, dt: float = 0.01) -> list[ScheduledClip]:
    """Poll due() from 0 to t like a player would."""
    out: list[ScheduledClip] = []
    now = 0.0
    while now <= t + 1e-9:
        out += s.due(now)
        now = round(now + dt, 6)
    return out


def test_call_start_and_prev_turn_end() -> None:
    s = CallerScheduler([plan("call_start", 0.5), plan("prev_turn_end", 0.3), plan("call_start", 6.0)])
    assert s.due(0.4) == []
    first = s.due(0.5)
    assert [(c.turn, c.start_s, c.reason) for c in first] == [(0, 0.5, "rule")]
    assert s.due(0.6) == []  # never twice
    assert s.next_start(1.0) == pytest.approx(2.8)
    assert s.due(2.79) == []
    assert [c.turn for c in s.due(2.8)] == [1]
    # turn 1 ends at 4.8; turn 2 at 6.0 on the call clock
    assert [c.start_s for c in s.due(10.0)] == [6.0]
    assert s.due(20.0) == []


def test_several_due_at_once_come_in_order() -> None:
    s = CallerScheduler([plan("call_start", 0.0, dur=1.0), plan("prev_turn_end", 0.0, dur=1.0),
                         plan("prev_turn_end", 0.0, dur=1.0)])
    assert [(c.turn, c.start_s) for c in s.due(5.0)] == [(0, 0.0), (1, 1.0), (2, 2.0)]


def test_bot_audio_start_is_the_first_start_after_the_previous_clip_began() -> None:
    s = CallerScheduler([plan("call_start", 0.5), plan("bot_audio_start", 1.2, expect="interrupt")])
    s.bot_audio_started(0.1)  # greeting: before turn 0's clip, not its reply
    s.bot_audio_stopped(0.4)
    assert [c.turn for c in s.due(0.5)] == [0]
    assert s.due(3.0) == []
    s.bot_audio_started(3.1)
    assert s.due(4.29) == []
    clip = s.due(4.3)
    assert [(c.turn, c.start_s, c.reason) for c in clip] == [(1, pytest.approx(4.3), "rule")]
    assert "reply to turn 0" in clip[0].note


def test_bot_audio_end_skips_stops_before_the_reply() -> None:
    """A stop after the clip began but before the reply (greeting cut short) is not the reply's end."""
    s = CallerScheduler([plan("call_start", 0.5), plan("bot_audio_end", 0.6)])
    s.bot_audio_started(0.2)
    s.due(0.5)
    s.bot_audio_stopped(1.0)  # greeting stops when the caller talks over it
    s.bot_audio_started(3.0)  # the reply
    assert s.due(3.5) == []
    s.bot_audio_stopped(5.0)
    assert [(c.turn, c.start_s) for c in s.due(5.6)] == [(1, pytest.approx(5.6))]


def test_after_a_barge_in_bot_audio_end_is_the_recovery_reply() -> None:
    s = CallerScheduler([plan("call_start", 0.5), plan("bot_audio_start", 1.0, expect="interrupt"),
                         plan("bot_audio_end", 0.5)])
    s.due(0.5)
    s.bot_audio_started(3.0)
    assert [c.start_s for c in s.due(4.0)] == [4.0]  # caller cuts in
    s.bot_audio_stopped(4.5)  # the bot stops because of the barge-in: not a reply to turn 1
    assert s.due(6.0) == []
    s.bot_audio_started(6.5)
    s.bot_audio_stopped(9.0)
    assert [c.start_s for c in s.due(9.5)] == [9.5]


def test_bot_never_speaks_falls_back_to_timeout() -> None:
    s = CallerScheduler([plan("call_start", 0.5), plan("bot_audio_start", 1.2, expect="interrupt")],
                        no_reply_timeout_s=6.0)
    clips = run_until(s, 8.0)
    # turn 0's speech ends at 0.5 + 1.65 = 2.15; the reply is missing until 8.15
    assert [c.turn for c in clips] == [0]
    clips = run_until(s, 12.0)
    late = [c for c in clips if c.turn == 1]
    assert len(late) == 1
    assert late[0].reason == "timeout"
    assert late[0].start_s == pytest.approx(2.15 + 6.0 + 1.2)
    assert "no bot audio" in late[0].note
    assert s.truth()[1].reason == "timeout"


def test_timeout_for_the_greeting_and_bot_audio_end() -> None:
    s = CallerScheduler([plan("bot_audio_end", 8.0)], no_reply_timeout_s=6.0)
    assert s.due(13.9) == []
    clip = s.due(14.0)
    assert [(c.reason, c.start_s) for c in clip] == [("timeout", 14.0)]
    assert "greeting" in clip[0].note


def test_with_a_greeting_turn_zero_waits_for_its_end() -> None:
    s = CallerScheduler([plan("bot_audio_end", 8.0)])
    s.bot_audio_started(0.3)
    s.bot_audio_stopped(2.8)
    assert s.due(10.7) == []
    assert [c.start_s for c in s.due(10.8)] == [pytest.approx(10.8)]


def test_without_a_greeting_turn_zero_starts_after_its_delay_not_a_timeout() -> None:
    """--greeting '': a missing greeting counts as ended (and started) at call start, so a caller who waits
    for it answers after delay_s, not after the no-reply timeout; later turns still wait for the replies."""
    for after in ("bot_audio_end", "bot_audio_start"):
        s = CallerScheduler([plan(after, 0.45), plan("bot_audio_end", 0.6)], no_reply_timeout_s=6.0,
                            greeting=False)
        assert s.next_start(0.0) == pytest.approx(0.45)
        assert s.due(0.44) == []
        clip = s.due(0.45)
        assert [(c.turn, c.start_s, c.reason) for c in clip] == [(0, pytest.approx(0.45), "rule")]
        assert "no greeting" in clip[0].note
        assert run_until(s, 8.0) == []  # turn 1 waits for the reply (its timeout: 2.1 + 6 + 0.6 = 8.7)
        s.bot_audio_started(8.05)
        s.bot_audio_stopped(11.0)
        assert [(c.turn, c.start_s, c.reason) for c in s.due(11.6)] == [(1, pytest.approx(11.6), "rule")]
    # with the greeting on, the same plan waits for the greeting (here: its timeout)
    s = CallerScheduler([plan("bot_audio_end", 0.45)], no_reply_timeout_s=6.0)
    assert s.due(6.44) == [] and [c.reason for c in s.due(6.45)] == ["timeout"]


def test_committed_fixture_without_a_greeting_starts_promptly() -> None:
    from voicelab.fixtures.format import load_fixture, select

    fx = load_fixture(select(["single_question"])[0])
    assert fx.turns[0].start.after == "bot_audio_end"
    delay = fx.turns[0].start.delay_s
    clips = run_until(fx.scheduler(greeting=False), 1.0)
    assert [(c.turn, c.start_s, c.reason) for c in clips] == [(0, pytest.approx(delay), "rule")]
    assert run_until(fx.scheduler(), 1.0) == []  # with a greeting it waits for it


def test_timeout_is_frozen_when_the_bot_answers_late() -> None:
    s = CallerScheduler([plan("call_start", 0.0), plan("bot_audio_end", 2.0)], no_reply_timeout_s=3.0)
    s.due(0.0)
    assert s.due(4.65) == []  # speech end 1.65 + 3 = 4.65: anchor known now, clip at 6.65
    s.bot_audio_started(5.0)  # too late: the caller has already decided
    clip = s.due(6.65)
    assert [(c.reason, c.start_s) for c in clip] == [("timeout", pytest.approx(6.65))]


def test_endless_reply_is_capped() -> None:
    s = CallerScheduler([plan("call_start", 0.0), plan("bot_audio_end", 0.5)], max_reply_s=10.0)
    s.due(0.0)
    s.bot_audio_started(2.0)
    assert s.due(11.9) == []
    clip = s.due(12.5)
    assert [(c.reason, c.start_s) for c in clip] == [("timeout", 12.5)]
    assert "still playing" in clip[0].note


def test_after_a_backchannel_bot_audio_end_is_the_overlapped_speech() -> None:
    s = CallerScheduler([plan("call_start", 0.5), plan("bot_audio_start", 1.5, dur=0.8, on=0.25, off=0.5,
                                                       expect="no_interrupt"),
                         plan("bot_audio_end", 0.7)])
    s.due(0.5)
    s.bot_audio_started(3.0)
    assert [c.start_s for c in s.due(4.5)] == [4.5]  # mm-hmm while the bot talks
    assert s.due(6.0) == []
    s.bot_audio_stopped(7.0)  # the bot finished the answer it was giving
    assert [(c.turn, c.start_s) for c in s.due(7.7)] == [(2, pytest.approx(7.7))]


def test_after_a_backchannel_to_a_silent_bot_times_out() -> None:
    s = CallerScheduler([plan("call_start", 0.0, dur=0.8, on=0.25, off=0.5, expect="no_interrupt"),
                         plan("bot_audio_end", 0.7)], no_reply_timeout_s=6.0)
    clips = run_until(s, 8.0)
    assert [(c.turn, c.reason, c.start_s) for c in clips] == [(0, "rule", 0.0),
                                                             (1, "timeout", pytest.approx(7.2))]


def test_clip_never_overlaps_the_previous_one() -> None:
    s = CallerScheduler([plan("call_start", 0.0, dur=3.0), plan("bot_audio_start", 0.0)])
    s.due(0.0)
    s.bot_audio_started(1.0)  # the bot jumps in during the caller's clip
    assert s.due(2.9) == []
    clip = s.due(3.0)
    assert [c.start_s for c in clip] == [3.0]
    assert "held until turn 0" in clip[0].note


def test_truth_on_the_call_clock() -> None:
    s = CallerScheduler([plan("call_start", 0.5, on=0.25, off=1.65), plan("prev_turn_end", 1.0)])
    s.due(10.0)
    truth = s.truth()
    assert [(u.turn, u.clip_start_s, u.speech_start_s, u.speech_end_s, u.clip_end_s) for u in truth] == [
        (0, 0.5, 0.75, pytest.approx(2.15), 2.5), (1, 3.5, 3.75, pytest.approx(5.15), 5.5)]
    # the player's real start times win
    late = s.truth({1: 3.52})
    assert late[1].speech_start_s == pytest.approx(3.77)


def test_clip_started_moves_later_turns() -> None:
    s = CallerScheduler([plan("call_start", 0.5), plan("prev_turn_end", 0.0)])
    assert [c.turn for c in s.due(0.5)] == [0]
    s.clip_started(0, 0.53)
    assert s.due(2.52) == []
    assert [c.start_s for c in s.due(2.53)] == [pytest.approx(2.53)]
    assert s.truth()[0].speech_start_s == pytest.approx(0.78)
    with pytest.raises(ValueError):
        s.clip_started(5, 1.0)


def test_done_waits_for_the_last_reply_and_a_tail() -> None:
    s = CallerScheduler([plan("call_start", 0.5)], tail_s=1.5)
    assert not s.done(0.0)
    s.due(0.5)
    assert not s.done(2.6)
    s.bot_audio_started(3.0)
    assert not s.done(4.0)  # the reply is playing
    s.bot_audio_stopped(6.0)
    assert not s.done(7.4)
    assert s.done(7.5)
    s.bot_audio_started(7.6)  # more bot speech: not done while it plays
    assert not s.done(8.0)
    s.bot_audio_stopped(8.5)
    assert not s.done(9.9)
    assert s.done(10.0)


def test_done_when_the_bot_never_answers_the_last_turn() -> None:
    s = CallerScheduler([plan("call_start", 0.0)], no_reply_timeout_s=6.0)
    s.due(0.0)
    assert not s.done(7.6)
    assert s.done(7.65)


def test_needs_turns_and_a_previous_turn_for_prev_turn_end() -> None:
    with pytest.raises(ValueError):
        CallerScheduler([])
    s = CallerScheduler([plan("prev_turn_end", 0.0)])
    with pytest.raises(ValueError, match="no previous turn"):
        s.due(1.0)


def test_a_stop_the_bot_talks_on_from_within_the_delay_is_a_pause() -> None:
    """Stops heard on a phone line are audio gaps: the bot that starts again before the caller's delay ran out
    had paused (between sentences of the greeting, at a backchannel), and the caller waits for its next stop."""
    s = CallerScheduler([plan("bot_audio_end", 0.35)])
    s.bot_audio_started(0.3)
    s.bot_audio_stopped(1.6)  # "Riverside Bike Works," ...
    assert s.due(1.9) == []
    s.bot_audio_started(1.94)  # ... "how can I help?" 0.34 s later: within the caller's 0.35 s
    assert run_until(s, 2.4) == []
    s.bot_audio_stopped(2.47)
    assert [(c.turn, c.start_s) for c in run_until(s, 3.0)] == [(0, pytest.approx(2.82))]

    s = CallerScheduler([plan("bot_audio_end", 0.35)])  # a stop that lasts longer than the delay is the end
    s.bot_audio_started(0.3)
    s.bot_audio_stopped(1.6)
    assert [c.start_s for c in s.due(1.95)] == [pytest.approx(1.95)]
    s.bot_audio_started(2.1)  # too late: the caller is already talking
    assert s.due(3.0) == []


def test_after_a_backchannel_a_pause_the_bot_talks_through_is_not_the_end() -> None:
    s = CallerScheduler([plan("call_start", 0.5), plan("bot_audio_start", 1.5, dur=0.8, on=0.25, off=0.5,
                                                       expect="no_interrupt"),
                         plan("bot_audio_end", 0.7)])
    s.due(0.5)
    s.bot_audio_started(3.0)
    assert [c.start_s for c in s.due(4.5)] == [4.5]  # mm-hmm
    s.bot_audio_stopped(4.8)  # the bot paused at the mm-hmm ...
    s.bot_audio_started(5.1)  # ... and went on 0.3 s later
    assert run_until(s, 6.9) == []
    s.bot_audio_stopped(7.0)
    assert [(c.turn, c.start_s) for c in run_until(s, 7.8)] == [(2, pytest.approx(7.7))]


def test_a_reply_begun_in_the_callers_pause_and_stopped_by_their_words_is_not_the_answer() -> None:
    # turn 0's speech runs 0.75-4.65 s with a pause in it; the bot takes the pause for the end, starts at 2.5 s,
    # and the caller's resumed words stop it (interrupted) at 5.0 s, after the speech ended
    s = CallerScheduler([plan("call_start", 0.5, dur=4.5, on=0.25, off=4.15), plan("bot_audio_end", 0.05),
                         plan("bot_audio_start", 0.5)], greeting=False)
    run_until(s, 0.5)
    s.bot_audio_started(2.5)
    s.bot_audio_stopped(5.0, interrupted=True)
    assert run_until(s, 6.0) == []  # the caller waits for the answer to what it said
    s.bot_audio_started(6.1)
    s.bot_audio_stopped(8.0)
    clip = run_until(s, 8.1)
    assert [(c.turn, c.start_s) for c in clip] == [(1, pytest.approx(8.05))]


def test_an_interrupted_reply_begun_after_the_speech_end_still_ends_the_reply() -> None:
    # stopped by a noise after the caller had finished: it was the reply, and the caller goes on
    s = CallerScheduler([plan("call_start", 0.5), plan("bot_audio_end", 0.3)], greeting=False)
    run_until(s, 0.5)
    s.bot_audio_started(2.5)
    s.bot_audio_stopped(3.0, interrupted=True)
    assert [(c.turn, c.start_s) for c in run_until(s, 3.3)] == [(1, pytest.approx(3.3))]


def test_without_a_later_answer_the_abandoned_reply_times_out_from_the_speech_end() -> None:
    s = CallerScheduler([plan("call_start", 0.5, dur=4.5, off=4.15), plan("bot_audio_end", 0.0)],
                        no_reply_timeout_s=2.0, greeting=False)
    run_until(s, 0.5)
    s.bot_audio_started(2.5)
    s.bot_audio_stopped(5.0, interrupted=True)
    clip = run_until(s, 7.0)
    assert [(c.turn, c.reason) for c in clip] == [(1, "timeout")] and clip[0].start_s == pytest.approx(6.65)
