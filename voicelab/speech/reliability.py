"""Can the recogniser's words be judged at all? Whisper's own decode-failure test, and two more, on a transcript.

Plain Python. The turn-end rule (`voicelab.rules.turn_end`) and the barge-in rule (`voicelab.rules.barge_in`)
treat words that fail it as no evidence. The first three thresholds are openai-whisper's `transcribe()` defaults
(whisper/transcribe.py in github.com/openai/whisper), which faster-whisper keeps. Two of Whisper's known
failure modes slip under them, so two tests of the text itself are added (`unreliable_reason`):

- a **repetition loop**: the decoder writes one word or phrase over and over ("wait wait wait wait wait" for
  "wait wait make that wednesday"). The gzip ratio of so short a text is 1.6, under Whisper's 2.4: that test
  needs a long loop to see one. Here: one word four times running, or a phrase of 2-5 words three times
  running. People repeat a word two or three times ("no no no", "bye bye"), not four;
- **more words than the speech can hold**: words written over silence or a noise burst ("thank you" on
  0.2 s of a cough). Here: words over `MAX_WORDS_PER_S` per second of the speech's duration, one word
  always allowed, and any words over less than `MIN_SPEECH_S` of speech. Fast conversational English runs
  at 4-5 words a second (250-300 a minute); 6 is above what a caller says. No lower bound: Whisper drops
  hesitations ("ummm... okay" is one word over two seconds), so few words for long speech is a real caller
  as often as noise.

Both are tests of shape, never a list of phrases: a caller who says "thank you, bye" is heard.
"""

from __future__ import annotations

import re
from typing import Any

# Whisper's own test of a failed decode: openai-whisper `transcribe()` defaults (whisper/transcribe.py), which
# faster-whisper keeps (`log_prob_threshold`, `compression_ratio_threshold`, `no_speech_threshold`).
WHISPER_LOGPROB_THRESHOLD = -1.0
WHISPER_COMPRESSION_RATIO_THRESHOLD = 2.4
WHISPER_NO_SPEECH_THRESHOLD = 0.6
# a looping decoder: one word this many times in a row, or a phrase of 2-5 words this many times in a row
LOOP_WORD_REPEATS = 4
LOOP_PHRASE_REPEATS = 3
LOOP_PHRASE_MAX_WORDS = 5
# words per second of speech beyond any caller (fast speech: 4-5), and the least speech that holds a word
MAX_WORDS_PER_S = 6.0
MIN_SPEECH_S = 0.1
# what `unreliable_reason` names (a run summary counts readings by these)
REASONS = ("avg_logprob", "compression_ratio", "no_speech", "repetition", "words_per_second")
_WORD = re.compile(r"[a-z0-9']+")


def words_of(text: str) -> list[str]:
    """The words of a transcript, lower case, punctuation dropped ("Wait, wait." -> wait wait)."""
    return _WORD.findall(text.lower())


def repetition_loop(text: str) -> bool:
    """Whether the text is a decoder's loop: a word 4 times running, or a 2-5 word phrase 3 times running."""
    words = words_of(text)
    for n in range(1, LOOP_PHRASE_MAX_WORDS + 1):
        need = LOOP_WORD_REPEATS if n == 1 else LOOP_PHRASE_REPEATS
        for start in range(len(words) - n * need + 1):
            if all(words[start + k * n:start + (k + 1) * n] == words[start:start + n] for k in range(1, need)):
                return True
    return False


def too_many_words(text: str, speech_s: float | None) -> bool:
    """Whether the text holds more words than `speech_s` seconds of speech can (None: no duration, passes)."""
    if speech_s is None:
        return False
    n = len(words_of(text))
    if n == 0:
        return False
    return speech_s < MIN_SPEECH_S or n > MAX_WORDS_PER_S * speech_s + 1


def unreliable_reason(avg_logprob: float | None, compression_ratio: float | None, no_speech_prob: float | None,
                      text: str | None = None, speech_s: float | None = None) -> str | None:
    """Which test the recogniser's words fail (one of `REASONS`), or None when they may be judged as text.

    Whisper's three, with openai-whisper's `transcribe()` defaults: `logprob_threshold=-1.0` (failed when the
    mean token log probability is < -1.0), `compression_ratio_threshold=2.4` (failed when the gzip compression
    ratio of the text is > 2.4: a looping decoder) and `no_speech_threshold=0.6` (silence when P(no speech) >
    0.6 and the log probability is not above -1.0; a confident decode is kept whatever P(no speech) says).
    Then, given the text, a shorter loop than gzip sees (`repetition_loop`) and, given the speech's duration
    in seconds, more words than it can hold (`too_many_words`). None means no figure (a recogniser that gives
    none: pocketsphinx, the fixture transcript): that test passes, and the silence test needs both figures.
    """
    if avg_logprob is not None and avg_logprob < WHISPER_LOGPROB_THRESHOLD:
        return "avg_logprob"
    if compression_ratio is not None and compression_ratio > WHISPER_COMPRESSION_RATIO_THRESHOLD:
        return "compression_ratio"
    if (no_speech_prob is not None and avg_logprob is not None
            and no_speech_prob > WHISPER_NO_SPEECH_THRESHOLD and avg_logprob <= WHISPER_LOGPROB_THRESHOLD):
        return "no_speech"
    if text is not None and repetition_loop(text):
        return "repetition"
    if text is not None and too_many_words(text, speech_s):
        return "words_per_second"
    return None


def words_reliable(avg_logprob: float | None, compression_ratio: float | None,
                   no_speech_prob: float | None, text: str | None = None, speech_s: float | None = None) -> bool:
    """Whether the recogniser's words may be judged as text: False where Whisper's `transcribe()` would call the
    decode a failure or the window silence, or (given the text and the speech's duration) where the text is a
    decoder's loop or holds more words than the speech can (`unreliable_reason`)."""
    return unreliable_reason(avg_logprob, compression_ratio, no_speech_prob, text, speech_s) is None


def confidence_figure(result: Any, name: str) -> float | None:
    """One of the recogniser's figures (`avg_logprob`, `compression_ratio`, `no_speech_prob`) from a transcript's
    result object, such as the `SttConfidence` a Whisper transcript frame carries (None: it gave none)."""
    v = getattr(result, name, None)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def result_unreliable_reason(result: Any, text: str | None = None, speech_s: float | None = None) -> str | None:
    """`unreliable_reason` on a transcript's result object; the speech's duration is `speech_s`, else the result's
    own `speech_s` figure where it carries one."""
    if speech_s is None:
        speech_s = confidence_figure(result, "speech_s")
    return unreliable_reason(confidence_figure(result, "avg_logprob"), confidence_figure(result, "compression_ratio"),
                             confidence_figure(result, "no_speech_prob"), text, speech_s)


def result_reliable(result: Any, text: str | None = None, speech_s: float | None = None) -> bool:
    """`words_reliable` on a transcript's result object (True when it carries no figures and no text is given)."""
    return result_unreliable_reason(result, text, speech_s) is None
