"""Pause, decide, resume: the bookkeeping of a bot that paused its audio at the caller's voice.

Plain Python (no pipecat, no torch). The decision itself is `decide_interruption` below
(STOP / RESUME / WAIT from the words heard since the pause, P(interruption), the time since the pause and
whether the caller is still speaking). `PausedBot` keeps those inputs for one pause and asks the rule.

P(interruption) comes from a judge: the decision model (`engines.decision.model`, task "interruption") when its
weights are installed, else `word_count_p`, a documented rule on the recogniser's words:

- no words yet: None (unknown; the rule waits while the caller speaks, resumes once they stop);
- at most `BACKCHANNEL_MAX_WORDS` (2) words: P = 0.2, a backchannel or a noise. Measured on the bundled
  clips, streaming pocketsphinx turns "mm hmm" into "the" and "uh huh" into "i have": a backchannel comes
  out as one or two short words, whatever they are, so the words themselves carry little;
- 3 words or more: P = 0.8, an interruption (nobody backchannels in a sentence); with the rule's stop_p
  of 0.7 the bot stops for good as soon as the third word is recognised, which is `words:3`'s old barge-in
  rule, except that the bot has been silent since the VAD heard the caller.

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
   turn VAD heard them, so a final pass runs at its stop): WAIT for it up to `final_wait_ms` (1000)
   after the stop, the turn rule's own wait for a final. A partial reading misses the last words and
   the bot is already silent, so the final is worth its ~100-200 ms. The wait was 500 ms (the STT
   service's p99 time to a final, `ttfs_p99_latency`), but on a busy 2-core CPU Whisper tiny.en's final
   for a second of speech landed 607 ms after the stop: the bot resumed on the partial "tuesday", and
   the late final ("... at 11 am", an interruption) was dropped as a backchannel's, so the caller's words
   were lost. Waiting costs only when a final is late (the bot is silent meanwhile); a final that never
   lands ends the wait at 1 s. Settling on partials at a fixed time after the pause instead let a partial
   judged "interruption" stop the bot for a backchannel whose final said "right".
5. Then RESUME once `settle_ms` (250) have passed since the pause if there are no words or the model
   says "not an interruption"; with words the model is unsure about, WAIT for a later transcript until
   `resume_ms` (600) and then follow the model's answer. 600 ms is the lab's resume-gap target:
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
rule's and pipecat's min-words threshold), provided the caller spoke long enough to say them.

Words are counted only as far as the speech could hold them. The recogniser invents words on a short sound:
"mhm" said over a readback came out "i make him" (three words, P(interruption) 0.85, P(complete) 0.01) and the
bot dropped its reply; espeak-ng's "mhm" on a clean line reads "let me turn". A word count is a proxy for how
much the caller said, and the speech's length measures that directly: a reading counts as at most as many words
as the speech holds at a fast conversational rate (`sentence_words_per_s`, 5 words a second: fast speech is
~4-5, the plausibility test's 6 is the ceiling). So a final reading that is not a whole utterance (P(complete)
< 0.5) from speech too short for three words (under 0.6 s: a backchannel, which lasts a few hundred ms) is a
fragment like "i b", and the bot resumes; the same three words over 0.7 s of speech ("can you check my") still
stop it. A short whole utterance ("wait", "stop it", "hold on": P(complete) >= 0.5) stops it as before. The model errs here too: it calls "stop it" (0.41), "wait what"
(0.29) and "nope" (0.03) fragments, so on those the bot resumes; a caller who meant it says more, and the next
pause hears them (a wrong RESUME can be undone, a wrong STOP cannot: below).

Only words the recogniser can stand behind may stop the bot. A reading is no evidence when it holds more
words than the speech could (`words_plausible`: nobody says more than `max_words_per_s`, 6, words a second;
fast speech is ~4-5, auctioneers reach ~6; plus one word for the edges, over the speech the VAD timed plus
`speech_slack_ms`, 250, for the VAD's late start) or fails Whisper's own decode-failure test
(`voicelab.speech.reliability.words_reliable`). Whisper tiny.en on short, degraded sounds does both: "i see" on an
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

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum


class PauseAction(Enum):
    STOP = "stop"
    RESUME = "resume"
    WAIT = "wait"


# The pause trigger's VAD: Silero windows of speech (32 ms each) to start, instead of the turn VAD's start_secs;
# a false start costs only a pause that is resumed. One window (32 ms), chosen on the bench's barge-in sounds
# (docs/decisions/barge-in-onset-one-window.md): two windows cost 40 ms of stop latency at the median on every
# group and no false barge-in was avoided by them.
ONSET_START_SECS = 0.032
ONSET_STOP_SECS = 0.2


@dataclass(frozen=True)
class PauseThresholds:
    stop_p: float = 0.7  # P(interruption) that stops the bot for good
    safety_words: int = 5
    settle_ms: float = 250.0
    resume_ms: float = 600.0
    max_hold_ms: float = 2000.0
    final_wait_ms: float = 1000.0  # after the caller stops, how long to wait for the final reading
    max_words_per_s: float = 6.0  # a reading with more words than this rate (plus one) could hold is no evidence
    # the speech length is estimated from the turn VAD's start and stop, which lag the speech by start_secs plus
    # Silero's smoothing (0.24-0.6 s after the true onset in the default list's runs): it can be short by that
    speech_slack_ms: float = 250.0
    fragment_words: int = 2  # a final reading this short must be a whole utterance to stop the bot
    # a reading counts as at most the words its speech holds at this (fast conversational) rate, so a short sound
    # misread as three words is judged as a fragment; None: count the words as read (the rule before)
    sentence_words_per_s: float | None = 5.0

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
        if self.sentence_words_per_s is not None and self.sentence_words_per_s <= 0:
            raise ValueError(f"pause thresholds: sentence_words_per_s must be > 0 or None, got "
                             f"{self.sentence_words_per_s}")
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
                        complete_p: float | None = None, speech_ms: float | None = None) -> PauseDecision:
    """STOP, RESUME or WAIT for a bot paused at the caller's voice.

    words: the transcript heard since the pause (interim or final) that may be judged ("" when the reading
    is no evidence: `words_plausible`, `words_reliable`); interruption_p: the decision model's
    P(interruption) on those words (None if not asked yet); since_pause_ms: time since the bot paused; caller_speaking: the VAD still hears
    the caller; words_final: the words are the recogniser's final reading, not a partial one; heard_words:
    the words recognised at all, judged or not (None: those of `words`); awaiting_final_ms: the time since
    the caller stopped while the final reading of their speech has not landed (None: none is on its way);
    complete_p: the decision model's P(the words are a whole utterance) (None: not judged); speech_ms: how long
    the caller spoke (None: unknown), which caps the words a reading counts as (`sentence_words_per_s`).
    The model's verdict decides only on a final reading (a partial misses the last words: "all" of "all
    right" reads as an interruption); without one, the partial's verdict is taken once the final is overdue
    and `resume_ms` has passed.
    """
    if interruption_p is not None and not 0.0 <= interruption_p <= 1.0:
        raise ValueError(f"P(interruption) must be in [0, 1], got {interruption_p}")
    n = len(words.split())
    heard = n if heard_words is None else max(n, heard_words)
    said = n  # the words the caller can have said: no more than the speech holds at a fast rate
    if speech_ms is not None and th.sentence_words_per_s is not None:
        said = min(n, int(max(0.0, speech_ms) / 1000.0 * th.sentence_words_per_s))
    fragment = bool(n) and said <= th.fragment_words and words_final and complete_p is not None and complete_p < 0.5
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


BACKCHANNEL_MAX_WORDS = 2
BACKCHANNEL_P = 0.2
SENTENCE_P = 0.8

Judge = Callable[[str], float | None]  # words -> P(interruption), None when it cannot tell


def word_count_p(words: str, max_backchannel_words: int = BACKCHANNEL_MAX_WORDS) -> float | None:
    """P(interruption) from the number of recognised words alone (see the module doc)."""
    n = len(words.split())
    if n == 0:
        return None
    return BACKCHANNEL_P if n <= max_backchannel_words else SENTENCE_P


@dataclass
class PausedBot:
    """One pause: what was heard since it began. Times are milliseconds on any one clock.

    The turn VAD's start and stop (`vad_started`, `vad_stopped`) give the length of the caller's speech
    (for `words_plausible`) and tell whether the recogniser's final reading of it is on its way: the STT
    runs a final pass at each VAD stop, so from then until a final lands the rule waits for it."""

    paused_at_ms: float
    words: str = ""
    interruption_p: float | None = None
    caller_speaking: bool = True  # a pause begins at the VAD's start of speech
    words_final: bool = False  # the words are the recogniser's final reading (the rule waits for one)
    # speech in the stretches the turn VAD has closed (None: its start came before the pause, length unknown)
    speech_ms_done: float | None = None
    speech_from_ms: float | None = None  # the estimated start of the stretch under way (None: none)
    stopped_at_ms: float | None = None  # the turn VAD's last stop while a final reading is due (None: none due)
    reliable: bool = True  # the recogniser stands behind the words (`words_reliable`)
    avg_logprob: float | None = None  # the recogniser's mean token log probability of the words, if it gave one
    complete_p: float | None = None  # P(the words are a whole utterance), for a short final reading

    def vad_started(self, now_ms: float, start_secs: float = 0.0) -> None:
        """The turn VAD confirmed speech `start_secs` after it began."""
        self.caller_speaking = True
        self.speech_ms_done = self.speech_ms_done or 0.0
        self.speech_from_ms = now_ms - 1000.0 * start_secs

    def vad_stopped(self, now_ms: float, stop_secs: float = 0.0) -> None:
        """The turn VAD confirmed silence `stop_secs` after the speech ended; a final reading is due."""
        self.caller_speaking = False
        if self.speech_from_ms is not None:
            self.speech_ms_done = (self.speech_ms_done or 0.0) + max(0.0, now_ms - 1000.0 * stop_secs
                                                                      - self.speech_from_ms)
            self.speech_from_ms = None
            self.stopped_at_ms = now_ms

    def onset_quiet(self, turn_vad_speaking: bool) -> None:
        """The pause trigger's early VAD hears quiet: the caller has stopped, unless the turn VAD still hears them
        (a click or a breath the turn VAD never confirmed ends the caller's speech here)."""
        if not turn_vad_speaking:
            self.caller_speaking = False

    def speech_ms(self, now_ms: float) -> float | None:
        """How long the caller has spoken in this pause (None: unknown, the turn VAD's start came before it)."""
        if self.speech_ms_done is None:
            return None
        running = 0.0 if self.speech_from_ms is None else max(0.0, now_ms - self.speech_from_ms)
        return self.speech_ms_done + running

    def hear(self, words: str, judge: Judge, final: bool = True, reliable: bool = True,
             complete: Judge | None = None, fragment_words: int = PauseThresholds().fragment_words,
             avg_logprob: float | None = None) -> None:
        """A (cumulative) transcript of the caller since the pause: interim (`final=False`) or final;
        `reliable`: it passes the recogniser's own decode-failure test (`words_reliable`); `complete`: words ->
        P(a whole utterance), asked of a final reading of at most `fragment_words` words (the strategy asks up
        to `safety_words - 1`: a longer reading of short speech may be judged a fragment); `avg_logprob`: the
        recogniser's figure, kept for the log."""
        words = words.strip()
        self.words_final = final
        self.reliable = reliable
        self.avg_logprob = avg_logprob
        if final:
            self.stopped_at_ms = None  # the final reading landed
        if words != self.words:
            self.words = words
            self.interruption_p = judge(words) if words else None
            self.complete_p = None
        if (final and complete is not None and self.complete_p is None and words
                and len(words.split()) <= fragment_words):
            self.complete_p = complete(words)

    def plausible(self, now_ms: float, th: PauseThresholds = PauseThresholds()) -> bool:
        """Whether the words fit in the speech heard (`words_plausible`)."""
        return words_plausible(len(self.words.split()), self.speech_ms(now_ms), th)

    def decide(self, now_ms: float, th: PauseThresholds = PauseThresholds()) -> PauseDecision:
        ok = self.reliable and self.plausible(now_ms, th)  # else the reading is no evidence
        awaiting = None if self.stopped_at_ms is None else max(0.0, now_ms - self.stopped_at_ms)
        return decide_interruption(self.words if ok else "", self.interruption_p if ok else None,
                                   max(0.0, now_ms - self.paused_at_ms), self.caller_speaking, th,
                                   words_final=self.words_final, heard_words=len(self.words.split()),
                                   awaiting_final_ms=awaiting, complete_p=self.complete_p if ok else None,
                                   speech_ms=self.speech_ms(now_ms))


__all__ = ["BACKCHANNEL_MAX_WORDS", "Judge", "PauseAction", "PauseDecision", "PauseThresholds", "PausedBot",
           "word_count_p", "words_plausible"]
