"""Bring a recogniser transcript into the form the tiny models read.

pocketsphinx gives lower case words, Whisper gives "I'd like to book on Saturday, 555-1234."
Both must look alike to a model trained on the corpus's form: lower case, no punctuation,
contractions expanded ("i would"), every digit its own word ("5 5 5 1 2 3 4"). Punctuation is
dropped on purpose: a recogniser's full stop is a guess about completeness, not evidence.
"""

from __future__ import annotations

import re

# longest first, so "can't" is not read as "can" + "'t"
_CONTRACTIONS = (
    ("can't", "cannot"), ("won't", "will not"), ("n't", " not"), ("i'm", "i am"), ("'re", " are"),
    ("'ll", " will"), ("'ve", " have"), ("'d", " would"), ("let's", "let us"), ("'s", " is"),
)
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'"})


def normalize(text: str) -> str:
    """Lower case, contractions expanded, punctuation dropped, digits spaced out, single spaces."""
    t = text.translate(_APOSTROPHES).lower()
    for short, full in _CONTRACTIONS:
        t = t.replace(short, full)
    t = re.sub(r"(\d)", r" \1 ", t)  # "555-1234" and "10:30" -> one word per digit
    t = re.sub(r"[^a-z0-9 ]+", " ", t)
    return " ".join(t.split())
