"""Turn-end strategies replayed on a virtual clock, from model scores computed once per case.

Plain Python and numpy (no pipecat, no torch). Pipecat's strategies run on wall-clock timers: to sweep one over
its threshold, each case would have to be played in real time once per setting. Here everything a strategy
reads is computed once per case (`voicelab.turnbench.scores`): Silero's per-window confidence and loudness, and
at each stop of the VAD (pipecat's defaults: start and stop 0.2 s) smart-turn's P(complete), the recogniser's
reading of the turn so far and the decision model's P(complete) on it. A strategy then turns those into the
times at which it would end the turn, for any setting, in microseconds.

The replays follow the code they stand for, step by step:

- the VAD (`pipecat.audio.vad.vad_analyzer.VADAnalyzer._run_analyzer`): a 512-sample window is speech when
  the confidence is >= 0.7 and the smoothed volume >= 0.6; `round(start_secs / 0.032)` speech windows in a row
  start it, `round(stop_secs / 0.032)` non-speech windows in a row stop it. A window is seen when the 20 ms
  audio frame that completes it arrives (`FRAME_S`).
- `timeout` (`TimeoutReplay`: VAD only, swept over `stop_secs`): the turn ends at the VAD's stop (pipecat's
  `SpeechTimeoutUserTurnStopStrategy` with no extra timeout).
- `smart` (`SmartReplay`: `TurnAnalyzerUserTurnStopStrategy` around `LocalSmartTurnAnalyzerV3`, swept over
  the completion threshold, pipecat's 0.5): at each VAD stop smart-turn scores the audio of the turn so far;
  above the threshold the turn ends, else smart-turn's own silence fallback (`SmartTurnParams.stop_secs`,
  pipecat's 3 s) ends it unless the VAD hears speech first.
- `decide` (`DecideTurnEndReplay`, swept over a scale on every wait of `TurnThresholds`): the pure rule
  `voicelab.rules.turn_end.DecideTurnEnd` itself, the object the pipeline's
  `voicelab.pipeline.turns.turn_end_strategy.DecideTurnEndStopStrategy` runs, fed the trace's VAD starts and
  stops, scores and final readings on the case's clock (a stop whose final adds no words waits the rule's
  `final_wait_s`, 1 s). The two cannot disagree on the rule; only on when the scores arrive.

The kinds the bench replays are those of `voicelab.rules.turn_kinds.TURN_KINDS` (`builtin_strategies`).

A strategy's declarations do not end the simulated turn: each labelled point is judged as if the strategy
had not fired before it (the points are independent, as in LiveKit's eot-bench). "Pass times" are the wall
time of the models' passes measured on this machine (smart-turn, Whisper's final pass, the decision model);
`passes=False` leaves them out (every score ready at the VAD stop: comparable across machines and with
eot-bench, which excludes compute), `passes=True` adds them where the strategy waits for them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from voicelab.pcm import SAMPLE_RATE as SR  # the name the bench's modules import
from voicelab.rules.turn_end import DecideTurnEnd, TurnThresholds, Weighing
from voicelab.rules.turn_fusion import FusedWeighing, load_weighing
from voicelab.rules.turn_kinds import TURN_KINDS

WINDOW = 512  # Silero's window at 16 kHz
WINDOW_S = WINDOW / SR
FRAME = 320  # the pipeline's 20 ms audio frames
FRAME_S = FRAME / SR


def window_seen_s(i: int) -> float:
    """When window i (0-based) is complete: the end of the 20 ms frame that brings its last sample."""
    return math.ceil((i + 1) * WINDOW / FRAME) * FRAME_S


@dataclass(frozen=True)
class VadParams:
    confidence: float = 0.7
    start_secs: float = 0.2
    stop_secs: float = 0.2
    min_volume: float = 0.6

    def frames(self, secs: float) -> int:
        return round(secs / WINDOW_S)  # pipecat's rounding (VADAnalyzer.set_params)


DEFAULT_VAD = VadParams()


@dataclass(frozen=True)
class VadEvent:
    kind: str  # "start" or "stop"
    t_s: float  # when the VAD reports it
    first_silent_s: float | None = None  # stop: when its run of silent windows began (the early final's moment)


def speaking(conf: np.ndarray, vol: np.ndarray, p: VadParams = DEFAULT_VAD) -> np.ndarray:
    """Per window: the VAD counts it as speech."""
    return (np.asarray(conf) >= p.confidence) & (np.asarray(vol) >= p.min_volume)


def vad_events(flags: Sequence[bool] | np.ndarray, p: VadParams = DEFAULT_VAD) -> list[VadEvent]:
    """The VAD's starts and stops over per-window speech flags (pipecat's state machine, one window a frame)."""
    start_n, stop_n = p.frames(p.start_secs), p.frames(p.stop_secs)
    out: list[VadEvent] = []
    state, count, first_silent = "quiet", 0, 0
    for i, sp in enumerate(np.asarray(flags, dtype=bool).tolist()):
        if sp:
            if state == "quiet":
                state, count = "starting", 1
            elif state == "starting":
                count += 1
            elif state == "stopping":
                state, count = "speaking", 0
        elif state == "starting":
            state, count = "quiet", 0
        elif state == "speaking":
            state, count, first_silent = "stopping", 1, i
        elif state == "stopping":
            count += 1
        if state == "starting" and count >= start_n:
            state, count = "speaking", 0
            out.append(VadEvent("start", window_seen_s(i)))
        elif state == "stopping" and count >= stop_n:
            state, count = "quiet", 0
            out.append(VadEvent("stop", window_seen_s(i), first_silent * WINDOW_S))
    return out


def confirmed_s(flags: np.ndarray, after_s: float, p: VadParams = DEFAULT_VAD) -> float | None:
    """When the VAD would confirm speech that begins after `after_s` (start_secs of speech windows in a row,
    counted from the first window that begins at or after it); None if it never does."""
    need = max(1, p.frames(p.start_secs))
    run = 0
    for i in range(max(0, math.floor(after_s / WINDOW_S)), len(flags)):
        run = run + 1 if flags[i] else 0
        if run >= need:
            return window_seen_s(i)
    return None


@dataclass(frozen=True)
class Point:
    """A labelled point: the true end of a stretch of the caller's speech (from the clean audio)."""

    kind: str  # "pause" (the caller goes on) or "end" (the turn is over)
    t_s: float  # true end of speech, on the case's clock
    resume_s: float | None = None  # pause: true onset of the speech that follows


@dataclass(frozen=True)
class StopScores:
    """What the models said at one stop of the default VAD (times in s on the case clock, passes in ms)."""

    t_s: float
    first_silent_s: float
    audio_p: float  # smart-turn's P(complete) on the turn so far
    smart_ms: float
    text: str  # the recogniser's final reading of the turn so far
    text_p: float | None  # the decision model's P(complete) on it (None: no words)
    stt_ms: float
    decision_ms: float
    reliable: bool = True  # Whisper's decode-failure test passed
    early_text: str | None = None  # the reading of the audio up to the first silent window (the early final)
    early_text_p: float | None = None
    early_stt_ms: float | None = None


@dataclass
class Trace:
    """One case (a caller turn) as the strategies see it."""

    id: str
    group: str  # "generated", "bundled", "real", "user"
    duration_s: float
    flags: np.ndarray  # per Silero window: speech by the default VAD's thresholds
    points: list[Point]
    stops: list[StopScores]  # at each stop of the default VAD, in order
    starts: list[float] = field(default_factory=list)  # the default VAD's starts
    meta: dict[str, object] = field(default_factory=dict)
    # per stop: smart-turn at each 100 ms of the silence after it (`--turn listen`; eot_scores.listen_scores)
    listen: list[np.ndarray] | None = None


class Strategy(Protocol):
    """A turn-end strategy for the bench: `declarations` gives the times at which it would end the turn."""

    name: str
    knob: str
    values: Sequence[float]
    default: float  # the setting the lab ships (or the strategy's own default)

    def declarations(self, trace: Trace, value: float, passes: bool) -> list[float]: ...


def _next_start(trace: Trace, t: float) -> float:
    return next((s for s in trace.starts if s > t), math.inf)


def _geom(lo: float, hi: float, n: int) -> list[float]:
    return [round(float(v), 4) for v in np.geomspace(lo, hi, n)]


@dataclass
class TimeoutReplay:
    """Silero VAD alone: the turn ends at the VAD's stop, swept over `stop_secs`."""

    name: str = "timeout"
    knob: str = "stop_secs"
    values: Sequence[float] = tuple(sorted({0.2, *(round(0.032 * k, 3) for k in range(2, 95, 2))}))  # 64 ms .. 3 s
    default: float = 0.2

    def declarations(self, trace: Trace, value: float, passes: bool) -> list[float]:
        stops = [e.t_s for e in vad_events(trace.flags, replace(DEFAULT_VAD, stop_secs=value)) if e.kind == "stop"]
        if not passes:
            return stops
        # pipecat's timeout strategy waits for a transcript: the final pass starts at the stop
        ms = [s.stt_ms for s in trace.stops] or [0.0]
        return [t + float(np.mean(ms)) / 1000.0 for t in stops]


@dataclass
class SmartReplay:
    """smart-turn v3 as pipecat runs it: complete above the threshold at the VAD stop, else its silence
    fallback (`fallback_s`, pipecat's `SmartTurnParams.stop_secs`, 3 s)."""

    name: str = "smart"
    knob: str = "threshold"
    values: Sequence[float] = tuple([round(0.02 * k, 2) for k in range(0, 50)] + [0.99, 0.995, 0.999, 1.0])
    default: float = 0.5
    fallback_s: float = 3.0

    def declarations(self, trace: Trace, value: float, passes: bool) -> list[float]:
        out = []
        for s in trace.stops:
            if s.audio_p > value:
                # pipecat waits for the transcript too (wait_for_transcript=True), which lands with Whisper's pass
                t = s.t_s + (max(s.smart_ms, s.stt_ms) / 1000.0 if passes else 0.0)
            else:
                t = s.t_s + self.fallback_s + (s.smart_ms / 1000.0 if passes else 0.0)
            if t < _next_start(trace, s.t_s):
                out.append(t)
        return out


WAITS = ("floor_ms", "single_sure_ms", "medium_ms", "disputed_ms", "vetoed_ms", "cap_ms")  # the table's waits


def scaled(th: TurnThresholds, scale: float) -> TurnThresholds:
    """Every wait of the rule times `scale` (the probabilities unchanged)."""
    return replace(th, **{w: getattr(th, w) * scale for w in WAITS})


def bounded(th: TurnThresholds, low: float = 0.0, high: float = math.inf) -> TurnThresholds:
    """Every wait of the rule held within [low, high] (the probabilities unchanged): a floor or a cap on them all."""
    return replace(th, **{w: min(high, max(low, getattr(th, w))) for w in WAITS})


@dataclass
class DecideTurnEndReplay:
    """The lab's turn end (`--turn decide`, the rule `DecideTurnEnd`), swept over a scale on its waits; `early`:
    with Whisper's early final (`--stt-early-final`: the reading of the audio up to the VAD's first silent
    window)."""

    name: str = "decide"
    knob: str = "scale"
    # to scale 20: the rule's false cut-offs fall below 1 % only far past its shipped waits (docs/turn-bench.md)
    values: Sequence[float] = tuple(sorted({1.0, *_geom(0.05, 20.0, 60)}))
    default: float = 1.0
    thresholds: TurnThresholds = field(default_factory=TurnThresholds)
    early: bool = False
    vad: VadParams = DEFAULT_VAD
    final_wait_s: float = 1.0  # the rule's wait for a final that brings no words

    def weighing_at(self, value: float) -> Weighing:
        """The rule's weighing at one setting of the knob."""
        return scaled(self.thresholds, value)

    def declarations(self, trace: Trace, value: float, passes: bool) -> list[float]:
        rule = DecideTurnEnd(self.weighing_at(value), self.final_wait_s, start_secs=self.vad.start_secs)
        out: list[float] = []
        prev_text = ""
        for s in trace.stops:
            # the first VAD start after the last stop's estimated speech end: the caller went on after that pause
            went_on = next((t for t in trace.starts if rule.speech_end_s is not None and rule.speech_end_s < t
                            <= s.t_s), None)
            if went_on is not None:
                rule.vad_started(went_on, self.vad.start_secs)
            rule.vad_stopped(s.t_s, self.vad.stop_secs)
            rule.audio_scored(s.audio_p)
            text, text_p, ms = s.text, s.text_p, s.stt_ms
            landed = s.t_s
            if self.early and s.early_text is not None:
                text, text_p, ms = s.early_text, s.early_text_p, s.early_stt_ms or 0.0
                landed = s.first_silent_s
            if text and text != prev_text:  # a final with new words (one without any is no frame at all)
                prev_text = text
                # it counts for this stretch from the VAD stop on (an early final may be in before it)
                rule.final_heard(max(s.t_s, landed + ms / 1000.0) if passes else s.t_s, text)
            rule.text_scored(text_p)
            ready = rule.verdict_from_s()
            if passes:  # the verdict also waits for smart-turn's pass, then the decision model's
                ready = max(s.t_s + s.smart_ms / 1000.0, ready) + s.decision_ms / 1000.0
            t = rule.end_at_s(ready, s.reliable)
            if t is not None and t < _next_start(trace, s.t_s):
                out.append(t)
        return out


def _theta_grid() -> tuple[float, ...]:
    # evenly spaced in logit: fine where P(end) is steep, and both tails reached
    return tuple(round(1.0 / (1.0 + math.exp(-z)), 5) for z in np.linspace(-7.0, 7.0, 71))


@dataclass
class FusedReplay(DecideTurnEndReplay):
    """`--turn fuse`: the same rule with the fitted weighing (`voicelab.rules.turn_fusion`), swept over its
    operating point `theta` (P(end) at which the turn ends)."""

    name: str = "fuse"
    knob: str = "theta"
    values: Sequence[float] = field(default_factory=_theta_grid)
    default: float = 0.5
    weighing: FusedWeighing | None = None  # None: the shipped weights file

    def __post_init__(self) -> None:
        if self.weighing is None:
            self.weighing = load_weighing()
        self.default = self.weighing.theta
        self.values = tuple(sorted({*self.values, self.default}))

    def weighing_at(self, value: float) -> Weighing:
        assert self.weighing is not None
        return self.weighing.at(value)


def decide_replays() -> list[Strategy]:
    """`decide` and its variant on the early final (`decide+early`)."""
    return [DecideTurnEndReplay(), DecideTurnEndReplay(name="decide+early", early=True)]


def trace_of(doc: dict[str, Any], group: str | None = None) -> Trace:
    """A scored turn case (`voicelab.turnbench.scores`: its cached document) as the strategies see it; `group`
    overrides the cached one (a user's fixtures)."""
    flags = speaking(doc["conf"], doc["vol"])
    stops = [StopScores(**{k: v for k, v in s.items() if k != "avg_logprob"}) for s in doc["stops"]]
    return Trace(doc["id"], group or doc["group"], float(doc["duration_s"]), flags,
                 [Point(**p) for p in doc["points"]], stops, list(doc["starts"]), dict(doc["meta"]),
                 None if doc.get("listen") is None else [np.asarray(x, np.float32) for x in doc["listen"]])


def builtin_strategies() -> list[Strategy]:
    """Every turn-end kind's replays (`voicelab.rules.turn_kinds.TURN_KINDS`), in the table's order."""
    return [r for kind in TURN_KINDS.values() for r in kind.bench_replays()]


# ---- points ------------------------------------------------------------------------------------------------

NEVER_MS = 1e7  # the dead air of a turn a strategy never ended (finite, so that percentiles stay defined)


@dataclass(frozen=True)
class Outcome:
    """A strategy at one setting on one case: per pause point, whether it ended the turn there; per end point,
    the dead air (ms after the true end of speech; `NEVER_MS`: it never ended the turn)."""

    cut: list[bool]
    dead_ms: list[float]
    premature: int  # end points declared before the true end of speech (counted at 0 ms of dead air)


def horizons(trace: Trace) -> list[float]:
    """Per point, the end of its stretch of the case: for a pause, the moment the VAD confirms the caller went
    on (a turn end declared before it answers half a sentence); for the end, never. The caller says nothing
    after the end of the turn: the case's recorded tail (`audio.TAIL_S`) is long enough for every VAD stop of
    every setting, and what follows it would be more of the same silence, so a rule that waits past the tail
    still ends the turn, that much later (its dead air is read, not cut off at the recording's end)."""
    out = []
    for p in trace.points:
        if p.kind == "end":
            out.append(math.inf)
        elif p.resume_s is None:
            out.append(trace.duration_s)
        else:
            c = confirmed_s(trace.flags, p.resume_s)
            out.append(c if c is not None else trace.duration_s)
    return out


def score_points(trace: Trace, decl: Sequence[float], hz: Sequence[float] | None = None) -> Outcome:
    """Assign each declaration to the stretch it falls in: (previous horizon, this point's horizon]."""
    hz = horizons(trace) if hz is None else hz
    cut: list[bool] = []
    dead: list[float] = []
    premature = 0
    lo = -math.inf
    for p, h in zip(trace.points, hz, strict=True):
        first = next((d for d in sorted(decl) if lo <= d < h), None)
        if p.kind == "pause":
            cut.append(first is not None)
        else:
            if first is None:
                dead.append(NEVER_MS)
            else:
                if first < p.t_s:
                    premature += 1
                dead.append(max(0.0, first - p.t_s) * 1000.0)
        lo = h
    return Outcome(cut, dead, premature)
