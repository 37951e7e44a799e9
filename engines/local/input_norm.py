"""Bring a recogniser transcript into the form the tiny models read.

pocketsphinx gives lower case words, Whisper gives "I'd like to book on Saturday, 555-1234." or
"Can you check my order 51208?". Both must look alike to a model trained on the corpus's form.
Two functions:

- `normalize`: the decision model's form (engines/decision): lower case, no punctuation, contractions
  expanded ("i would"), every digit its own word ("5 5 5 1 2 3 4", "10:30" -> "1 0 3 0").
- `engine_text`: the tiny text engines' form (engines/shop/corpus.py), applied by engines/local/engine.py
  to every caller turn: the same, except that a time keeps the corpus's clock form ("2:00 p.m." and
  "14:00" -> "2 pm", "1:30 PM" -> "1 30 pm", "two o'clock" -> "2 pm"), spoken digits become digits ("five
  one two oh eight" -> "5 1 2 0 8") and accents are dropped ("José" -> "jose").

Why here and not in the training data (docs/decisions/input-normaliser.md): case, punctuation, digit
spacing, clock forms and spoken digits are form, a deterministic rewrite that is right every time; a model
of 4 M parameters taught them would spend capacity on them and still miss a form nobody wrote into its
corpus. What the words mean (copying a name it never saw) is content and is learned. Punctuation is dropped
on purpose: a recogniser's full stop is a guess about completeness, not evidence. A hosted LLM reads the
recogniser's own text and needs none of this.
"""

from __future__ import annotations

import re
import unicodedata

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


_UNITS = {"zero": 0, "oh": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
          "eight": 8, "nine": 9}
_TEENS = {"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
          "seventeen": 17, "eighteen": 18, "nineteen": 19}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50}
_NUMBER_WORDS = _UNITS.keys() | _TEENS.keys() | _TENS.keys()
_COLON = "\ue000"  # a clock's colon while the punctuation is dropped (a private-use character: never in a caller's text)
_AMPM = re.compile(r"\b([ap])\s*m\b")  # "p m", "pm": "p.m.", "p. m.", "p:m" once the punctuation is gone
_CLOCK_WORD = "oclock"  # "o'clock", "o clock", "oclock" are rewritten to this first
_TIME_PREPOSITIONS = frozenset({"at", "around", "about", "by", "until", "till", "from", "to", "for"})


def _spoken_numbers(words: list[str]) -> list[str]:
    """Runs of number words as digits: "five one two oh eight" -> 5 1 2 0 8, "two thirty" -> 2 30.

    A lone number word stays a word ("this one", "for two") unless a clock word follows it ("two pm",
    "two oclock") or "past" comes before it ("half past two"); "oh" counts only inside a run of number
    words, and a leading "oh" only before two or more ("oh two pm" stays an "oh")."""
    out: list[str] = []
    i = 0
    while i < len(words):
        j = i
        while j < len(words) and words[j] in _NUMBER_WORDS:
            j += 1
        if j == i:
            out.append(words[i])
            i += 1
            continue
        run = words[i:j]
        if run[0] == "oh" and len(run) < 3:  # an exclamation before a number, or alone
            out.append("oh")
            i += 1
            continue
        nxt = words[j] if j < len(words) else ""
        prev = words[i - 1] if i else ""
        if len(run) >= 2 or nxt in ("am", "pm", _CLOCK_WORD) or prev == "past":
            k = 0
            while k < len(run):
                w = run[k]
                if w in _TENS and k + 1 < len(run) and _UNITS.get(run[k + 1], 0) > 0:  # "fifty one" -> 51
                    out.append(str(_TENS[w] + _UNITS[run[k + 1]]))
                    k += 2
                    continue
                out.append(str(_UNITS.get(w, _TEENS.get(w, _TENS.get(w)))))
                k += 1
        else:
            out.extend(run)
        i = j
    return out


def _bare_hour_ampm(h: int) -> tuple[int, str]:
    """A clock hour said without am or pm, read as the shop's day does: 8-11 am, 12-7 pm; 13-23 and 0 are
    a 24-hour clock. Only clock forms ("2:00", "two o'clock", "half past two") get this reading."""
    if h == 0:
        return 12, "am"
    if h >= 13:
        return h - 12, "pm"
    return h, ("am" if 8 <= h <= 11 else "pm")


def _clock(h: int, m: int, ampm: str | None) -> str:
    if ampm is None:
        h, ampm = _bare_hour_ampm(h)
    elif h > 12:  # "14:00 pm": the 24-hour figure wins
        h = h - 12
    return f"{h}|{ampm}" if m == 0 else f"{h}|{m:02d}|{ampm}"


def _hour(words: list[str], k: int) -> int | None:
    w = words[k] if k < len(words) else ""
    return int(w) if w.isdigit() and len(w) <= 2 and int(w) <= 23 else None


def _minutes(words: list[str], k: int) -> int | None:
    w = words[k] if k < len(words) else ""
    return int(w) if w.isdigit() and len(w) == 2 and int(w) < 60 else None


def _times(words: list[str]) -> list[str]:
    """Clock forms in the corpus's form; a time becomes one word "<h>|<mm>|<ampm>" so that the digit
    spacing after this leaves it whole."""
    out: list[str] = []
    i, n = 0, len(words)
    while i < n:
        if words[i] == "half" and i + 2 < n and words[i + 1] == "past" and (h := _hour(words, i + 2)) is not None:
            i, h, m, clock = i + 3, h, 30, True  # "half past two" (a clock form)
        # a time never starts inside a number: after a digit word, colons between them or not ("0:0:01")
        elif (h := _hour(words, i)) is not None and not _after_digit(out):
            j, m, clock = i + 1, 0, False
            if j < n and words[j] == ":" and (mm := _minutes(words, j + 1)) is not None:
                j, m, clock = j + 2, mm, True  # "2:30", "14:00"
            elif (mm := _minutes(words, j)) is not None and (
                    words[j + 1:j + 2] in (["am"], ["pm"], [_CLOCK_WORD])
                    or (mm == 0 and h > 0 and i and words[i - 1] in _TIME_PREPOSITIONS and not _digit(words, j + 1))):
                # "1 30 pm"; "at 2 00" (a "2:00" with its colon taken out: after a time's preposition only, so
                # that "12 00" in a number stays digits)
                j, m, clock = j + 1, mm, mm == 0
            if j < n and words[j] == _CLOCK_WORD:
                j, clock = j + 1, True
            if not (clock or words[j:j + 1] in (["am"], ["pm"])) or _digit(words, j + 1 if
                                                                          words[j:j + 1] in (["am"], ["pm"]) else j):
                out.append(words[i])
                i += 1
                continue
            i = j
        else:
            out.append(words[i])
            i += 1
            continue
        ampm = None
        if i < n and words[i] in ("am", "pm"):
            ampm, i = words[i], i + 1
        out.append(_clock(h, m, ampm))
    return out


def _after_digit(out: list[str]) -> bool:
    """The last word written, colons skipped, is a digit word."""
    last = next((w for w in reversed(out) if w != ":"), "")
    return last.isdigit()


def _digit(words: list[str], k: int) -> bool:
    return k < len(words) and words[k].isdigit()


def _clock_shaped(run: list[str]) -> bool:
    """One or two digit words shaped like a time or a part of one: "30", "9", "9 30" (its am not heard)."""
    if len(run) == 1:
        return len(run[0]) <= 2
    h, mm = run
    return len(run) == 2 and not h.startswith("0") and 1 <= int(h) <= 12 and len(mm) == 2 and int(mm) < 60


def _space_numbers(words: list[str]) -> list[str]:
    """A number (a run of digit words: "51208", "512 08", "5 1 2 0 8") one word per digit; a run shaped like
    a time or a part of one ("30", "9 30" whose am was lost) stays as written, as the corpus writes it."""
    out: list[str] = []
    i = 0
    while i < len(words):
        j = i
        while j < len(words) and words[j].isdigit():
            j += 1
        if j == i:
            out.append(words[i])
            i += 1
            continue
        run = words[i:j]
        out.extend(run if len(run) <= 2 and _clock_shaped(run) else [c for w in run for c in w])
        i = j
    return out


def engine_text(text: str) -> str:
    """A caller's words in the tiny engines' corpus form (see the module docstring)."""
    t = unicodedata.normalize("NFKD", text.translate(_APOSTROPHES))
    t = "".join(c for c in t if not unicodedata.combining(c)).lower()
    t = re.sub(r"\bo\s?'?\s?clock\b", f" {_CLOCK_WORD} ", t)
    t = re.sub(r"(?<=\d),(?=\d{3}\b)|(?<=\d)-(?=\d)", "", t)  # "51,208", "555-1234": one number
    # "2:30", "2.30" -> a clock's colon (a mark of its own until the words are split: any other colon is dropped
    # with the punctuation, so "00:am" reads as "00 am" now and not only on a second pass)
    t = re.sub(r"(?<=\d)[.:](?=\d{2}\b)", f" {_COLON} ", t)
    t = re.sub(r"(?<=\d)(?=[a-z])|(?<=[a-z])(?=\d)", " ", t)  # "10am", "a1"
    for short, full in _CONTRACTIONS:
        t = t.replace(short, full)
    t = re.sub(f"[^a-z0-9{_COLON} ]+", " ", t)
    # on the words alone, after the punctuation is gone: "p.m.", "a'm" and "a m" all read "am" in one pass (the
    # normaliser must be idempotent: its output is a caller turn too)
    t = _AMPM.sub(lambda m: f" {m.group(1)}m ", t)
    words = _times(_spoken_numbers([":" if w == _COLON else w for w in t.split()]))
    words = _space_numbers([w for w in words if w not in (":", _CLOCK_WORD)])
    return " ".join(p for w in words for p in w.split("|"))
