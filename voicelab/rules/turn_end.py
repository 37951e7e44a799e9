"""When to end the caller's turn: a pure rule on smart-turn's and the decision model's P(complete).

Plain Python (no torch), so the pipeline, the tests and an analysis notebook share one copy. `DecideTurnEnd`
(at the end) is the rule as a turn runs it, on timed events: the pipeline's adapter and the turn bench's replay
both run that one class.

Turn end (`decide_turn`), re-scored every 100 ms as the silence after the caller's speech grows.
Each evidence source gives P(the turn is complete): smart-turn from the audio (prosody), the
decision model from the words. The rule turns them into a *required silence*, the silence after
which the turn ends, and ends the turn once the silence reaches it:

| evidence | required silence |
|---|---|
| both sources say complete (P ≥ 0.5) | `floor_ms` (200) |
| only one source available, it says complete with P ≥ `sure` (0.85) | `single_sure_ms` (400) |
| the sources disagree; one says complete with P ≥ `sure`, the other does not firmly deny it (P > `veto`, 0.15) | `medium_ms` (600) |
| the sources disagree otherwise; or one source only, complete with P < `sure` | `disputed_ms` (1200) |
| the audio says complete but the words firmly say cut off (text P ≤ `veto`) | `vetoed_ms` (1200) |
| no source says complete, or none is available | `cap_ms` (2500) |

Why these numbers (principles, not fitted to the bundled audio):
- `floor_ms` 200: a within-sentence pause (a breath, a comma) is commonly 150–250 ms; no
  evidence ends a turn inside one. The VAD's own hold (`stop_secs`) comes before this silence.
- Two independent sources that agree are wrong together far less often than one: end at once.
- One confident source against an undecided other: wait about the length of a hesitation
  pause (~0.5 s) so a caller who was only thinking gets to go on.
- A firm "incomplete" from the words ("i would like to book a") against falling intonation is one
  more disagreement: it waits `vetoed_ms`, as long as `disputed_ms`. On clean text the grammar of a
  cut-off is near-certain evidence, but the words the rule sees are the recogniser's reading, and on
  human speech the decision model's verdicts on those readings barely tell ends from pauses (AUC 0.57
  on the turn bench's phone calls, 0.41 on its meetings). The 2.0 s it used to wait prevented no false
  cut-off on the phone calls or the meetings and 7 of 1175 on read speech, while it set the main job's
  slowest answers, all misreadings ("and happy ball" for "thanks that is all";
  docs/decisions/turn-end-veto-wait.md). The reverse (the audio firmly unfinished, the words sure)
  waits `disputed_ms` too: smart-turn is known to judge short closings ("okay thanks goodbye")
  unfinished.
- `cap_ms` 2500: a caller silent for 2.5 s after unfinished-sounding words is usually waiting
  (LiveKit's maximum endpointing delay is 2.5–3 s). Between `disputed_ms` and `cap_ms` lies the
  cost of a false cut-in, which is worse for a caller than a slow reply.
- A caller who already paused inside this turn and went on has shown that a silence that long
  is not their turn end (the idea behind adaptive endpointing delays such as LiveKit's
  "dynamic" mode). So every wait lasts at least the longest pause the caller resumed from in this
  turn (`resumed_pause_ms`, never past `cap_ms`), whatever the scores say: the caller's own behaviour
  outranks two models that cannot tell a pause for effect from an end. A speaker who pauses for effect
  ("and so my fellow americans ... ask not ...") gets no answer to a fragment: the JFK recording's "and
  so my fellow americans asked not" (text 1.0, audio 0.55) ended at the floor after he had resumed from
  a 1.2 s pause, and the bot cut in (one run in three; agreeing sources of any strength were exempt);
  with the exemption narrowed to two sources both sure (P >= `sure`), "and so my fellow americans ask
  not" (text 0.967, audio 0.952) after a 1.8 s pause cut in again at another clip phase (2026-12-01,
  one run in three), so there is no exemption.
Given the same scores, the decision is monotone in silence: END at t means END at every t' > t.

Words the recogniser itself does not trust are no evidence (`voicelab.speech.reliability.words_reliable`): the decision model was
trained on clean text, so on recogniser garbage ("and happy ball" for "thanks that is all") it judges
the words cut off and holds a complete-sounding turn (`vetoed_ms`). When the transcript fails Whisper's own
decode-failure test (mean token log probability below -1.0, compression ratio above 2.4, or silence:
P(no speech) above 0.6 with a log probability not above -1.0), the caller of `decide_turn` passes no
text P(complete) (`text_p=None`) and the one-source rows above apply to the audio's verdict.
That is `TurnThresholds.drop_unreliable_words`, off by default by measurement: re-applied to the scores of a
default-list run, it turned 6 turns' words into no evidence, and on 4 of them the garbage had been judged
complete (the decision model on garbage says "complete" more often than "cut off"), so the turns waited
1.7 s longer in all. The figures are logged either way (`stt_avg_logprob`, `words_reliable`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Protocol


class TurnAction(Enum):
    END = "end"
    WAIT = "wait"


@dataclass(frozen=True)
class TurnThresholds:
    floor_ms: float = 200.0
    medium_ms: float = 600.0
    single_sure_ms: float = 400.0
    disputed_ms: float = 1200.0
    vetoed_ms: float = 1200.0  # as disputed: on human readings a firm "cut off" is no surer (module doc)
    cap_ms: float = 2500.0
    sure: float = 0.85  # P(complete) that counts as a confident "complete"
    veto: float = 0.15  # P(complete) at or below which a source firmly says "incomplete"
    # leave the decision model's verdict out when the words fail Whisper's decode-failure test (`words_reliable`);
    # off: measured on the default list, it dropped more lucky "complete" verdicts on garbage than wrong vetoes
    drop_unreliable_words: bool = False
    # every wait lasts at least the longest pause the caller went on after in this turn (module doc)
    resumed_bound: bool = True

    def __post_init__(self) -> None:
        order = (self.floor_ms, self.single_sure_ms, self.medium_ms, self.disputed_ms, self.vetoed_ms,
                 self.cap_ms)
        if list(order) != sorted(order) or self.floor_ms < 0:
            raise ValueError(f"turn thresholds must satisfy 0 <= floor <= single_sure <= medium <= disputed "
                             f"<= vetoed <= cap, got {order}")
        if not 0.5 <= self.sure <= 1.0 or not 0.0 <= self.veto < 0.5:
            raise ValueError(f"turn thresholds: sure must be in [0.5, 1] and veto in [0, 0.5), got "
                             f"sure={self.sure} veto={self.veto}")

    @property
    def adds_start_lag(self) -> bool:
        """The table's waits are silences to outlast: `DecideTurnEnd` adds the VAD's `start_secs` above the floor."""
        return True

    def evidence_silence_ms(self, audio_p: float | None, text_p: float | None) -> tuple[float, str]:
        """The table above: the silence the two P(complete) need, and why."""
        return _evidence_silence_ms(audio_p, text_p, self)


class Weighing(Protocol):
    """How `DecideTurnEnd` turns the two P(complete) into a required silence: the hand table (`TurnThresholds`)
    or a fitted one (`voicelab.rules.turn_fusion.FusedWeighing`)."""

    floor_ms: float
    cap_ms: float
    drop_unreliable_words: bool
    resumed_bound: bool

    @property
    def adds_start_lag(self) -> bool: ...

    def evidence_silence_ms(self, audio_p: float | None, text_p: float | None) -> tuple[float, str]: ...


@dataclass(frozen=True)
class TurnDecision:
    action: TurnAction
    required_ms: float  # the silence at which these scores end the turn
    reason: str


def text_p_complete(answer: bool, confidence: float) -> float:
    """P(complete) from a decision model verdict on the `turn_complete` task."""
    return confidence if answer else 1.0 - confidence


def required_silence_ms(audio_p: float | None, text_p: float | None, th: Weighing = TurnThresholds(),
                        resumed_pause_ms: float = 0.0) -> tuple[float, str]:
    """The silence after which the turn ends, given P(complete) from audio and from text; `resumed_pause_ms`:
    the longest pause inside this turn after which the caller went on (0: none)."""
    if resumed_pause_ms < 0:
        raise ValueError(f"resumed_pause_ms must be >= 0, got {resumed_pause_ms}")
    for p in (audio_p, text_p):
        if p is not None and not 0.0 <= p <= 1.0:
            raise ValueError(f"P(complete) must be in [0, 1], got {p}")
    need, why = th.evidence_silence_ms(audio_p, text_p)
    if th.resumed_bound and resumed_pause_ms > need:
        return min(th.cap_ms, resumed_pause_ms), f"{why}; the caller went on after a longer pause"
    return need, why


def _evidence_silence_ms(audio_p: float | None, text_p: float | None, th: TurnThresholds) -> tuple[float, str]:
    ps = [p for p in (audio_p, text_p) if p is not None]
    for p in ps:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"P(complete) must be in [0, 1], got {p}")
    if not ps:
        return th.cap_ms, "no evidence"
    if len(ps) == 1:
        if ps[0] >= th.sure:
            return th.single_sure_ms, "one source, sure: complete"
        return (th.disputed_ms, "one source, unsure: complete") if ps[0] >= 0.5 else (th.cap_ms, "one source: incomplete")
    a, t = ps
    if a >= 0.5 and t >= 0.5:
        return th.floor_ms, "audio and text agree: complete"
    if a < 0.5 and t < 0.5:
        return th.cap_ms, "audio and text: incomplete"
    if t <= th.veto:
        return th.vetoed_ms, "the words are cut off, the audio sounds complete"
    if max(a, t) >= th.sure and min(a, t) > th.veto:
        return th.medium_ms, "one source sure, the other undecided"
    return th.disputed_ms, "sources disagree"


def decide_turn(silence_ms: float, audio_p: float | None, text_p: float | None,
                th: Weighing = TurnThresholds(), resumed_pause_ms: float = 0.0) -> TurnDecision:
    """END or WAIT after `silence_ms` of caller silence; audio_p: smart-turn's P(complete) or None;
    text_p: the decision model's P(complete) on the current transcript (`text_p_complete`) or None;
    resumed_pause_ms: the longest pause in this turn the caller went on after."""
    need, why = required_silence_ms(audio_p, text_p, th, resumed_pause_ms)
    return TurnDecision(TurnAction.END if silence_ms >= need else TurnAction.WAIT, need, why)


@dataclass(frozen=True)
class TurnVerdict:
    """`DecideTurnEnd.verdict`: the rule applied to the silence so far."""

    end: bool  # the turn ends now
    silence_ms: float  # since the caller's estimated end of speech
    required_ms: float  # the silence these scores need, with the VAD's `start_secs` on waits above the floor
    reason: str
    words_used: bool  # the words' P(complete) was evidence (False: none yet, or left out as unreliable)
    due_s: float | None  # seconds until the silence reaches `required_ms` (None: no final words yet)


class DecideTurnEnd:
    """The turn end of `--turn decide` on timed events: the one copy the pipeline and the turn bench both run.

    Times are seconds on any one clock: the pipeline's adapter (`DecideTurnEndStopStrategy`) feeds
    `time.monotonic()`, the bench (`DecideTurnEndReplay`) the case's virtual clock. Events: the VAD's start
    (`vad_started`, with its `start_secs`) and stop (`vad_stopped`, with its `stop_secs`), smart-turn's
    P(complete) (`audio_scored`), a final transcript (`final_heard`) and the decision model's P(complete) on the
    words (`text_scored`). Questions: whether a verdict may be given yet (`may_decide`, `verdict_from_s`), the
    verdict now (`verdict`) and the moment the turn ends if nothing else happens (`end_at_s`).

    What it adds to `required_silence_ms`:
    - the silence counts from the caller's estimated end of speech, the VAD stop minus `stop_secs`;
    - every wait above the floor also covers the VAD's `start_secs`: speech that resumes is seen only that late,
      so a wait meant to outlast a pause must outlast the pause plus that lag;
    - the resumed pause: a VAD start after a stop inside the turn records the pause the caller went on after
      (its speech began `start_secs` before the start), and every later wait in the turn lasts at least that;
    - no verdict before the turn has final words, nor before the stretch's final transcript is in or
      `final_wait_s` has passed since the VAD stop without one (a partial misses the last words, and those,
      "... my appointment on", decide a cut-off).
    """

    def __init__(self, thresholds: Weighing | None = None, final_wait_s: float = 1.0,
                 start_secs: float = 0.2) -> None:
        self.thresholds: Weighing = thresholds or TurnThresholds()
        self.final_wait_s = final_wait_s
        self.start_secs = start_secs  # the VAD's start window (updated from its starts)
        self.speaking = False  # the VAD hears the caller
        self.speech_end_s: float | None = None  # the caller's estimated end of speech (None: speaking, or no stop)
        self.stopped_at_s: float | None = None  # the VAD's last stop
        self.stop_in_turn = False  # the last VAD stop came inside the turn
        self.resumed_pause_ms = 0.0  # the longest pause inside this turn after which the caller went on
        self.audio_p: float | None = None  # smart-turn's P(complete) on this stretch
        self.text_p: float | None = None  # the decision model's P(complete) on the latest words scored
        self.final_words = ""  # the turn's words in final transcripts
        self.final_at_s: float | None = None  # when this stretch's final transcript landed (None: not yet)

    def new_turn(self) -> None:
        """A user turn opened or closed: nothing heard so far counts for the next turn end."""
        self.final_words, self.text_p, self.resumed_pause_ms = "", None, 0.0
        self.speech_end_s = self.audio_p = self.final_at_s = None

    def vad_started(self, now_s: float, start_secs: float, in_turn: bool = True) -> None:
        """The VAD confirmed speech `start_secs` after it began: what was concluded about the silence is stale."""
        self.start_secs = start_secs
        self.speaking = True
        if self.speech_end_s is not None and self.stop_in_turn and in_turn:
            # the caller went on after a pause inside the turn; the speech resumed start_secs ago
            pause_ms = (now_s - start_secs - self.speech_end_s) * 1000.0
            self.resumed_pause_ms = max(self.resumed_pause_ms, pause_ms)
        self.speech_end_s = self.audio_p = None

    def vad_stopped(self, now_s: float, stop_secs: float, in_turn: bool = True) -> None:
        """The VAD confirmed silence `stop_secs` after the speech ended; this stretch's final is still to come."""
        self.speaking = False
        self.final_at_s = None
        self.speech_end_s = now_s - stop_secs
        self.stopped_at_s = now_s
        self.stop_in_turn = in_turn

    def audio_scored(self, p: float | None) -> None:
        self.audio_p = p

    def final_heard(self, now_s: float, turn_words: str) -> None:
        """A final transcript landed; `turn_words`: all the turn's final words so far."""
        self.final_words = turn_words
        self.final_at_s = now_s

    def text_scored(self, p: float | None) -> None:
        self.text_p = p

    def may_decide(self, now_s: float) -> bool:
        """Whether a verdict may be given: this stretch's final is in, or `final_wait_s` passed without one."""
        if self.final_at_s is not None:
            return True
        return self.stopped_at_s is not None and now_s - self.stopped_at_s >= self.final_wait_s

    def verdict_from_s(self) -> float:
        """The first moment `may_decide` holds after the last VAD stop (inf: no stop yet)."""
        if self.stopped_at_s is None:
            return math.inf
        if self.final_at_s is not None:
            return max(self.stopped_at_s, self.final_at_s)
        return self.stopped_at_s + self.final_wait_s

    def required_ms(self, words_reliable: bool = True) -> tuple[float, str, float | None]:
        """(required silence in ms, the rule's reason, the text P(complete) used as evidence)."""
        th = self.thresholds
        # words the recogniser does not trust may be left out as evidence (off by default: TurnThresholds)
        text_p = self.text_p if words_reliable or not th.drop_unreliable_words else None
        need, why = required_silence_ms(self.audio_p, text_p, th, self.resumed_pause_ms)
        if need > th.floor_ms and th.adds_start_lag:
            need += self.start_secs * 1000.0
        return need, why, text_p

    def verdict(self, now_s: float, words_reliable: bool = True) -> TurnVerdict:
        """The rule on the silence so far (ask only when `may_decide`); `words_reliable`: the scored words pass
        the recogniser's decode-failure test."""
        silence_ms = 0.0 if self.speech_end_s is None else (now_s - self.speech_end_s) * 1000.0
        need, why, text_p = self.required_ms(words_reliable)
        words = bool(self.final_words)
        return TurnVerdict(end=words and silence_ms >= need, silence_ms=silence_ms, required_ms=need, reason=why,
                           words_used=text_p is not None,
                           due_s=(need - silence_ms) / 1000.0 if words else None)

    def end_at_s(self, not_before_s: float, words_reliable: bool = True) -> float | None:
        """When the turn ends if nothing else happens, given no verdict before `not_before_s` (None: never, on
        what has been heard: no final words, or the caller is speaking)."""
        if not self.final_words or self.speech_end_s is None:
            return None
        need, _, _ = self.required_ms(words_reliable)
        return max(self.speech_end_s + need / 1000.0, not_before_s)
