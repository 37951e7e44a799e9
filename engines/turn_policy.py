"""When to end the caller's turn, and what to do with a paused bot: two pure rules (and whether the words count).

Plain Python (no torch), so the pipeline, the tests and an analysis notebook share one copy.

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
| the audio says complete but the words firmly say cut off (text P ≤ `veto`) | `vetoed_ms` (2000) |
| no source says complete, or none is available | `cap_ms` (2500) |

Why these numbers (principles, not fitted to the bundled audio):
- `floor_ms` 200: a within-sentence pause (a breath, a comma) is commonly 150–250 ms; no
  evidence ends a turn inside one. The VAD's own hold (`stop_secs`) comes before this silence.
- Two independent sources that agree are wrong together far less often than one: end at once.
- One confident source against an undecided other: wait about the length of a hesitation
  pause (~0.5 s) so a caller who was only thinking gets to go on.
- A firm "incomplete" from the words ("i would like to book a") outweighs falling intonation:
  the grammar of a cut-off is near-certain evidence, prosody on a cut-off is not; a thinking
  pause mid-sentence can last 1–2 s, so such a turn waits `vetoed_ms`. The reverse (the audio
  firmly unfinished, the words sure) only waits `disputed_ms`: smart-turn is known to judge
  short closings ("okay thanks goodbye") unfinished, which is what set our p95.
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
  not" (text 0.967, audio 0.952) after a 1.8 s pause cut in again at another clip phase (session 10,
  one run in three), so there is no exemption.
Given the same scores, the decision is monotone in silence: END at t means END at every t' > t.

Words the recogniser itself does not trust are no evidence (`words_reliable`): the decision model was
trained on clean text, so on recogniser garbage ("and happy ball" for "thanks that is all") it judges
the words cut off and vetoes a complete-sounding turn (2.0 s). When the transcript fails Whisper's own
decode-failure test (mean token log probability below -1.0, compression ratio above 2.4, or silence:
P(no speech) above 0.6 with a log probability not above -1.0), the caller of `decide_turn` passes no
text P(complete) (`text_p=None`) and the one-source rows above apply to the audio's verdict.
That is `TurnThresholds.drop_unreliable_words`, off by default by measurement: re-applied to the scores of a
default-list run, it turned 6 turns' words into no evidence, and on 4 of them the garbage had been judged
complete (the decision model on garbage says "complete" more often than "cut off"), so the turns waited
1.7 s longer in all. The figures are logged either way (`stt_avg_logprob`, `words_reliable`).

Paused bot (`decide_interruption`): the bot paused its audio at the caller's voice; each time the
words, the decision model's verdict or the clock change, decide STOP (a real interruption: stop
for good), RESUME (a backchannel, a cough, nothing: continue where it paused) or WAIT:

1. STOP when the decision model says "interruption" with P ≥ `stop_p` (0.7) on non-empty words.
2. STOP when `safety_words` (5) words have been heard whatever the model says: nobody
   backchannels in five words, and a model error must not let the bot talk over a caller.
3. While the caller is still speaking, WAIT (a backchannel is over in well under a second; the
   words so far may be the start of "no wait ..."), up to `max_hold_ms` (2000) after the pause;
   then STOP if any words were recognised (someone talking that long means it), else RESUME
   (speech without words: background talk or noise).
4. The caller has stopped, and the recogniser's final reading of what they said is on its way (the
   turn VAD heard them, so a final pass runs at its stop): WAIT for it up to `final_wait_ms` (500)
   after the stop. A partial reading misses the last words and the bot is already silent, so the
   final is worth its ~100-200 ms; 500 ms is the STT service's own p99 time to a final
   (`ttfs_p99_latency`). Settling on partials at a fixed time after the pause instead let a partial
   judged "interruption" stop the bot for a backchannel whose final said "right".
5. Then RESUME once `settle_ms` (250) have passed since the pause if there are no words or the model
   says "not an interruption"; with words the model is unsure about, WAIT for a later transcript until
   `resume_ms` (600) and then follow the model's answer. 600 ms is the resume-gap target of issue 11:
   after that the pause itself becomes the defect.

A short reading the caller dropped is not an interruption. Once the caller has stopped and the final
reading is at most `fragment_words` (2) words that the decision model judges not a whole utterance (its
`turn_complete` P < 0.5: "i want", "my name", a garbled "i b"), the bot RESUMEs even if the interruption
verdict says yes. The interruption task is trained on the words heard *so far* ("two words of a request
already make an interruption"), which is right while the caller talks; a caller who drops out after a
fragment has yielded the floor, which is how people resolve overlapping talk: one side stops within a
beat or two and the other carries on (Schegloff 2000, "Overlapping talk and the organization of
turn-taking"). A short complete interruption ("wait", "stop", "hold on", "no no", "excuse me": P(complete)
0.77-1.0) still stops the bot, and three words or more are a sentence whatever their grammar (the word
rule's and pipecat's min-words threshold). The model errs here too: it calls "stop it" (0.41), "wait what"
(0.29) and "nope" (0.03) fragments, so on those the bot resumes; a caller who meant it says more, and the next
pause hears them (a wrong RESUME can be undone, a wrong STOP cannot: below).

Only words the recogniser can stand behind may stop the bot. A reading is no evidence when it holds more
words than the speech could (`words_plausible`: nobody says more than `max_words_per_s`, 6, words a second;
fast speech is ~4-5, auctioneers reach ~6; plus one word for the edges, over the speech the VAD timed plus
`speech_slack_ms`, 250, for the VAD's late start) or fails Whisper's own decode-failure test
(`words_reliable`). Whisper tiny.en on short, degraded sounds does both: "i see" on an
8 kHz line came out "i b i b i b i" (7 words in 0.5 s of speech) or "i p" (mean log probability -1.2),
"yeah" as "yennon", a cough as "you" (-1.85), and the decision model, trained on clean text, called some of
them interruptions with P near 1. Such a reading counts as no words for rules 1, 2 and 5. The asymmetry is
deliberate: a wrong STOP cannot be undone (the reply is dropped), a wrong RESUME can (a caller who meant it
keeps talking, and rule 3 or a clear reading stops the bot). Offline, every interruption of the bundled
fixtures and the real recordings read cleanly (log probabilities -0.1 to -0.75). Rule 3 still counts an
untrusted reading: 2 s of continuous speech over the bot is an interruption whatever the recogniser made of it.
For fixed inputs the outcome is monotone in time (all clocks moving together): once STOP or RESUME at t,
the same at t' > t.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class TurnAction(Enum):
    END = "end"
    WAIT = "wait"


class PauseAction(Enum):
    STOP = "stop"
    RESUME = "resume"
    WAIT = "wait"


@dataclass(frozen=True)
class TurnThresholds:
    floor_ms: float = 200.0
    medium_ms: float = 600.0
    single_sure_ms: float = 400.0
    disputed_ms: float = 1200.0
    vetoed_ms: float = 2000.0
    cap_ms: float = 2500.0
    sure: float = 0.85  # P(complete) that counts as a confident "complete"
    veto: float = 0.15  # P(complete) at or below which a source firmly says "incomplete"
    # leave the decision model's verdict out when the words fail Whisper's decode-failure test (`words_reliable`);
    # off: measured on the default list, it dropped more lucky "complete" verdicts on garbage than wrong vetoes
    drop_unreliable_words: bool = False

    def __post_init__(self) -> None:
        order = (self.floor_ms, self.single_sure_ms, self.medium_ms, self.disputed_ms, self.vetoed_ms,
                 self.cap_ms)
        if list(order) != sorted(order) or self.floor_ms < 0:
            raise ValueError(f"turn thresholds must satisfy 0 <= floor <= single_sure <= medium <= disputed "
                             f"<= vetoed <= cap, got {order}")
        if not 0.5 <= self.sure <= 1.0 or not 0.0 <= self.veto < 0.5:
            raise ValueError(f"turn thresholds: sure must be in [0.5, 1] and veto in [0, 0.5), got "
                             f"sure={self.sure} veto={self.veto}")


@dataclass(frozen=True)
class TurnDecision:
    action: TurnAction
    required_ms: float  # the silence at which these scores end the turn
    reason: str


def text_p_complete(answer: bool, confidence: float) -> float:
    """P(complete) from a decision model verdict on the `turn_complete` task."""
    return confidence if answer else 1.0 - confidence


def required_silence_ms(audio_p: float | None, text_p: float | None, th: TurnThresholds = TurnThresholds(),
                        resumed_pause_ms: float = 0.0) -> tuple[float, str]:
    """The silence after which the turn ends, given P(complete) from audio and from text; `resumed_pause_ms`:
    the longest pause inside this turn after which the caller went on (0: none)."""
    if resumed_pause_ms < 0:
        raise ValueError(f"resumed_pause_ms must be >= 0, got {resumed_pause_ms}")
    need, why = _evidence_silence_ms(audio_p, text_p, th)
    if resumed_pause_ms > need:
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
                th: TurnThresholds = TurnThresholds(), resumed_pause_ms: float = 0.0) -> TurnDecision:
    """END or WAIT after `silence_ms` of caller silence; audio_p: smart-turn's P(complete) or None;
    text_p: the decision model's P(complete) on the current transcript (`text_p_complete`) or None;
    resumed_pause_ms: the longest pause in this turn the caller went on after."""
    need, why = required_silence_ms(audio_p, text_p, th, resumed_pause_ms)
    return TurnDecision(TurnAction.END if silence_ms >= need else TurnAction.WAIT, need, why)


# Whisper's own test of a failed decode: openai-whisper `transcribe()` defaults (whisper/transcribe.py), which
# faster-whisper keeps (`log_prob_threshold`, `compression_ratio_threshold`, `no_speech_threshold`).
WHISPER_LOGPROB_THRESHOLD = -1.0
WHISPER_COMPRESSION_RATIO_THRESHOLD = 2.4
WHISPER_NO_SPEECH_THRESHOLD = 0.6


def words_reliable(avg_logprob: float | None, compression_ratio: float | None,
                   no_speech_prob: float | None) -> bool:
    """Whether the recogniser's words may be judged as text: False where Whisper's `transcribe()` would call the
    decode a failure or the window silence.

    The thresholds are openai-whisper's `transcribe()` defaults: `logprob_threshold=-1.0` (failed when the mean
    token log probability is < -1.0), `compression_ratio_threshold=2.4` (failed when the gzip compression ratio
    of the text is > 2.4: a looping decoder) and `no_speech_threshold=0.6` (silence when P(no speech) > 0.6
    and the log probability is not above -1.0; a confident decode is kept whatever P(no speech) says).
    None means no figure (a recogniser that gives none: pocketsphinx, the fixture transcript): that test
    passes, and the silence test needs both of its figures.
    """
    if avg_logprob is not None and avg_logprob < WHISPER_LOGPROB_THRESHOLD:
        return False
    if compression_ratio is not None and compression_ratio > WHISPER_COMPRESSION_RATIO_THRESHOLD:
        return False
    return not (no_speech_prob is not None and avg_logprob is not None
                and no_speech_prob > WHISPER_NO_SPEECH_THRESHOLD and avg_logprob <= WHISPER_LOGPROB_THRESHOLD)


def confidence_figure(result: Any, name: str) -> float | None:
    """One of the recogniser's figures (`avg_logprob`, `compression_ratio`, `no_speech_prob`) from a transcript's
    result object, such as the `SttConfidence` a Whisper transcript frame carries (None: it gave none)."""
    v = getattr(result, name, None)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def result_reliable(result: Any) -> bool:
    """`words_reliable` on a transcript's result object (True when it carries no figures)."""
    return words_reliable(confidence_figure(result, "avg_logprob"), confidence_figure(result, "compression_ratio"),
                          confidence_figure(result, "no_speech_prob"))


@dataclass(frozen=True)
class PauseThresholds:
    stop_p: float = 0.7  # P(interruption) that stops the bot for good
    safety_words: int = 5
    settle_ms: float = 250.0
    resume_ms: float = 600.0
    max_hold_ms: float = 2000.0
    final_wait_ms: float = 500.0  # after the caller stops, how long to wait for the final reading
    max_words_per_s: float = 6.0  # a reading with more words than this rate (plus one) could hold is no evidence
    # the speech length is estimated from the turn VAD's start and stop, which lag the speech by start_secs plus
    # Silero's smoothing (0.24-0.6 s after the true onset in the default list's runs): it can be short by that
    speech_slack_ms: float = 250.0
    fragment_words: int = 2  # a final reading this short must be a whole utterance to stop the bot

    def __post_init__(self) -> None:
        if self.fragment_words < 0 or self.fragment_words >= self.safety_words:
            raise ValueError(f"pause thresholds: fragment_words must be in [0, safety_words), got "
                             f"{self.fragment_words}")
        if not 0 <= self.final_wait_ms <= self.max_hold_ms or self.max_words_per_s <= 0:
            raise ValueError(f"pause thresholds: final_wait_ms must be in [0, max_hold_ms] and max_words_per_s "
                             f"> 0, got {self.final_wait_ms}, {self.max_words_per_s}")
        if not 0.5 <= self.stop_p <= 1.0 or self.safety_words < 1:
            raise ValueError(f"pause thresholds: stop_p must be in [0.5, 1] and safety_words >= 1, got "
                             f"stop_p={self.stop_p} safety_words={self.safety_words}")
        if not 0 <= self.settle_ms <= self.resume_ms <= self.max_hold_ms:
            raise ValueError(f"pause thresholds must satisfy 0 <= settle <= resume <= max_hold, got "
                             f"{self.settle_ms}, {self.resume_ms}, {self.max_hold_ms}")


@dataclass(frozen=True)
class PauseDecision:
    action: PauseAction
    reason: str


def words_plausible(n_words: int, speech_ms: float | None, th: PauseThresholds = PauseThresholds()) -> bool:
    """Whether `n_words` recognised words fit in `speech_ms` of speech (None: unknown duration, so yes)."""
    if speech_ms is None:
        return True
    return n_words <= 1 + th.max_words_per_s * (max(0.0, speech_ms) + th.speech_slack_ms) / 1000.0


def decide_interruption(words: str, interruption_p: float | None, since_pause_ms: float, caller_speaking: bool,
                        th: PauseThresholds = PauseThresholds(), words_final: bool = True, *,
                        heard_words: int | None = None, awaiting_final_ms: float | None = None,
                        complete_p: float | None = None) -> PauseDecision:
    """STOP, RESUME or WAIT for a bot paused at the caller's voice.

    words: the transcript heard since the pause (interim or final) that may be judged ("" when the reading
    is no evidence: `words_plausible`, `words_reliable`); interruption_p: the decision model's
    P(interruption) on those words (None if not asked yet); since_pause_ms: time since the bot paused; caller_speaking: the VAD still hears
    the caller; words_final: the words are the recogniser's final reading, not a partial one; heard_words:
    the words recognised at all, judged or not (None: those of `words`); awaiting_final_ms: the time since
    the caller stopped while the final reading of their speech has not landed (None: none is on its way);
    complete_p: the decision model's P(the words are a whole utterance) (None: not judged).
    The model's verdict decides only on a final reading (a partial misses the last words: "all" of "all
    right" reads as an interruption); without one, the partial's verdict is taken once the final is overdue
    and `resume_ms` has passed.
    """
    if interruption_p is not None and not 0.0 <= interruption_p <= 1.0:
        raise ValueError(f"P(interruption) must be in [0, 1], got {interruption_p}")
    n = len(words.split())
    heard = n if heard_words is None else max(n, heard_words)
    fragment = bool(n) and n <= th.fragment_words and words_final and complete_p is not None and complete_p < 0.5
    if n and words_final and interruption_p is not None and interruption_p >= th.stop_p and not fragment:
        return PauseDecision(PauseAction.STOP, "the words are an interruption")
    if n >= th.safety_words:
        return PauseDecision(PauseAction.STOP, f"{n} words over the bot")
    if caller_speaking:
        if since_pause_ms < th.max_hold_ms:
            return PauseDecision(PauseAction.WAIT, "caller still speaking")
        return (PauseDecision(PauseAction.STOP, "caller kept talking with words") if heard
                else PauseDecision(PauseAction.RESUME, "long sound without words"))
    if since_pause_ms < th.settle_ms:
        return PauseDecision(PauseAction.WAIT, "settling")
    if awaiting_final_ms is not None and awaiting_final_ms < th.final_wait_ms and since_pause_ms < th.max_hold_ms:
        return PauseDecision(PauseAction.WAIT, "waiting for the final transcript")
    if n == 0:
        return PauseDecision(PauseAction.RESUME, "untrusted reading: no words" if heard else "no words")
    if words_final and interruption_p is not None and interruption_p < 1.0 - th.stop_p:
        return PauseDecision(PauseAction.RESUME, "backchannel or noise")
    if fragment:
        return PauseDecision(PauseAction.RESUME, "the caller dropped out after a fragment")
    if since_pause_ms < th.resume_ms:
        return PauseDecision(PauseAction.WAIT, "unsure: waiting for the transcript")
    if interruption_p is not None and interruption_p >= 0.5:
        return PauseDecision(PauseAction.STOP, "unsure, leaning interruption")
    return PauseDecision(PauseAction.RESUME, "unsure, leaning backchannel")
