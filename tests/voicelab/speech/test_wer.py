"""Word error rate through the project's normaliser: known strings and alignment properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicelab.speech.text import recognizer_text
from voicelab.speech.wer import WordErrors, comparable_words, word_error_rate, word_errors


def test_identical_after_normalisation_is_zero() -> None:
    assert word_error_rate("hi what time do you open on saturday",
                           "Hi, what time do you open on Saturday?") == 0.0


@pytest.mark.parametrize(("reference", "hypothesis"), [
    ("can i book it for wednesday at 3 30 pm", "Can I book it for Wednesday at 3:30 p.m.?"),
    ("can you check my order 2 5 8 1 6", "Can you check my order 25816?"),
    ("okay can you check my order 4 7 1 0 3", "OK, can you check my order four seven one oh three"),
    ("go forward ten meters", "Go forward 10 meters."),
    ("for the twentieth time that evening", "For the 20th time that evening"),
    ("unless to be rather cold hearted", "Unless to be rather cold-hearted"),
    ("mm hmm", "Mm-hmm."),
    ("uh huh", "Uh-huh."),
    ("please move me to wednesday at 10 am", "Please move me to Wednesday at 10am."),
    ("um when do you close on friday", "When do you close on Friday?"),
    ("when do you close on friday", "Uh, when do you, um, close on Friday?"),
])
def test_digits_spelled_numbers_and_punctuation_compare_equal(reference: str, hypothesis: str) -> None:
    assert word_errors(reference, hypothesis) == word_errors(reference, reference)
    assert word_error_rate(reference, hypothesis) == 0.0


def test_a_number_counts_as_one_word() -> None:
    assert comparable_words("my order 4 7 1 0 3 please") == ["my", "order", "47103", "please"]
    # one wrong digit is one substituted number, not a shifted alignment
    e = word_errors("my order 4 7 1 0 3", "my order 4 7 1 0 8")
    assert e == WordErrors(substitutions=1, deletions=0, insertions=0, reference_words=3)


def test_known_error_counts() -> None:
    # pocketsphinx on the accented ARCTIC clip (audio_fixtures/REAL_CALLS.md)
    e = word_errors("will we ever forget it", "indiana forget that")
    assert (e.substitutions, e.deletions, e.insertions, e.reference_words) == (2, 2, 0, 5)
    assert word_error_rate("will we ever forget it", "indiana forget that") == pytest.approx(4 / 5)
    e = word_errors("for the twentieth time that evening the two men shook hands",
                    "for the twentieth time that evening of the two men shook hands")
    assert (e.substitutions, e.deletions, e.insertions) == (0, 0, 1)
    assert e.rate == pytest.approx(1 / 11)


def test_empty_sides() -> None:
    assert word_error_rate("", "") == 0.0
    assert word_errors("thanks bye", "") == WordErrors(0, 2, 0, 2)
    assert word_errors("", "thanks bye") == WordErrors(0, 0, 2, 0)
    assert word_error_rate("", "thanks bye") == 2.0


def test_recognizer_text_formats_like_the_callers() -> None:
    assert recognizer_text("Hi, can I book 3:30 p.m. on Friday?") == "hi can i book 3 30 pm on friday"
    assert recognizer_text("Lord, but I'm glad to see you again, Phil.") == "lord but i'm glad to see you again phil"
    assert recognizer_text("four seven one oh three") == "4 7 1 0 3"


_words = st.lists(st.sampled_from(["book", "a", "tune", "up", "on", "friday", "three", "thirty", "pm", "bye"]),
                  max_size=12).map(" ".join)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(_words, _words)
def test_alignment_properties(reference: str, hypothesis: str) -> None:
    e = word_errors(reference, hypothesis)
    n_ref, n_hyp = len(comparable_words(reference)), len(comparable_words(hypothesis))
    assert e.reference_words == n_ref
    # every alignment accounts for every word on both sides
    assert n_ref - e.deletions == n_hyp - e.insertions
    assert abs(n_ref - n_hyp) <= e.errors <= max(n_ref, n_hyp)
    # swapping the sides swaps deletions and insertions and keeps the edit distance
    back = word_errors(hypothesis, reference)
    assert back.errors == e.errors
    assert word_error_rate(reference, reference) == 0.0


_plain_words = st.lists(st.sampled_from(["book", "a", "tune", "up", "on", "friday", "pm", "bye"]),
                        max_size=12).map(" ".join)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(_plain_words, st.integers(min_value=0, max_value=11))
def test_dropping_one_word_is_one_error(reference: str, at: int) -> None:
    # words without numbers: dropping a word between two numbers would join them into one
    words = comparable_words(reference)
    if not words:
        return
    at %= len(words)
    e = word_errors(" ".join(words), " ".join(words[:at] + words[at + 1:]))
    assert e.errors == 1


def test_hesitations_are_not_words_but_backchannels_are() -> None:
    assert comparable_words("um my name is ben") == ["my", "name", "is", "ben"]
    assert comparable_words("uh huh") == ["uh", "huh"]
    assert word_errors("uh huh", "") == WordErrors(0, 2, 0, 2)
    assert recognizer_text("See you at 4pm, not 4 p.m.") == "see you at 4 pm not 4 pm"
