"""Pause, decide, resume: the bookkeeping of a bot that paused its audio at the caller's voice.

Plain Python (no pipecat, no torch). The decision itself is `engines.turn_policy.decide_interruption`
(STOP / RESUME / WAIT from the words heard since the pause, P(interruption), the time since the pause and
whether the caller is still speaking). `PausedBot` keeps those inputs for one pause and asks the rule.

P(interruption) comes from a judge: the decision model (`engines.decision`, task "interruption") when its
weights are installed, else `word_count_p`, a documented rule on the recogniser's words:

- no words yet: None (unknown; the rule waits while the caller speaks, resumes once they stop);
- at most `BACKCHANNEL_MAX_WORDS` (2) words: P = 0.2, a backchannel or a noise. Measured on the bundled
  clips, streaming pocketsphinx turns "mm hmm" into "the" and "uh huh" into "i have": a backchannel comes
  out as one or two short words, whatever they are, so the words themselves carry little;
- 3 words or more: P = 0.8, an interruption (nobody backchannels in a sentence); with the rule's stop_p
  of 0.7 the bot stops for good as soon as the third word is recognised, which is `words:3`'s old barge-in
  rule, except that the bot has been silent since the VAD heard the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engines.turn_policy import (
    PauseAction,
    PauseDecision,
    PauseThresholds,
    decide_interruption,
    words_plausible,
)

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
        P(a whole utterance), asked of a final reading of at most `fragment_words` words; `avg_logprob`: the
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
                                   awaiting_final_ms=awaiting, complete_p=self.complete_p if ok else None)


__all__ = ["BACKCHANNEL_MAX_WORDS", "Judge", "PauseAction", "PauseDecision", "PauseThresholds", "PausedBot",
           "word_count_p", "words_plausible"]
