"""Barge-in cases replayed on a virtual clock: the pause-then-decide rule on sounds over the bot. Plain Python.

A case is one sound the caller makes while the bot talks (`voicelab.turnbench.cases.BargeCase`, or a fixture's
`no_interrupt` turn): a backchannel or a noise, which must not stop the bot, or an interruption, which must.
From the cached scores (Silero's windows, the recogniser's final reading, the decision model's P(interruption)
and P(complete) on it) it replays what `voicelab.pipeline.turns.barge_in_strategy.PauseThenDecide` does:

- the pause trigger: the onset VAD (Silero's confidence >= 0.7 on a window louder than -40 dBFS, the
  `LevelGatedVAD` gate; `ONSET_START_SECS` of windows to start) pauses the bot; the turn VAD (0.2 s / 0.2 s) too, if first;
- `PausedBot` (the pure rule's per-pause state, the object `PauseThenDecide` keeps too) hears the turn VAD's
  start and stop, the onset VAD's quiet, and the final reading when it lands
  (the VAD stop plus the pass time, or at the stop with pass times left out), and decides every 20 ms.
- Partial readings are not cached: while the caller speaks, the replay hands the rule a partial every
  `PARTIAL_EVERY_S` (the STT's 0.5 s) made of the final reading's first words, in proportion to the speech so
  far (an approximation: what matters to the rule is that a caller talking on over the bot has been heard
  saying words, rules 2 and 3).

Outcomes: STOP or RESUME, when, and the stop latency of an interruption that stopped the bot: the pause (the
bot is silent from then on) minus the true onset of the caller's speech, the lab's definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from voicelab.rules.barge_in import ONSET_START_SECS, ONSET_STOP_SECS, PauseAction, PausedBot, PauseThresholds
from voicelab.turnbench.replay import DEFAULT_VAD, VadParams, vad_events

ONSET_VAD = VadParams(start_secs=ONSET_START_SECS, stop_secs=ONSET_STOP_SECS, min_volume=0.0)
GATE_DBFS = -40.0
TICK_MS = 20.0
PARTIAL_EVERY_S = 0.5
HORIZON_MS = 4000.0


@dataclass(frozen=True)
class BargeOutcome:
    id: str
    group: str
    kind: str  # backchannel, noise or interruption
    text: str  # what was said
    reading: str  # what the recogniser read
    action: str  # "stop", "resume" or "none" (the bot never paused)
    reason: str
    paused_ms: float | None  # the pause, after the true onset
    decided_ms: float | None  # the verdict, after the true onset

    @property
    def false_barge_in(self) -> bool:
        return self.kind != "interruption" and self.action == "stop"

    @property
    def missed(self) -> bool:
        return self.kind == "interruption" and self.action != "stop"


def replay_barge(doc: dict[str, Any], th: PauseThresholds = PauseThresholds(), passes: bool = False,
                 fragment_words: int | None = None) -> BargeOutcome:
    """The rule's verdict on one cached barge-in case (`doc`: `voicelab.turnbench.scores.score_barge` plus the
    case's id, group and meta)."""
    meta = doc["meta"]
    conf = np.asarray(doc["conf"])
    onset_flags = (conf >= ONSET_VAD.confidence) & (np.asarray(doc["rms_dbfs"]) > GATE_DBFS)
    turn_flags = (conf >= DEFAULT_VAD.confidence) & (np.asarray(doc["vol"]) >= DEFAULT_VAD.min_volume)
    onset_ev = vad_events(onset_flags, ONSET_VAD)
    turn_ev = vad_events(turn_flags, DEFAULT_VAD)
    reading = doc["reading"]
    onset_s = float(meta["onset_s"])
    base = dict(id=doc["id"], group=doc["group"], kind=meta["kind"], text=meta["text"], reading=reading["text"])
    firsts = [e.t_s for e in onset_ev + turn_ev if e.kind == "start"]
    if not firsts:
        return BargeOutcome(**base, action="none", reason="the bot never paused", paused_ms=None, decided_ms=None)
    t_pause = min(firsts)
    events: list[tuple[float, int, str]] = []  # (time s, order, what)
    for e in turn_ev:
        events.append((e.t_s, 0, "turn_" + e.kind))
    for e in onset_ev:
        if e.kind == "stop":
            events.append((e.t_s, 1, "onset_quiet"))
    stops = [e.t_s for e in turn_ev if e.kind == "stop"]
    lag = float(reading.get("ms") or 0.0) / 1000.0 if passes else 0.0
    if stops:
        events.append((stops[-1] + lag, 2, "final"))
    t_starts = [e.t_s for e in turn_ev if e.kind == "start"]
    if t_starts:
        speech_end = stops[-1] if stops else float(doc.get("duration_s", t_starts[0] + 4.0))
        t = t_starts[0] + PARTIAL_EVERY_S
        while t < speech_end:
            events.append((t + lag, 1, f"partial:{(t - t_starts[0]) / max(1e-3, speech_end - t_starts[0])}"))
            t += PARTIAL_EVERY_S
    events.sort()
    bot = PausedBot(paused_at_ms=t_pause * 1000.0)
    p_int, p_comp = doc.get("interruption_p"), doc.get("complete_p")
    limit = th.safety_words - 1 if fragment_words is None else fragment_words
    turn_speaking = False
    now = t_pause * 1000.0
    i = 0
    while now <= t_pause * 1000.0 + HORIZON_MS:
        while i < len(events) and events[i][0] * 1000.0 <= now + 1e-6:
            t, _, what = events[i]
            if what == "turn_start":
                turn_speaking = True
                bot.vad_started(t * 1000.0, DEFAULT_VAD.start_secs)
            elif what == "turn_stop":
                turn_speaking = False
                bot.vad_stopped(t * 1000.0, DEFAULT_VAD.stop_secs)
            elif what == "onset_quiet":
                bot.onset_quiet(turn_speaking)
            elif what.startswith("partial:") and not bot.words_final:
                words = reading["text"].split()
                part = " ".join(words[:int(len(words) * float(what.split(":")[1]))])
                if part:
                    bot.hear(part, lambda w: p_int, final=False, reliable=bool(reading.get("reliable", True)),
                             avg_logprob=reading.get("avg_logprob"))
            elif what == "final":
                bot.hear(reading["text"], lambda w: p_int, final=True, reliable=bool(reading.get("reliable", True)),
                         complete=lambda w: p_comp, fragment_words=limit, avg_logprob=reading.get("avg_logprob"))
            i += 1
        d = bot.decide(now, th)
        if d.action is not PauseAction.WAIT:
            return BargeOutcome(**base, action=d.action.value, reason=d.reason,
                                paused_ms=(t_pause - onset_s) * 1000.0, decided_ms=now - onset_s * 1000.0)
        nxt = events[i][0] * 1000.0 if i < len(events) else np.inf
        now = min(now + TICK_MS, nxt) if nxt > now else now + TICK_MS
    return BargeOutcome(**base, action="wait", reason="no verdict in 4 s", paused_ms=(t_pause - onset_s) * 1000.0,
                        decided_ms=None)


def summarise(outcomes: list[BargeOutcome]) -> dict[str, Any]:
    """False barge-ins, missed interruptions and stop latency (ms, the pause after the true onset)."""
    calm = [o for o in outcomes if o.kind != "interruption"]
    inter = [o for o in outcomes if o.kind == "interruption"]
    lat = [o.paused_ms for o in inter if o.action == "stop" and o.paused_ms is not None]
    return {"backchannels": len(calm), "false_barge_ins": sum(o.false_barge_in for o in calm),
            "paused_on_backchannels": sum(o.action != "none" for o in calm),
            "interruptions": len(inter), "missed_interruptions": sum(o.missed for o in inter),
            "stop_latency_ms": {"p50": None if not lat else round(float(np.percentile(lat, 50))),
                                "p95": None if not lat else round(float(np.percentile(lat, 95))), "n": len(lat)}}
