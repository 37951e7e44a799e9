"""Recogniser output as the engines' callers write it: lower case, no punctuation, numbers as digits.

Whisper writes "Hi, what time do you open on Saturday?", "3:30 PM", "cold-hearted" and "OK";
pocketsphinx writes "three thirty p m". Both go through `voicelab.normalize.spoken_numbers_to_digits`
(the project's inverse text normalisation) after the punctuation is taken apart here, so that either
recogniser gives "3 30 pm" and word comparisons see the same tokens.
"""

from __future__ import annotations

import re

from voicelab.normalize import spoken_numbers_to_digits

# Spellings that differ only in form; mapped to the form the fixtures' transcripts use.
_SAME_WORD = {"ok": "okay", "o.k.": "okay", "mhm": "mm hmm", "mmhmm": "mm hmm", "uhhuh": "uh huh"}
_ORDINALS = {"first": "1st", "second": "2nd", "third": "3rd", "fourth": "4th", "fifth": "5th", "sixth": "6th",
             "seventh": "7th", "eighth": "8th", "ninth": "9th", "tenth": "10th", "eleventh": "11th",
             "twelfth": "12th", "thirteenth": "13th", "fourteenth": "14th", "fifteenth": "15th",
             "sixteenth": "16th", "seventeenth": "17th", "eighteenth": "18th", "nineteenth": "19th",
             "twentieth": "20th", "thirtieth": "30th"}
_AMPM = re.compile(r"\b([ap])\.\s?m\.?(?=\W|$)")
_GLUED_AMPM = re.compile(r"(?<=\d)(?=[ap]m\b)")  # "10am" -> "10 am", as the callers write it
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_SPLIT = re.compile(r"[-:/]")
_DROP = re.compile(r"[^\w\s'%&]")  # apostrophes stay: "i'm", "o'clock"


def recognizer_text(raw: str) -> str:
    """'Hi, can I book 3:30 p.m. on Friday?' -> 'hi can i book 3 30 pm on friday'."""
    t = raw.lower()
    t = _AMPM.sub(r"\1m", t)
    t = _GLUED_AMPM.sub(" ", t)
    t = _THOUSANDS.sub("", t)
    t = _SPLIT.sub(" ", t)
    t = t.replace("%", " percent ").replace("&", " and ")
    t = _DROP.sub(" ", t)
    words: list[str] = []
    for w in t.split():
        w = w.strip("'")
        if w:
            words.extend(_SAME_WORD.get(w, w).split())
    return spoken_numbers_to_digits(" ".join(words))


def ordinal_digits(text: str) -> str:
    """'the twentieth time' -> 'the 20th time' (recognisers write either)."""
    return " ".join(_ORDINALS.get(w, w) for w in text.split())
