"""Heard words to the shop's reply templates (voicelab.call.readback.match_template): exact, then with fixed words
misheard for others, never with a slot misheard; contractions and spellings as a listener hears them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from voicelab.call.readback import LOOSE_LITERAL_SHARE, _spoken_patterns, match_template
from voicelab.speech.text import spoken_form


def test_a_fixed_word_misheard_for_another_still_names_the_reply() -> None:
    got = match_template("we are at 42 harbor lane in milburg next to the old train station")
    assert got is not None and got[0] == "address"
    got = match_template("on monday we are open for 9 am to 6 pm")  # "for" heard for "from"
    assert got is not None and got[0] == "hours_open" and "from 9 am to 6 pm" in got[1]


def test_contractions_and_spellings_are_the_same_words() -> None:
    assert spoken_form("Sorry, we're closed; it's cancelled.") == "sorry we are closed it is canceled"
    got = match_template("sorry we're closed on sunday we open again on monday at 9 am")
    assert got is not None and got[0] == "hours_closed"
    got = match_template("sorry we are closed on sunday we'd open again on monday at 9 am")  # a word for a word
    assert got is not None and got[0] == "hours_closed"
    got = match_template("okay ben your appointment on wednesday is canceled")
    assert got is not None and got[0] == "cancel"


def test_a_misheard_slot_or_a_fragment_is_not_that_answer() -> None:
    assert match_template("on friday we are open for my name to 8 pm") is None  # "9 am" misheard: no time slot
    assert match_template("we are at 42") is None  # cut short: most fixed words never heard
    got = match_template("no problem then your appointment is now on wednesday at 10 am")
    assert got is not None and "name=then" in got[1]  # the name as heard, scored wrong by the fixture


def _fixed(key: str) -> tuple[str, ...]:
    return next(t.literals for t in _spoken_patterns() if t.key == key)


# the templates without slots: every word of them is a fixed word
FIXED_ONLY = sorted(t.key for t in _spoken_patterns() if not t.exact.groupindex)


@given(st.sampled_from(FIXED_ONLY), st.data())
def test_a_reply_is_named_with_up_to_a_quarter_of_its_fixed_words_misheard_and_not_with_more(
        key: str, data: st.DataObject) -> None:
    words = _fixed(key)
    n = len(words)
    few = int(n * (1 - LOOSE_LITERAL_SHARE))  # at most this many misheard: still the reply
    changed = data.draw(st.sets(st.integers(0, n - 1), max_size=few))
    heard = " ".join("zzq" if i in changed else w for i, w in enumerate(words))
    got = match_template(heard)
    assert got is not None and got[0] == key, (heard, got)
    more = data.draw(st.sets(st.integers(0, n - 1), min_size=few + 1))
    heard = " ".join("zzq" if i in more else w for i, w in enumerate(words))
    got = match_template(heard)
    assert got is None or got[0] != key, (heard, got)
