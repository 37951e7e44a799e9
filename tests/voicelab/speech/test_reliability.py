"""The recogniser-reliability rule's two text tests: a decoder's repetition loop and more words than the speech holds.

Whisper's gzip test misses a short loop ("wait wait wait wait wait" compresses 1.6 : 1, under 2.4); words written
into silence pass its other tests when the decoder is sure of them. Both are judged by shape, not by a phrase list:
a caller who really says "thank you, bye" is heard."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from voicelab.speech.reliability import (
    REASONS,
    WHISPER_COMPRESSION_RATIO_THRESHOLD,
    repetition_loop,
    result_reliable,
    result_unreliable_reason,
    too_many_words,
    unreliable_reason,
    words_reliable,
)


def _gzip_ratio(text: str) -> float:
    b = text.encode()
    return len(b) / len(zlib.compress(b))


def test_a_short_loop_passes_gzip_but_not_the_repetition_test() -> None:
    loop = "wait wait wait wait wait"  # Whisper's reading of "wait wait make that wednesday"
    assert _gzip_ratio(loop) < WHISPER_COMPRESSION_RATIO_THRESHOLD
    assert words_reliable(-0.2, _gzip_ratio(loop), 0.1)  # Whisper's three tests alone keep it
    assert unreliable_reason(-0.2, _gzip_ratio(loop), 0.1, text=loop, speech_s=1.6) == "repetition"
    assert repetition_loop("Bye bye bye bye.") and repetition_loop("thank you thank you thank you")
    # people repeat a word two or three times
    for said in ("wait wait make that wednesday", "no no no", "bye bye", "yes yes i am here", "5 5 5 1 2 3 4"):
        assert not repetition_loop(said), said


def test_more_words_than_the_speech_holds() -> None:
    assert too_many_words("Thank you.", 0.05)  # words over no speech at all
    assert too_many_words("thanks for watching and see you next time", 0.6)
    assert not too_many_words("yes", 0.15) and not too_many_words("five one two oh eight", 1.8)
    assert not too_many_words("anything", None) and not too_many_words("", 0.0)


def test_a_caller_who_says_thank_you_bye_is_heard() -> None:
    assert words_reliable(-0.3, 0.9, 0.05, text="Thank you, bye.", speech_s=0.9)
    assert words_reliable(None, None, None, text="thank you bye", speech_s=0.8)  # pocketsphinx: no figures


def test_result_objects_and_reasons() -> None:
    @dataclass
    class Conf:
        avg_logprob: float = -0.2
        compression_ratio: float = 1.2
        no_speech_prob: float = 0.1
        speech_s: float | None = None

    assert result_reliable(Conf()) and result_reliable(None)  # unchanged without text: Whisper's tests only
    assert result_unreliable_reason(Conf(), text="wait wait wait wait") == "repetition"
    assert result_unreliable_reason(Conf(speech_s=0.2), text="thank you very much") == "words_per_second"
    assert result_unreliable_reason(Conf(), text="thank you very much", speech_s=0.2) == "words_per_second"
    assert result_unreliable_reason(Conf(avg_logprob=-1.3), text="hi") == "avg_logprob"
    assert set(REASONS) >= {"repetition", "words_per_second", "avg_logprob", "compression_ratio", "no_speech"}


def test_a_whisper_transcript_names_the_test_it_fails() -> None:
    from voicelab.speech.whisper import Transcript, WindowScore

    good = WindowScore(6, -0.3, 1.1, 0.05)
    t = Transcript("wait wait wait wait wait", 120.0, 1.6, raw="Wait, wait, wait, wait, wait.", windows=(good,))
    assert t.unreliable_reason(speech_s=1.6) == "repetition"
    said = Transcript("thank you bye", 120.0, 1.0, raw="Thank you, bye.", windows=(good,))
    assert said.unreliable_reason(speech_s=0.9) is None
    assert said.unreliable_reason(speech_s=0.05) == "words_per_second"
    unsure = Transcript("thank you bye", 1.0, 1.0, raw="Thank you, bye.", windows=(WindowScore(6, -1.4, 1.1, 0.7),))
    assert unsure.unreliable_reason() == "avg_logprob"
