"""The phone agent's send pacing: real time plus a lead, and what a pause's clear keeps for the resume."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicelab.rules.send_pacing import LEAD_MS, NS_PER_MS, SendPacer

MS = NS_PER_MS
FRAME_MS = 20
FRAME_BYTES = 320  # 20 ms of 8 kHz int16


def frame(i: int) -> bytes:
    """20 ms of audio whose samples all say which frame they are (so kept audio can be read back)."""
    return i.to_bytes(2, "little", signed=False) * (FRAME_BYTES // 2)


def send_paced(p: SendPacer, frames: int, start_ns: int = 0, slip_ns: int = 0) -> int:
    """Send `frames` 20 ms frames as fast as the pacer allows (each send `slip_ns` late); the clock after."""
    now = start_ns
    for i in range(frames):
        assert not p.sent(now, frame(i), FRAME_MS * MS)
        now += p.wait_ns(now) + slip_ns
    return now


def test_a_burst_waits_until_the_carrier_holds_only_the_lead() -> None:
    p = SendPacer(lead_ns=40 * MS)
    assert p.wait_ns(0) == 0 and p.held_ns(0) == 0
    for i in range(3):  # three frames at once: 60 ms held, 20 ms over the lead
        p.sent(0, frame(i), FRAME_MS * MS)
    assert p.held_ns(0) == 60 * MS
    assert p.wait_ns(0) == 20 * MS
    assert p.wait_ns(20 * MS) == 0  # one frame played


def test_paced_sending_runs_at_real_time_after_the_lead() -> None:
    p = SendPacer(lead_ns=LEAD_MS * MS)
    end = send_paced(p, 100)  # 2 s of audio
    # the first frames go at once (the lead), then one frame every 20 ms: 2 s less the lead, not 1 s
    assert end == (100 * FRAME_MS - LEAD_MS) * MS
    assert p.held_ns(end) == LEAD_MS * MS


def test_a_queue_that_ran_dry_starts_again_from_now() -> None:
    p = SendPacer()
    p.sent(0, frame(0), FRAME_MS * MS)
    p.sent(500 * MS, frame(1), FRAME_MS * MS)  # long after the first played out: no debt carried over
    assert p.end_ns == 520 * MS


def test_a_pause_keeps_what_the_carrier_had_not_played_and_the_resume_sends_it_first() -> None:
    p = SendPacer(lead_ns=40 * MS)
    for i in range(3):
        p.sent(0, frame(i), FRAME_MS * MS)  # plays 0-20, 20-40, 40-60 ms
    assert p.pause(30 * MS)  # half of frame 1 played: its second half and frame 2 are still queued
    kept = p.resume()
    assert kept == frame(1)[FRAME_BYTES // 2:] + frame(2)
    assert p.resume() == b""  # given once


def test_a_pause_with_nothing_queued_needs_no_clear() -> None:
    p = SendPacer()
    p.sent(0, frame(0), FRAME_MS * MS)
    assert not p.pause(100 * MS)
    assert p.resume() == b""


def test_audio_sent_after_the_clear_asks_for_another_and_is_kept_in_order() -> None:
    p = SendPacer()
    p.sent(0, frame(0), FRAME_MS * MS)
    assert p.pause(10 * MS)
    assert p.sent(11 * MS, frame(1), FRAME_MS * MS)  # a send under way when the pause came
    assert p.resume() == frame(0)[FRAME_BYTES // 2:] + frame(1)
    assert not p.paused and p.end_ns is None  # the carrier's queue was empty after the clears


def test_an_interruption_drops_what_was_kept() -> None:
    p = SendPacer()
    p.sent(0, frame(0), FRAME_MS * MS)
    p.pause(5 * MS)
    p.cut()
    assert p.resume() == b"" and p.held_ns(0) == 0


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="lead"):
        SendPacer(lead_ns=-1)
    with pytest.raises(ValueError, match="sample_bytes"):
        SendPacer(sample_bytes=0)


@settings(max_examples=200, deadline=None)
@given(lead_ms=st.integers(0, 200), frames=st.integers(1, 80), slip_ms=st.integers(0, 30),
       pause_after_ms=st.integers(0, 300))
def test_nothing_is_lost_or_doubled_by_a_pause(lead_ms: int, frames: int, slip_ms: int, pause_after_ms: int) -> None:
    """Played before the pause + kept for the resume = everything sent, sample for sample, whatever the pacing."""
    p = SendPacer(lead_ns=lead_ms * MS)
    now, schedule, last = 0, [], 0
    for i in range(frames):
        start, last = max(p.end_ns or now, now), now
        p.sent(now, frame(i), FRAME_MS * MS)
        schedule.append(start)
        assert p.held_ns(now) <= lead_ms * MS + FRAME_MS * MS  # never more than the lead and the frame just sent
        now += p.wait_ns(now) + slip_ms * MS
    pause_ns = last + pause_after_ms * MS  # some time after the last send
    p.pause(pause_ns)
    kept = p.resume()
    # the projection's own account of what had played by the pause
    played = b"".join(frame(i)[:FRAME_BYTES - _unplayed_bytes(s, pause_ns)] for i, s in enumerate(schedule))
    everything = b"".join(frame(i) for i in range(frames))
    assert len(played) + len(kept) == len(everything)
    assert everything.endswith(kept)
    assert len(kept) % 2 == 0


def _unplayed_bytes(start_ns: int, at_ns: int) -> int:
    left = min(FRAME_MS * MS, max(0, start_ns + FRAME_MS * MS - at_ns))
    return round((FRAME_BYTES // 2) * left / (FRAME_MS * MS)) * 2
