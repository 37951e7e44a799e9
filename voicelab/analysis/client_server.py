"""Client − server FAR of a live session, part by part (plain Python: no pipecat).

The page measures its own FAR (`client_far` rows: far_ms, and the mic's speech end and the bot's onset it
took it from, in the page's performance.now() milliseconds). The server FAR the page shows beside it is the
VAD's estimate (`voicelab.web.live.live_latency`): the bot's acoustic onset on the audio the server sent
minus (vad_stop - stop_secs). Per turn, their difference splits into parts from separate measurements:

    client_far - server_far_vad = vad_lag + uplink + downlink
    vad_lag   = (vad_stop - stop_secs) - the acoustic speech end in the server recording   (server only)
    uplink    = acoustic end in the server recording - the page's mic speech end         (page → server)
    downlink  = the page's bot onset - the server's bot onset on the sent track          (server → page)
              = jitter_buffer (the page's getStats: jitterBufferDelay / jitterBufferEmittedCount over the
                reply's first 300 ms of audio, counter differences) + downlink_other (packetization,
                network, decoding, the page's 10 ms polling of its analyser)

Page times go onto the call clock with an offset estimated from data-channel ping/pong round trips
(`clock_sync` rows: page send, page receive, server time at the ping), NTP's way: of all samples the one
with the least round trip, offset = server - (send + receive) / 2. Its error is at most half that round
trip; it moves uplink and downlink by equal and opposite amounts, so their sum never depends on it.
`residual` is what the parts leave of the difference (the page's far_ms against its own timestamps, and
the server anchors against the figure recomputed here): it should be 0 up to rounding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from voicelab.measure.events import Event, EventKind
from voicelab.measure.metrics import latency_stats, percentile

K = EventKind
PARTS = ("vad_lag", "uplink", "jitter_buffer", "downlink_other")
PART_LABELS = {
    "vad_lag": "VAD lag behind the acoustic end of speech",
    "uplink": "uplink: page mic → server (capture, encode, network, server jitter buffer)",
    "jitter_buffer": "page jitter buffer (getStats)",
    "downlink_other": "downlink rest: packetization, network, decoding, page detection",
}
RESIDUAL_TOLERANCE_MS = 1.0  # rounding of the logged figures; more means an anchor disagrees


@dataclass(frozen=True)
class ClockSample:
    """One ping/pong: the page's send and receive times and the server's time at the ping (all ms)."""

    page_send_ms: float
    page_recv_ms: float
    server_ms: float

    @property
    def rtt_ms(self) -> float:
        return self.page_recv_ms - self.page_send_ms


@dataclass(frozen=True)
class ClockOffset:
    """call clock (ms) = page clock (ms) + offset_ms, within ± rtt_ms / 2."""

    offset_ms: float
    rtt_ms: float
    samples: int


def estimate_offset(samples: Iterable[ClockSample]) -> ClockOffset | None:
    """The offset from the sample with the least round trip (None without a usable sample)."""
    ok = [s for s in samples if s.rtt_ms >= 0]
    if not ok:
        return None
    best = min(ok, key=lambda s: s.rtt_ms)
    return ClockOffset(best.server_ms - (best.page_send_ms + best.page_recv_ms) / 2, best.rtt_ms, len(ok))


def clock_samples(events: Iterable[Event]) -> list[ClockSample]:
    return [ClockSample(float(e.payload["page_send_ms"]), float(e.payload["page_recv_ms"]),
                        float(e.payload["server_ms"])) for e in events if e.kind == K.CLOCK_SYNC]


@dataclass(frozen=True)
class TurnBreakdown:
    """The client − server difference of one turn and its parts (ms; None where an anchor is missing)."""

    call_id: str
    turn: int
    client_far_ms: float
    server_far_vad_ms: float | None  # what the page shows: onset - (vad_stop - stop_secs)
    server_far_ms: float | None  # the run's FAR: onset - acoustic end in the server recording
    difference_ms: float | None  # client_far - server_far_vad
    vad_lag_ms: float | None
    uplink_ms: float | None
    downlink_ms: float | None
    jitter_buffer_ms: float | None
    jitter_target_ms: float | None  # the buffer's own target (not a part: it says why the buffer is that deep)
    downlink_other_ms: float | None
    residual_ms: float | None  # difference - (vad_lag + uplink + downlink)
    offset_error_ms: float | None  # ± bound on uplink and on downlink (half the best round trip)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 1) + 0.0  # + 0.0: no "-0.0" in the tables


def _first(evs: Sequence[Event], kind: str) -> Event | None:
    return next((e for e in evs if e.kind == kind), None)


def _vad_speech_end_ns(evs: Sequence[Event]) -> int | None:
    """The VAD's estimate of the turn's speech end: the last vad_stop up to the turn end, minus stop_secs."""
    turn_end = _first(evs, K.TURN_END)
    stops = [e for e in evs if e.kind == K.VAD_STOP and (turn_end is None or e.t_ns <= turn_end.t_ns)]
    if not stops:
        return None
    return stops[-1].t_ns - int(float(stops[-1].payload.get("stop_secs") or 0.0) * 1e9)


def jitter_buffer_ms(payload: Mapping[str, Any], key: str = "jb_delay_s") -> float | None:
    """Mean jitter buffer delay (ms) from the page's inbound-rtp counters (differences over a window), None if
    absent; with key "jb_target_s", the delay the buffer aimed for (set from the arrival jitter it saw)."""
    delay, emitted = payload.get(key), payload.get("jb_emitted")
    if not isinstance(delay, int | float) or not isinstance(emitted, int | float) or emitted <= 0:
        return None
    return 1000.0 * float(delay) / float(emitted)


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def breakdown(events: Iterable[Event]) -> list[TurnBreakdown]:
    """One row per client_far row of the run's events (turn order; the first figure of a turn counts)."""
    evs = sorted(events, key=lambda e: e.t_ns)
    out: list[TurnBreakdown] = []
    for call_id in sorted({e.call_id for e in evs}):
        call = [e for e in evs if e.call_id == call_id]
        off = estimate_offset(clock_samples(call))
        seen: set[int] = set()
        for c in (e for e in call if e.kind == K.CLIENT_FAR):
            if c.turn in seen:
                continue
            seen.add(c.turn)
            out.append(_turn(call_id, c, [e for e in call if e.turn == c.turn], off))
    return out


def _turn(call_id: str, c: Event, evs: Sequence[Event], off: ClockOffset | None) -> TurnBreakdown:
    p = c.payload
    onset_e = _first(evs, K.BOT_AUDIBLE_ONSET)
    end_e = _first(evs, K.CALLER_SPEECH_END)
    s_on = None if onset_e is None else onset_e.t_ns / 1e6
    a_end = None if end_e is None else end_e.t_ns / 1e6
    v_ns = _vad_speech_end_ns(evs)
    v_end = None if v_ns is None else v_ns / 1e6
    c_end = c_on = None
    if off is not None:
        c_end = float(p["mic_end_ms"]) + off.offset_ms
        c_on = float(p["bot_onset_ms"]) + off.offset_ms
    client = float(p["far_ms"])
    server_vad = _sub(s_on, v_end)
    vad_lag, uplink, downlink = _sub(v_end, a_end), _sub(a_end, c_end), _sub(c_on, s_on)
    jb = jitter_buffer_ms(p)
    diff = _sub(client, server_vad)
    parts = (vad_lag, uplink, downlink)
    residual = None if diff is None or None in parts else diff - sum(x for x in parts if x is not None)
    return TurnBreakdown(
        call_id=call_id, turn=c.turn, client_far_ms=round(client, 1), server_far_vad_ms=_r(server_vad),
        server_far_ms=_r(_sub(s_on, a_end)), difference_ms=_r(diff), vad_lag_ms=_r(vad_lag),
        uplink_ms=_r(uplink), downlink_ms=_r(downlink), jitter_buffer_ms=_r(jb),
        jitter_target_ms=_r(jitter_buffer_ms(p, "jb_target_s")),
        downlink_other_ms=_r(_sub(downlink, jb)), residual_ms=_r(residual),
        offset_error_ms=None if off is None else round(off.rtt_ms / 2, 1))


def client_summary(events: Iterable[Event]) -> dict[str, Any]:
    """summary.json's live figures: client_far_ms (every client figure) and client_server_ms (medians of
    the difference and its parts over turns, the largest residual, the clock offset's round trip)."""
    evs = list(events)
    client = [float(e.payload["far_ms"]) for e in evs if e.kind == K.CLIENT_FAR]
    rows = breakdown(evs)
    off = estimate_offset(clock_samples(evs))

    def med(key: str) -> float | None:
        return _r(percentile([v for r in rows if (v := getattr(r, key)) is not None], 50))

    residuals = [abs(r.residual_ms) for r in rows if r.residual_ms is not None]
    return {
        "client_far_ms": latency_stats(client),
        "client_server_ms": {
            "turns": len(rows), "difference_p50": med("difference_ms"),
            **{f"{part}_p50": med(f"{part}_ms") for part in (*PARTS, "downlink", "jitter_target")},
            "residual_abs_max": _r(max(residuals)) if residuals else None,
            "clock_rtt_ms": None if off is None else round(off.rtt_ms, 1),
            "clock_samples": 0 if off is None else off.samples,
        },
    }
