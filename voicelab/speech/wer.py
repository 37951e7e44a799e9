"""Word error rate of a recogniser's words against a reference transcript.

Both sides go through the project's normaliser (`recognizer_text`: punctuation, case, spoken numbers
to digits; ordinals to digits), hesitations ("um", "uh") are dropped from both, and runs of digit
tokens are joined into one number, so that
"four seven one", "4 7 1" and "471" are the same one word and "3 30 pm" equals "3:30 PM". Errors are
counted on a minimum edit-distance word alignment (substitutions, deletions, insertions); the rate
divides their sum by the reference's word count (by 1 when the reference is empty, so an empty
reference with inserted words still counts as errors rather than dividing by zero).
"""

from __future__ import annotations

from dataclasses import dataclass

from voicelab.speech.text import ordinal_digits, recognizer_text


@dataclass(frozen=True)
class WordErrors:
    substitutions: int
    deletions: int
    insertions: int
    reference_words: int

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def rate(self) -> float:
        return self.errors / max(1, self.reference_words)


# Hesitations carry no words: recognisers drop them (Whisper writes no "um") and scoring tools treat them as
# optional, so neither side counts them. Backchannels ("mm hmm", "uh huh") are answers and stay.
FILLERS = frozenset({"um", "umm", "uh", "uhm", "er", "erm"})


def comparable_words(text: str) -> list[str]:
    """The words WER compares: normalised, hesitations dropped, each run of digits joined into one number."""
    out: list[str] = []
    words = ordinal_digits(recognizer_text(text)).split()
    for i, w in enumerate(words):
        if w in FILLERS and words[i + 1:i + 2] != ["huh"]:  # "uh huh" is a backchannel, not a hesitation
            continue
        if w.isdigit() and out and out[-1].isdigit():
            out[-1] += w
        else:
            out.append(w)
    return out


def word_errors(reference: str, hypothesis: str) -> WordErrors:
    """Substitutions, deletions and insertions of the cheapest alignment (ties: fewest substitutions)."""
    ref, hyp = comparable_words(reference), comparable_words(hypothesis)
    # prev[j] = (cost, subs, dels, ins) aligning ref[:i] with hyp[:j]; tuples compare cost first.
    prev = [(j, 0, 0, j) for j in range(len(hyp) + 1)]
    for i, r in enumerate(ref, 1):
        cur = [(i, 0, i, 0)]
        for j, h in enumerate(hyp, 1):
            c, s, d, n = prev[j - 1]
            diag = (c, s, d, n) if r == h else (c + 1, s + 1, d, n)
            c, s, d, n = prev[j]
            up = (c + 1, s, d + 1, n)
            c, s, d, n = cur[j - 1]
            left = (c + 1, s, d, n + 1)
            cur.append(min(diag, up, left))
        prev = cur
    _, subs, dels, ins = prev[-1]
    return WordErrors(substitutions=subs, deletions=dels, insertions=ins, reference_words=len(ref))


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / reference words, after normalisation (module doc)."""
    return word_errors(reference, hypothesis).rate
