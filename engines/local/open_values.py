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
- that is rare in English (Zipf frequency below `RARE_ZIPF` in the wordfreq package's English
  list: under about three uses per million words; English phrasing words sit above 4, names from other
  languages below 3) or written with a capital inside a sentence by a recogniser that writes case (Whisper
  writes "It's for Tom.").
- or that stands where the corpus puts a name, whatever its frequency (`NameCues`): "tom", "daniel", "clara"
  are common English words by Zipf, a lower-case recogniser writes them as words, and the shipped models met
  most of them only as added words (engines/shop/extra_words.py), so "this is tom ..." was asked again. A name
  slot is a context the corpus fills with a name almost every time it occurs (`learn_cues`, from the model's
  own corpus, kept in `open_values.json`): after "my name is", "this is", a turn-opening "it is", "it is under",
  "it is for", "under the name"; before "here" near the start of a turn (and, a telephone convention the corpus
  lacks, "speaking" or "calling"); any word of the answer to the corpus's "what name should i put it under?". A
  turn opens after its greetings ("sorry it's tom", "hey good morning tom here": `OPENERS`). A word
  in a slot still has to be outside the corpus's caller words and below `FUNCTION_ZIPF` ("this is about my
  bike", "it is for a service", "put it down for tom": "about", "for", "down" never become names). No list of
  names is involved: the slots come from where the corpus's templates put a name.
A common English word the corpus never used ("afternoon", "instead") stays a word outside a name slot: taking
it for a name would book the appointment under it. Inside one the rule can still be wrong ("it is under
warranty", "it's for maintenance": the word stands where the corpus always has a name; only a list of names tells
them from "it's for olivia"). "i'm tom" with a common name stays a miss: the corpus says "i am calling" about
as often as "i am NAME", so "i am" is no slot (a rare name after it is taken by the rule above); tests/engines/local/test_open_values.py pins the
guarded cases.
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
# a word this frequent is a phrasing word ("about", "down", "here", "will"), never taken for a name, even in a slot
FUNCTION_ZIPF = 5.5
# a name slot: a context the corpus fills with a name at least this often, seen at least MIN_CUE times
CUE_SHARE = 0.9
MIN_CUE = 10
# a shop question is a name question when the caller's next turn holds a name this often (the corpus's other
# answers to "what name should i put it under?" change the subject in words it knows)
# (measured on the corpus's clean chats: 0.74 after the name question, at most about 0.4 after any other shop turn
# heard 100 times or more), and is heard at least MIN_ASK times (a reply cut after "how" is no question)
ASK_SHARE = 0.6
MIN_ASK = 100
CUE_WORDS = 3  # the longest context before a name considered
# words after a name near a turn's start ("tom here"), within its first AFTER_CUE_POSITION words
AFTER_CUE_POSITION = 3
AFTER_CUE_BEFORE_ZIPF = 6.0  # ... and not right after a word as frequent as "the", "my", "all" ("the parts here")
# the telephone self-introductions the shop's corpus has no template for ("tom speaking", "tom calling ..."):
# the one part of the rule typed here and not learned from a corpus
PHONE_INTRODUCTIONS = frozenset({"speaking", "calling"})
START = "^"  # a turn's start in a context
# greetings and interjections a caller may open a turn with before introducing themselves ("hey morning, it's
# tom", "sorry it's karoliina"): a context that starts a turn also starts after them. English words, not names
OPENERS = frozenset({"hi", "hey", "hello", "morning", "good", "afternoon", "evening", "oh", "ah", "um", "uh", "er",
                     "yeah", "yes", "so", "right", "sorry", "well", "okay", "ok", "there"})
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
class NameCues:
    """Where a model's corpus puts a caller's name (`learn_cues`): `before`, the contexts (1-3 words, START for
    a turn's start) a name follows; `after`, the words a name comes before; `asks`, the shop's questions whose
    answer is a name."""

    before: frozenset[tuple[str, ...]] = frozenset()
    after: frozenset[str] = frozenset()
    asks: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"before": sorted(" ".join(c) for c in self.before), "after": sorted(self.after),
                "asks": list(self.asks)}

    @classmethod
    def from_json(cls, d: dict) -> NameCues:
        return cls(frozenset(tuple(c.split()) for c in d["before"]), frozenset(d["after"]), tuple(d["asks"]))

    def slot(self, words: Sequence[str], i: int) -> bool:
        """Whether words[i] (a caller turn in the engine's form) stands where the corpus puts a name."""
        opened = 0  # the greeting words the turn opens with
        while opened < i and words[opened] in OPENERS:
            opened += 1
        for ctx in ([START, *words[:i]], [START, *words[opened:i]]):
            if any(tuple(ctx[-len(c):]) == c for c in self.before if len(c) <= len(ctx)):
                return True
        nxt = words[i + 1] if i + 1 < len(words) else None
        # "ah tom here", "oh hi tom here", not "the parts here": no determiner-frequent word right before it
        return (i - opened < AFTER_CUE_POSITION and nxt is not None
                and (nxt in self.after or nxt in PHONE_INTRODUCTIONS)
                and (i == 0 or zipf_frequency(words[i - 1], "en") < AFTER_CUE_BEFORE_ZIPF))

    def answers_ask(self, previous: str | None) -> bool:
        """Whether a caller turn answers the shop's name question (`previous`: the shop's turn before it)."""
        return previous is not None and any(previous.strip().endswith(a) for a in self.asks)


def learn_cues(chats: Iterable[Sequence[dict[str, str]]], names: Iterable[str], share: float = CUE_SHARE,
               min_count: int = MIN_CUE, ask_share: float = ASK_SHARE, min_ask: int = MIN_ASK) -> NameCues:
    """The name slots of a corpus's chats (messages in the engine's form; `names`: the names it puts in callers'
    mouths). A context is a slot when a name follows it in at least `share` of its occurrences (and `min_count`
    times): "my name is", "this is", START "it is"; a context whose shorter end already is one is left out. A word
    is an after-cue when a name comes before it in `share` of its occurrences ("here"); a shop question is an ask
    when the caller's answer holds a name in `ask_share` of them."""
    nm = {n for n in names if zipf_frequency(n, "en") < FUNCTION_ZIPF}  # "will" is a verb as often as a name
    before_name: dict[tuple[str, ...], int] = {}
    before_all: dict[tuple[str, ...], int] = {}
    after_name: dict[str, int] = {}
    after_all: dict[str, int] = {}
    ask_name: dict[str, int] = {}
    ask_all: dict[str, int] = {}
    for chat in chats:
        previous: str | None = None
        for m in chat:
            if m.get("role") != "user":
                previous = m["content"]
                continue
            words = m["content"].split()
            if previous is not None:
                last = re.split(r"(?<=[.?!])\s+", previous.strip())[-1]
                ask_all[last] = ask_all.get(last, 0) + 1
                ask_name[last] = ask_name.get(last, 0) + any(w in nm for w in words)
            ctx = [START, *words]
            for i, w in enumerate(words):
                for k in range(1, CUE_WORDS + 1):
                    if k > i + 1:
                        break
                    c = tuple(ctx[i + 1 - k:i + 1])
                    before_all[c] = before_all.get(c, 0) + 1
                    before_name[c] = before_name.get(c, 0) + (w in nm)
                if i:
                    after_all[w] = after_all.get(w, 0) + 1
                    after_name[w] = after_name.get(w, 0) + (words[i - 1] in nm)

    def cues(hits: dict, total: dict, share: float = share, least: int = min_count) -> set:
        return {c for c, n in hits.items() if total[c] >= least and n >= min_count and n >= share * total[c]}

    before = cues(before_name, before_all)
    before = {c for c in before if not any(c[-k:] in before for k in range(1, len(c)))}
    return NameCues(frozenset(before), frozenset(cues(after_name, after_all)),
                    tuple(sorted(cues(ask_name, ask_all, ask_share, min_ask))))


@dataclass(frozen=True)
class Vocabulary:
    """What one model knows: `known`, the words its corpus puts in callers' mouths (names excluded);
    `names`, the names it copies exactly, in the order they are taken as stand-ins; `cues`, where its corpus
    puts a caller's name (an older file has none: only rare and capitalised words are then taken)."""

    known: frozenset[str]
    names: tuple[str, ...]
    cues: NameCues = NameCues()

    def write(self, folder: Path) -> None:
        (folder / FILE).write_text(json.dumps({"names": list(self.names), "known_words": sorted(self.known),
                                               "name_cues": self.cues.to_json()}, indent=0) + "\n")


def read_vocabulary(folder: Path) -> Vocabulary | None:
    """The model folder's `open_values.json`, or None (a model without one gets no stand-ins)."""
    path = folder / FILE
    if not path.exists():
        return None
    try:
        d = json.loads(path.read_text())
        cues = NameCues.from_json(d["name_cues"]) if "name_cues" in d else NameCues()
        return Vocabulary(frozenset(d["known_words"]), tuple(d["names"]), cues)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
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


def is_open_value(word: str, known: frozenset[str], capitalised: set[str], slot: bool = False) -> bool:
    """A word of the engine's form that the model cannot know and that reads as a name (module docstring);
    `slot`: it stands where the corpus puts a name."""
    if not word.isalpha() or word in known:
        return False
    if word in capitalised or zipf_frequency(word, "en") < RARE_ZIPF:
        return True
    return slot and zipf_frequency(word, "en") < FUNCTION_ZIPF


def stand_ins(turns: Sequence[tuple[str, str]], known: frozenset[str], names: Iterable[str],
              cues: NameCues = NameCues(), asked: Sequence[bool] = ()) -> StandIns:
    """Stand-ins for a chat's callers' own values.

    turns: (raw recogniser text, the same in the engine's form) for each caller turn; known: the words the
    model's corpus puts in callers' mouths (names excluded); names: the names the model copies exactly, in
    the order they are taken; cues: where the corpus puts a name; asked: for each turn, whether it answers the
    shop's name question (`NameCues.answers_ask`). A stand-in is never a name already said in the chat."""
    names = tuple(names)
    said = {w for _, text in turns for w in text.split()}
    free = [n for n in names if n not in said]
    copied = frozenset(names)  # a name the model copies exactly needs no stand-in
    by_word: dict[str, str] = {}
    for t, (raw, text) in enumerate(turns):
        caps = capitalised_inside(raw)
        words = text.split()
        answer = t < len(asked) and asked[t]
        for i, w in enumerate(words):
            if w not in by_word and w not in copied and free and is_open_value(
                    w, known, caps, answer or cues.slot(words, i)):
                by_word[w] = free.pop(0)
    return StandIns(by_word)
