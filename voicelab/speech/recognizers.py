"""The whole-utterance recognisers by their `--stt` name, built one way for the pipeline and the benchmark."""

from __future__ import annotations

from voicelab.speech.caller_lm import CallerLM
from voicelab.speech.moonshine import MoonshineRecognizer
from voicelab.speech.whisper import RecognizerError, WhisperRecognizer


def make_recognizer(kind: str, cpu_threads: int = 2, beam_size: int = 1,
                    lm_weight: float = 0.0) -> WhisperRecognizer | MoonshineRecognizer:
    """Whisper tiny.en (`beam_size`, and with `lm_weight` > 0 its readings re-ranked by the callers' language model,
    voicelab.speech.caller_lm) or Moonshine base."""
    if kind == "moonshine":
        return MoonshineRecognizer(cpu_threads=cpu_threads)
    if kind == "whisper":
        return WhisperRecognizer(cpu_threads=cpu_threads, beam_size=beam_size,
                                 lm=CallerLM.from_corpus() if lm_weight > 0 else None, lm_weight=lm_weight)
    raise RecognizerError(f"recognizer: '{kind}' is not whisper or moonshine")
