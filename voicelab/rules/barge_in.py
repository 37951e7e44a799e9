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

from engines.turn_policy import PauseAction, PauseDecision, PauseThresholds, decide_interruption

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
    """One pause: what was heard since it began. Times are milliseconds on any one clock."""

    paused_at_ms: float
    words: str = ""
    interruption_p: float | None = None
    caller_speaking: bool = True  # a pause begins at the VAD's start of speech
    words_final: bool = False  # the words are the recogniser's final reading (the rule waits for one)

    def hear(self, words: str, judge: Judge, final: bool = True) -> None:
        """A (cumulative) transcript of the caller since the pause: interim (`final=False`) or final."""
        words = words.strip()
        self.words_final = final
        if words != self.words:
            self.words = words
            self.interruption_p = judge(words) if words else None

    def decide(self, now_ms: float, th: PauseThresholds = PauseThresholds()) -> PauseDecision:
        return decide_interruption(self.words, self.interruption_p, max(0.0, now_ms - self.paused_at_ms),
                                   self.caller_speaking, th, words_final=self.words_final)


__all__ = ["BACKCHANNEL_MAX_WORDS", "Judge", "PauseAction", "PauseDecision", "PauseThresholds", "PausedBot",
           "word_count_p"]
