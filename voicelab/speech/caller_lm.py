"""What the shop's callers say, as a word trigram model: it re-ranks Whisper's N best readings (`--stt-lm W`).

A deployed voice agent knows its business, and its recogniser may too: commercial ones take phrase hints. Here
the hints are a language model of caller turns drawn from the corpus generator (`engines.shop.corpus`, the same
generator that trains the tiny engines; its garbled `clarify` requests are left out, so garbling is not what it
learns to expect), never from the fixtures. Whisper's beam gives N readings with their log probabilities; the
reading kept maximises `whisper + W * lm` (shallow fusion on complete hypotheses).

Stupid backoff (Brants et al., 2007: a relative frequency of the longest seen context, times 0.4 per shorter
one) over the words as the recogniser writes them (`recognizer_text`); a word never seen gets add-one mass over
the vocabulary, so an unusual but clearly spoken word costs a few nats rather than ruling the reading out.
Plain Python, no torch or pipecat.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property

from engines.shop.corpus import generate
from voicelab.speech.text import recognizer_text

BACKOFF = 0.4  # Brants et al.'s factor per shorter context
# the weight chosen on clips the suite never plays (benchmarks/stt_lm_tune.py: 96 generated requests, four unused
# espeak-ng voices, four lines): mean WER 44.6 % greedy, 37.3 % for the beam's best, 33.3 % at 0.3 (0.2-0.5 within
# 0.1 point of it)
DEFAULT_LM_WEIGHT = 0.3
START, END = "<s>", "</s>"


@dataclass
class CallerLM:
    """Counts of a word trigram model; `logprob` scores one reading (natural log)."""

    unigrams: Counter[str] = field(default_factory=Counter)
    bigrams: Counter[tuple[str, str]] = field(default_factory=Counter)
    trigrams: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    contexts1: Counter[str] = field(default_factory=Counter)
    contexts2: Counter[tuple[str, str]] = field(default_factory=Counter)

    @classmethod
    def from_sentences(cls, sentences: Iterable[Sequence[str]]) -> CallerLM:
        lm = cls()
        for words in sentences:
            w = [START, START, *words, END]
            for i in range(2, len(w)):
                lm.unigrams[w[i]] += 1
                lm.bigrams[(w[i - 1], w[i])] += 1
                lm.trigrams[(w[i - 2], w[i - 1], w[i])] += 1
                lm.contexts1[w[i - 1]] += 1
                lm.contexts2[(w[i - 2], w[i - 1])] += 1
        return lm

    @classmethod
    def from_corpus(cls, n: int = 24000, seed: int = 0) -> CallerLM:
        """Every caller turn of `n` generated chats (earlier turns included), garbled requests left out."""
        sentences = [recognizer_text(m["content"]).split()
                     for ex in generate(n, seed) if ex.intent != "clarify"
                     for m in ex.messages if m["role"] == "user"]
        return cls.from_sentences(s for s in sentences if s)

    @cached_property
    def _unseen_denominator(self) -> int:
        """Add-one over the vocabulary plus the unseen word (counted once: `logprob` runs for every reading)."""
        return sum(self.unigrams.values()) + len(self.unigrams) + 1

    def logprob(self, words: Sequence[str]) -> float:
        """log P(words, then the end of the turn)."""
        w = [START, START, *words, END]
        out = 0.0
        for i in range(2, len(w)):
            tri, bi = (w[i - 2], w[i - 1], w[i]), (w[i - 1], w[i])
            if self.trigrams[tri]:
                p = self.trigrams[tri] / self.contexts2[tri[:2]]
            elif self.bigrams[bi]:
                p = BACKOFF * self.bigrams[bi] / self.contexts1[bi[0]]
            else:
                p = BACKOFF * BACKOFF * (self.unigrams[w[i]] + 1) / self._unseen_denominator
            out += math.log(p)
        return out


@cache
def corpus_lm(n: int = 24000, seed: int = 0) -> CallerLM:
    """`CallerLM.from_corpus(n, seed)`, built once a process and shared: nothing changes it after it is built
    (`logprob` only reads), and building it costs about a second of CPU, which every recogniser paid again."""
    return CallerLM.from_corpus(n, seed)
