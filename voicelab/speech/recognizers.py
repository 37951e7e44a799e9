"""The whole-utterance recognisers by their `--stt` name, built one way for the pipeline and the benchmark."""

from __future__ import annotations

from voicelab.cpu_threads import cpu_threads as threads_from_env
from voicelab.speech import whisper_base
from voicelab.speech.caller_lm import corpus_lm
from voicelab.speech.moonshine import MoonshineRecognizer
from voicelab.speech.whisper import RecognizerError, WhisperRecognizer

KINDS = ("whisper", "whisper-base", "moonshine")


def make_recognizer(kind: str, cpu_threads: int | None = None, beam_size: int = 1,
                    lm_weight: float = 0.0) -> WhisperRecognizer | MoonshineRecognizer:
    """Whisper tiny.en (`whisper`) or base (`whisper-base`, voicelab.speech.whisper_base), each with `beam_size`
    and, with `lm_weight` > 0, its readings re-ranked by the callers' language model (voicelab.speech.caller_lm);
    or Moonshine base. `cpu_threads`: its thread pool (None: `VOICELAB_CPU_THREADS`, voicelab.cpu_threads)."""
    cpu_threads = threads_from_env() if cpu_threads is None else cpu_threads
    if kind == "moonshine":
        return MoonshineRecognizer(cpu_threads=cpu_threads)
    if kind in ("whisper", "whisper-base"):
        model_path, name = None, None
        if kind == "whisper-base":  # its model folder is assembled at the first use
            model_path, name = whisper_base.packaged_model_path(), whisper_base.NAME
        return WhisperRecognizer(model_path, cpu_threads=cpu_threads, beam_size=beam_size, name=name,
                                 lm=corpus_lm() if lm_weight > 0 else None, lm_weight=lm_weight)
    raise RecognizerError(f"recognizer: '{kind}' is not one of {', '.join(KINDS)}")
