"""The Whisper STT service's turn bookkeeping: which words of a re-read turn go out as new finals, and the
recogniser's confidence that goes with them."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pipecat.frames.frames import Frame, InterimTranscriptionFrame, TranscriptionFrame

from voicelab.pipeline.services.stt_whisper import (
    StreamedPassesSTT,
    SttConfidence,
    stt_confidence,
    unsent_words,
)
from voicelab.speech.whisper import Transcript, WindowScore


def test_words_after_the_sent_ones() -> None:
    assert unsent_words([], "hi there".split()) == ["hi", "there"]
    sent = "please cancel my appointment on".split()
    assert unsent_words(sent, "please cancel my appointment on wednesday my name is ben".split()) == \
        "wednesday my name is ben".split()


def test_a_reworded_beginning_neither_repeats_nor_drops_words() -> None:
    # the second pass reads the first stretch with one word more: counting off 4 words would resend "on"
    assert unsent_words("i want to cancel".split(), "i want to cancel it on friday".split()) == ["it", "on", "friday"]
    assert unsent_words("i'd like a tune".split(), "i would like a tune up on tuesday".split()) == \
        ["up", "on", "tuesday"]
    # a changed last word: the new text past the sent words' length goes out
    assert unsent_words("book a tune".split(), "book a tune up".split()) == ["up"]
    assert unsent_words("book a tomb".split(), "book a tune up".split()) == ["up"]


def test_nothing_new() -> None:
    assert unsent_words("thanks bye".split(), "thanks bye".split()) == []
    assert unsent_words("thanks bye now".split(), "thanks bye".split()) == []
    assert unsent_words("thanks".split(), "okay".split()) == []


@given(st.lists(st.sampled_from("a b c d e".split()), max_size=8),
       st.lists(st.sampled_from("a b c d e".split()), max_size=8))
def test_an_extended_transcript_sends_exactly_the_extension(sent: list[str], more: list[str]) -> None:
    assert unsent_words(sent, sent + more) == more


# ---- the recogniser's confidence rides on the transcript frames --------------------------------------------

def _transcript(text: str, *windows: WindowScore) -> Transcript:
    return Transcript(text=text, ms=0.0, audio_s=1.0, windows=windows)


def test_confidence_combines_the_windows() -> None:
    assert stt_confidence(_transcript("hi")) is None  # a recognizer without figures
    one = WindowScore(tokens=3, avg_logprob=-1.2, compression_ratio=0.6, no_speech_prob=0.4)
    assert stt_confidence(_transcript("and happy ball", one)) == SttConfidence(-1.2, 0.6, 0.4)
    long = WindowScore(tokens=39, avg_logprob=-0.2, compression_ratio=2.5, no_speech_prob=0.1)
    c = stt_confidence(_transcript("...", one, long))
    assert c is not None
    assert c.avg_logprob == pytest.approx((-1.2 * 4 - 0.2 * 40) / 44)  # token-weighted (tokens + end token)
    assert c.compression_ratio == 2.5 and c.no_speech_prob == 0.1  # the looping window; the speech window


class Scored:
    """A recognizer whose every pass reads "and happy ball" with tiny.en's doubt."""

    WINDOW = WindowScore(tokens=3, avg_logprob=-1.068, compression_ratio=0.667, no_speech_prob=0.384)
    name = "scored"

    def transcribe(self, audio: np.ndarray) -> Transcript:
        return _transcript("and happy ball", self.WINDOW)


async def test_the_confidence_reaches_the_final_and_interim_frames() -> None:
    svc = StreamedPassesSTT(recognizer=Scored(), interim=True)  # type: ignore[arg-type]
    pushed: list[Frame] = []

    async def push(frame: Frame, *_: object) -> None:
        pushed.append(frame)

    svc.push_frame = push  # type: ignore[method-assign]
    try:
        done: asyncio.Future[Transcript] = asyncio.get_running_loop().create_future()
        done.set_result(Scored().transcribe(np.zeros(1)))
        await svc._final(done)
        svc._in_utt = True
        svc.create_task = lambda coro, name=None: asyncio.ensure_future(coro)  # type: ignore[method-assign, assignment]
        svc._push_interim(Scored().transcribe(np.zeros(1)))
        await asyncio.sleep(0)
    finally:
        svc._stream.close()
    final = [f for f in pushed if isinstance(f, TranscriptionFrame)]
    interim = [f for f in pushed if isinstance(f, InterimTranscriptionFrame)]
    want = SttConfidence(-1.068, 0.667, 0.384)
    assert [(f.text, f.result) for f in final] == [("and happy ball", want)]
    assert [(f.text, f.result) for f in interim] == [("and happy ball", want)]
