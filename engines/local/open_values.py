"""Callers' own words carried past the tiny models' closed vocabulary: stand-in names.

A 4 M-parameter model trained on one shop's corpus copies the 40 names it was trained on exactly and any
other name approximately ("tviskoy" comes out "titsy"): copying an unseen string piece by piece is a
skill such a model learns slowly (engines/tiny/TRAINING.md). Task-oriented dialogue systems have long
solved this by delexicalisation (Henderson, Thomson and Young, "Word-based dialog state tracking with
recurrent neural networks", SIGDIAL 2014; Wen et al., "Semantically conditioned LSTM-based natural
language generation", EMNLP 2015): a value the caller brings is replaced by a placeholder before the
model reads it, and put back in what the model writes.

Here the placeholders are names the model already copies exactly (the shop's 40, each a single token
after a space and after "="), so no retraining is needed, and the substitution is undone per token in
the engine's snapshots: the token count, the gate's pins and the streaming are unchanged.

Which words are the caller's own values, on principle and without a list of names:
- a word the corpus never puts in a caller's mouth (its templates, fillers and tails: `caller_vocabulary`),
- that is either rare in English (Zipf frequency below `RARE_ZIPF` in the wordfreq package's English
  list: under about three uses per million words; English phrasing words sit above 4, names from other
  languages below 3) or written with a capital inside a sentence by a recogniser that writes case (Whisper
  writes "It's for Tom.").
A common English word the corpus never used ("afternoon", "instead") stays a word: taking it for a name
would book the appointment under it. A common name written in lower case ("this is tom") is not
recognised as one; the model then copies it as well as it can.
A hosted LLM reads the recogniser's own text and needs none of this (docs/decisions/input-normaliser.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from wordfreq import zipf_frequency

RARE_ZIPF = 3.5
FILE = "open_values.json"  # in a model folder: the words its corpus gives callers, the names it copies exactly
_WORD = re.compile(r"[A-Za-z][A-Za-z'\u00C0-\u024F-]*")
_SENTENCE_END = re.compile(r"[.?!]\s*$")


@dataclass(frozen=True)
class StandIns:
    """caller word (as the engine reads it) -> the known name standing in for it."""

    by_word: dict[str, str] = field(default_factory=dict)

    def replace(self, text: str) -> str:
        """Each caller word in `text` (a caller turn in the engine's form, or an earlier reply) as its
        stand-in: whole words only."""
        if not self.by_word:
            return text
        return re.sub(r"[a-z]+", lambda m: self.by_word.get(m.group(0), m.group(0)), text)


@dataclass(frozen=True)
class Vocabulary:
    """What one model knows: `known`, the words its corpus puts in callers' mouths (names excluded);
    `names`, the names it copies exactly, in the order they are taken as stand-ins."""

    known: frozenset[str]
    names: tuple[str, ...]

    def write(self, folder: Path) -> None:
        (folder / FILE).write_text(json.dumps({"names": list(self.names), "known_words": sorted(self.known)},
                                              indent=0) + "\n")


def read_vocabulary(folder: Path) -> Vocabulary | None:
    """The model folder's `open_values.json`, or None (a model without one gets no stand-ins)."""
    path = folder / FILE
    if not path.exists():
        return None
    try:
        d = json.loads(path.read_text())
        return Vocabulary(frozenset(d["known_words"]), tuple(d["names"]))
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not an open-values file ({e})") from None


def capitalised_inside(raw: str) -> set[str]:
    """Lower-cased words a recogniser wrote with a capital inside a sentence ("It's for Ritva." -> ritva).
    The first word of a sentence and "I" say nothing."""
    out: set[str] = set()
    for m in _WORD.finditer(raw):
        w = m.group(0)
        if not w[0].isupper() or w == "I" or w.startswith("I'"):
            continue
        before = raw[:m.start()]
        if not before.strip() or _SENTENCE_END.search(before):
            continue
        out.add(w.lower())
    return out


def is_open_value(word: str, known: frozenset[str], capitalised: set[str]) -> bool:
    """A word of the engine's form that the model cannot know and that reads as a name (module docstring)."""
    if not word.isalpha() or word in known:
        return False
    return word in capitalised or zipf_frequency(word, "en") < RARE_ZIPF


def stand_ins(turns: Sequence[tuple[str, str]], known: frozenset[str], names: Iterable[str]) -> StandIns:
    """Stand-ins for a chat's callers' own values.

    turns: (raw recogniser text, the same in the engine's form) for each caller turn; known: the words the
    model's corpus puts in callers' mouths (names excluded); names: the names the model copies exactly, in
    the order they are taken. A stand-in is never a name already said in the chat."""
    said = {w for _, text in turns for w in text.split()}
    free = [n for n in names if n not in said]
    copied = frozenset(names)  # a name the model copies exactly needs no stand-in
    by_word: dict[str, str] = {}
    for raw, text in turns:
        caps = capitalised_inside(raw)
        for w in text.split():
            if w not in by_word and w not in copied and free and is_open_value(w, known, caps):
                by_word[w] = free.pop(0)
    return StandIns(by_word)
