"""Can the recogniser's words be judged at all? Whisper's own decode-failure test, on a transcript.

Plain Python. The turn-end rule (`voicelab.rules.turn_end`) and the barge-in rule (`voicelab.rules.barge_in`)
treat words that fail it as no evidence. The thresholds are openai-whisper's `transcribe()` defaults
(whisper/transcribe.py in github.com/openai/whisper), which faster-whisper keeps.
"""

from __future__ import annotations

from typing import Any

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
