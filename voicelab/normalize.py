"""Inverse text normalization of recognizer output: spoken numbers to digits.

pocketsphinx writes "two thirty pm" and "four seven one"; the engines' callers write digits
("2 30 pm", "4 7 1"), as a production recognizer's formatter would. Digits stay one token each so
a spelled-out order number keeps its spaces.
"""

from __future__ import annotations

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
