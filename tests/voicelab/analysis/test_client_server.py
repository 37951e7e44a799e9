"""Client − server FAR, part by part (voicelab.analysis.client_server): offset estimate and breakdown."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from voicelab.analysis.client_server import (
    ClockSample,
    breakdown,
    client_summary,
    estimate_offset,
    jitter_buffer_ms,
)
from voicelab.measure.events import Event, EventKind

K = EventKind
MS = 1_000_000

delays = st.floats(min_value=0.0, max_value=500.0, allow_nan=False)
rounds = st.lists(st.tuples(st.floats(min_value=0, max_value=1e6, allow_nan=False), delays, delays),
                  min_size=1, max_size=20)


@given(offset=st.floats(min_value=-1e7, max_value=1e7, allow_nan=False), pings=rounds)
def test_offset_is_within_half_the_least_round_trip(offset: float, pings: list[tuple[float, float, float]]) -> None:
    # page sends at t, the ping takes `up` to reach the server (whose clock reads page + offset), `down` back
    samples = [ClockSample(t, t + up + down, t + up + offset) for t, up, down in pings]
    est = estimate_offset(samples)
    assert est is not None and est.samples == len(samples)
    assert est.rtt_ms == min(s.rtt_ms for s in samples)
    assert abs(est.offset_ms - offset) <= est.rtt_ms / 2 + 1e-6 * max(1.0, abs(offset))


@given(offset=st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), d=delays, slow=delays)
def test_a_symmetric_round_trip_gives_the_offset_exactly(offset: float, d: float, slow: float) -> None:
    samples = [ClockSample(100.0, 100.0 + 2 * d, 100.0 + d + offset),
               ClockSample(200.0, 200.0 + 2 * d + slow + 1.0, 200.0 + d + slow + 1.0 + offset)]
    est = estimate_offset(samples)
    assert est is not None and abs(est.offset_ms - offset) < 1e-6 * max(1.0, abs(offset))


def test_no_usable_sample_gives_no_offset() -> None:
    assert estimate_offset([]) is None
    assert estimate_offset([ClockSample(10.0, 5.0, 0.0)]) is None  # received before it was sent


def live_turn(offset_ms: float, *, a_end: float, v_end: float, s_on: float, uplink: float, downlink: float,
              jb: tuple[float, float] | None, rtt: float = 4.0) -> list[Event]:
    """One live turn's rows (call clock ms): acoustic end a_end, VAD estimate v_end, server onset s_on; the
    page's clock is the call clock minus offset_ms, its mic end `uplink` before a_end, its onset `downlink`
    after s_on; one symmetric ping of round trip `rtt`."""
    stop_secs = 0.2
    page_end, page_on = a_end - uplink - offset_ms, s_on + downlink - offset_ms
    client = {"far_ms": page_on - page_end, "mic_end_ms": page_end, "bot_onset_ms": page_on}
    if jb is not None:
        client.update(jb_delay_s=jb[0], jb_emitted=jb[1])
    ping_at = 50.0
    return [
        Event("c", -1, 60 * MS, K.CLOCK_SYNC, {"page_send_ms": ping_at, "page_recv_ms": ping_at + rtt,
                                                "server_ms": ping_at + rtt / 2 + offset_ms}),
        Event("c", -1, 70 * MS, K.CLOCK_SYNC, {"page_send_ms": 900.0, "page_recv_ms": 900.0 + 3 * rtt,
                                                "server_ms": 900.0 + 2.5 * rtt + offset_ms}),  # slower, lopsided
        Event("c", 0, int((a_end - 300) * MS), K.CALLER_SPEECH_START, {"text": "", "expect": None}),
        Event("c", 0, int(a_end * MS), K.CALLER_SPEECH_END, {"text": "", "expect": None}),
        Event("c", 0, int((v_end + stop_secs * 1000) * MS), K.VAD_STOP, {"stop_secs": stop_secs}),
        Event("c", 0, int((v_end + 400) * MS), K.TURN_END, {}),
        Event("c", 0, int(s_on * MS), K.BOT_AUDIBLE_ONSET, {}),
        Event("c", 0, int((s_on + 300) * MS), K.CLIENT_FAR, client),
    ]


def test_parts_add_up_to_the_difference() -> None:
    evs = live_turn(12_345.0, a_end=2000.0, v_end=2150.0, s_on=2900.0, uplink=35.0, downlink=140.0,
                    jb=(4800.0, 48000.0))
    [b] = breakdown(evs)
    assert b.turn == 0 and b.client_far_ms == 2900.0 + 140.0 - (2000.0 - 35.0)
    assert b.server_far_vad_ms == 750.0 and b.server_far_ms == 900.0
    assert b.vad_lag_ms == 150.0 and b.uplink_ms == 35.0 and b.downlink_ms == 140.0
    assert b.jitter_buffer_ms == 100.0 and b.downlink_other_ms == 40.0
    assert b.difference_ms == 150.0 + 35.0 + 140.0 and b.residual_ms == 0.0
    assert b.offset_error_ms == 2.0


def test_a_wrong_anchor_shows_as_residual() -> None:
    evs = live_turn(0.0, a_end=1000.0, v_end=1100.0, s_on=1800.0, uplink=20.0, downlink=100.0, jb=None)
    # the page's far_ms disagrees with its own timestamps by 7 ms
    evs = [Event(e.call_id, e.turn, e.t_ns, e.kind, {**e.payload, "far_ms": e.payload["far_ms"] + 7})
           if e.kind == K.CLIENT_FAR else e for e in evs]
    [b] = breakdown(evs)
    assert b.residual_ms == 7.0 and b.jitter_buffer_ms is None and b.downlink_other_ms is None


def test_without_clock_samples_only_the_server_parts_are_known() -> None:
    evs = [e for e in live_turn(0.0, a_end=1000.0, v_end=1100.0, s_on=1800.0, uplink=20.0, downlink=100.0,
                                jb=None) if e.kind != K.CLOCK_SYNC]
    [b] = breakdown(evs)
    assert b.vad_lag_ms == 100.0 and b.difference_ms == 220.0
    assert b.uplink_ms is None and b.downlink_ms is None and b.residual_ms is None and b.offset_error_ms is None


def test_jitter_buffer_needs_both_counters() -> None:
    assert jitter_buffer_ms({"jb_delay_s": 0.5, "jb_emitted": 9600}) == 1000.0 * 0.5 / 9600
    assert jitter_buffer_ms({"jb_delay_s": 0.5, "jb_emitted": 0}) is None
    assert jitter_buffer_ms({"jb_delay_s": "x", "jb_emitted": 10}) is None
    assert jitter_buffer_ms({"jb_target_s": 0.3, "jb_emitted": 10}, "jb_target_s") == 30.0


def test_summary_figures() -> None:
    evs = live_turn(-500.0, a_end=2000.0, v_end=2100.0, s_on=2800.0, uplink=30.0, downlink=120.0, jb=(1000.0, 20000))
    s = client_summary(evs)
    assert s["client_far_ms"]["n"] == 1 and s["client_far_ms"]["p50"] == 800.0 + 30.0 + 120.0
    cs = s["client_server_ms"]
    assert cs["turns"] == 1 and cs["difference_p50"] == 250.0 and cs["vad_lag_p50"] == 100.0
    assert cs["uplink_p50"] == 30.0 and cs["jitter_buffer_p50"] == 50.0 and cs["downlink_other_p50"] == 70.0
    assert cs["residual_abs_max"] == 0.0 and cs["clock_rtt_ms"] == 4.0 and cs["clock_samples"] == 2
    assert client_summary([])["client_far_ms"]["n"] == 0
