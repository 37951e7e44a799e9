"""Words a caller adds that the corpus never uses (engines/shop/extra_words.py): the pool, the insertion and
the corpus that carries them."""

from __future__ import annotations

import random
import re

from hypothesis import given
from hypothesis import strategies as st

from engines.shop import corpus
from engines.shop import extra_words as EW
from engines.shop.corpus import corpus_words


def test_the_file_is_what_the_builder_writes() -> None:
    assert list(EW.read_pool()) == EW.build_pool(corpus_words(), EW.evaluation_words())


def test_the_pool_is_new_words_and_leaves_the_evaluation_sets_unseen() -> None:
    pool = set(EW.read_pool())
    assert len(pool) > 5000
    assert not pool & corpus_words()
    # the unseen-caller and out-of-domain sets still measure words the training never showed
    assert not pool & EW.evaluation_words()
    assert "speaking" in EW.evaluation_words() and "speaking" not in pool
    assert not pool & EW.MEANING and {"not", "tomorrow", "seven", "june"} <= EW.MEANING


@given(st.integers(0, 10_000), st.lists(st.sampled_from(["book", "3", "30", "pm", "on", "5", "1", "am", "anna"]),
                                       min_size=0, max_size=12))
def test_insertion_keeps_every_word_in_order_and_never_splits_a_number(seed: int, words: list[str]) -> None:
    pool = ("market", "village")
    out = EW.insert(" ".join(words), random.Random(seed), pool).split()
    assert [w for w in out if w not in pool] == words
    assert 1 <= len(out) - len(words) <= 6
    digitish = re.compile(r"^(\d+|am|pm)$")
    # the caller's words on either side of each run of added words were neighbours: never two parts of a
    # number or time ("3 30 pm")
    runs = re.finditer(r"(?:^| )((?:(?:market|village) ?)+)", " ".join(out))
    for m in runs:
        before = " ".join(out)[:m.start(1)].split()[-1:]
        after = " ".join(out)[m.end(1):].split()[:1]
        assert not (before and after and digitish.match(before[0]) and digitish.match(after[0])), out


def test_the_default_corpus_is_unchanged_and_the_share_touches_every_kind_alike() -> None:
    assert [e.to_json() for e in corpus.generate(300, 5)] == [e.to_json() for e in corpus.generate(300, 5, 0, 0, 0)]
    pool = set(EW.read_pool())
    chats = corpus.generate(3000, 5, extra_words=0.5)
    touched: dict[str, list[bool]] = {}
    for e in chats:
        kind = ("formula" if e.intent in EW.WHOLE_MESSAGE else "tool call" if e.reply.startswith("[")
                else e.intent if e.intent in ("clarify", "fallback") else "answer")
        touched.setdefault(kind, []).append(any(w in pool for w in e.messages[-1]["content"].split()))
    shares = {k: sum(v) / len(v) for k, v in touched.items()}
    # an added word says nothing about the reply: every kind of request gets them at about the same rate (half;
    # a little more where the recogniser-noise model's sound-alikes are pool words too), a social formula never
    assert shares.pop("formula") == 0.0
    assert set(shares) == {"tool call", "answer", "clarify", "fallback"}
    assert all(0.4 < s < 0.66 for s in shares.values()), shares
    # half the touched off-topic examples are unknown words only
    only = [e for e in chats if e.intent == "fallback" and all(w in pool for w in e.messages[-1]["content"].split())]
    assert 0.15 < len(only) / len(touched["fallback"]) < 0.35


def test_an_unknown_sentence_is_pool_words_only() -> None:
    r = random.Random(3)
    for _ in range(50):
        words = EW.unknown_sentence(r, ("market", "village")).split()
        assert 4 <= len(words) <= 9 and set(words) <= {"market", "village"}


def test_a_cue_lost_twin_follows_its_request_and_differs_by_a_lost_word() -> None:
    # without twins the corpus is the one the earlier weights saw
    assert ([e.to_json() for e in corpus.generate(300, 5, extra_words=0.4)]
            == [e.to_json() for e in corpus.generate(300, 5, extra_words=0.4, twins=0.0)])
    pool = set(EW.read_pool())
    chats = corpus.generate(2000, 7, extra_words=0.4, twins=1.0)
    assert len(chats) == 2000

    def same_call(a: corpus.Example, b: corpus.Example) -> bool:
        x, y = set(a.messages[-1]["content"].split()), set(b.messages[-1]["content"].split())
        return a.messages[:-1] == b.messages[:-1] and len(x & y) >= len(x | y) / 2 and bool(x & pool)

    pairs = [(a, b) for a, b in zip(chats, chats[1:], strict=False)
             if a.intent in corpus._CLARIFY_FROM and b.intent == "clarify" and same_call(a, b)]
    assert len(pairs) > 100
    kept = total = 0
    for a, b in pairs:
        assert a.reply != b.reply and b.reply == corpus.render("clarify")
        said, twin = a.messages[-1]["content"].split(), b.messages[-1]["content"].split()
        essential = corpus.damageable(a)
        # the request's essential words (cue, slot values) are not all in the twin as they were said
        assert [w for w in twin if w in essential] != [w for w in said if w in essential], (said, twin)
        added = [w for w in said if w in pool]
        kept, total = kept + sum(w in twin for w in added), total + len(added)
    # while the added words stay (the recogniser-noise model, which also damages the twin, drops a few)
    assert kept / total > 0.8, kept / total
