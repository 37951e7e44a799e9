"""The comparison normaliser: recogniser output and reference text in one form (lower case, no
punctuation, numbers as digits), for word error rate, heard text and answer scoring.

The tiny engines' own input normaliser is another job and lives with them (`engines.local.input_norm`).

Whisper writes "Hi, what time do you open on Saturday?", "3:30 PM", "cold-hearted" and "OK";
pocketsphinx writes "three thirty p m". Both go through `spoken_numbers_to_digits`
(the project's inverse text normalisation, below) after the punctuation is taken apart here, so that either
recogniser gives "3 30 pm" and word comparisons see the same tokens.
"""

from __future__ import annotations

import re

UNITS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
         "nine": 9}
TEENS = {"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
         "seventeen": 17, "eighteen": 18, "nineteen": 19}
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50}


def _is_number(w: str) -> bool:
    return w in UNITS or w in TEENS or w in TENS or w.isdigit()


def spoken_numbers_to_digits(text: str) -> str:
    """'book two thirty p m on friday' -> 'book 2 30 pm on friday'; 'oh' counts as 0 beside numbers."""
    words = text.lower().split()
    # "p m" / "a m" as two letters
    merged: list[str] = []
    for w in words:
        w = w.replace(".", "")
        if w == "m" and merged and merged[-1] in ("a", "p"):
            merged[-1] += "m"
            continue
        merged.append(w)
    out: list[str] = []
    i = 0
    while i < len(merged):
        w = merged[i]
        if w == "oh" and ((out and out[-1].isdigit()) or (i + 1 < len(merged) and _is_number(merged[i + 1]))):
            out.append("0")
        elif w in TENS:
            if i + 1 < len(merged) and merged[i + 1] in UNITS and merged[i + 1] != "zero":
                out.append(str(TENS[w] + UNITS[merged[i + 1]]))
                i += 1
            else:
                out.append(str(TENS[w]))
        elif w in TEENS:
            out.append(str(TEENS[w]))
        elif w in UNITS:
            out.append(str(UNITS[w]))
        elif w == "o'clock":
            pass
        else:
            out.append(w)
        i += 1
    return " ".join(out)


# Spellings that differ only in form; mapped to the form the fixtures' transcripts use.
_SAME_WORD = {"ok": "okay", "o.k.": "okay", "mhm": "mm hmm", "mmhmm": "mm hmm", "uhhuh": "uh huh"}
_ORDINALS = {"first": "1st", "second": "2nd", "third": "3rd", "fourth": "4th", "fifth": "5th", "sixth": "6th",
             "seventh": "7th", "eighth": "8th", "ninth": "9th", "tenth": "10th", "eleventh": "11th",
             "twelfth": "12th", "thirteenth": "13th", "fourteenth": "14th", "fifteenth": "15th",
             "sixteenth": "16th", "seventeenth": "17th", "eighteenth": "18th", "nineteenth": "19th",
             "twentieth": "20th", "thirtieth": "30th"}
_AMPM = re.compile(r"\b([ap])\.\s?m\.?(?=\W|$)")
_ZERO_MINUTES = re.compile(r"(?<=\d):00(?=\s?[ap]\.?\s?m\b)")  # "2:00 PM" -> "2 pm", as "two p m" reads
_GLUED_AMPM = re.compile(r"(?<=\d)(?=[ap]m\b)")  # "10am" -> "10 am", as the callers write it
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_SPLIT = re.compile(r"[-:/]")
_DROP = re.compile(r"[^\w\s'%&]")  # apostrophes stay: "i'm", "o'clock"


def recognizer_text(raw: str) -> str:
    """'Hi, can I book 3:30 p.m. on Friday?' -> 'hi can i book 3 30 pm on friday'."""
    t = raw.lower()
    t = _ZERO_MINUTES.sub("", t)
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


# Two writings of the same sounds: a contraction and its full form, a British and an American spelling. A
# recogniser writes either; a listener hears no difference.
_SPOKEN_SAME = {
    "we're": "we are", "you're": "you are", "they're": "they are", "i'm": "i am", "it's": "it is",
    "that's": "that is", "there's": "there is", "what's": "what is", "here's": "here is", "let's": "let us",
    "we've": "we have", "i've": "i have", "you've": "you have", "we'll": "we will", "i'll": "i will",
    "you'll": "you will", "i'd": "i would", "we'd": "we would", "you'd": "you would", "can't": "cannot",
    "won't": "will not", "don't": "do not", "doesn't": "does not", "didn't": "did not", "isn't": "is not",
    "aren't": "are not", "wasn't": "was not", "couldn't": "could not", "wouldn't": "would not",
    "cancelled": "canceled", "cancelling": "canceling", "harbour": "harbor", "colour": "color",
    "centre": "center", "favourite": "favorite", "neighbour": "neighbor", "organise": "organize",
}


def spoken_form(text: str) -> str:
    """`recognizer_text` with contractions written out and British spellings as American, so that words heard
    and words expected compare as a listener hears them ("we're closed" says "we are closed"). For scoring what an
    agent said; word error rates keep `recognizer_text` (a recogniser is scored on what it wrote)."""
    return " ".join(_SPOKEN_SAME.get(w, w) for w in recognizer_text(text).split())


def ordinal_digits(text: str) -> str:
    """'the twentieth time' -> 'the 20th time' (recognisers write either)."""
    return " ".join(_ORDINALS.get(w, w) for w in text.split())
