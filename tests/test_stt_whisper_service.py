"""The Whisper STT service's turn bookkeeping: which words of a re-read turn go out as new finals."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from voicelab.pipeline.stt_whisper import unsent_words


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
