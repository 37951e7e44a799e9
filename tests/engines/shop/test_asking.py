"""The corpus's `asking` factor: more turns answered by asking again or declining, the rest unchanged."""

from __future__ import annotations

from collections import Counter

from engines.shop import corpus


def _shares(ex: list[corpus.Example]) -> dict[str, float]:
    c = Counter(e.intent for e in ex)
    return {k: v / len(ex) for k, v in c.items()}


def test_the_default_factor_keeps_the_corpus_byte_identical() -> None:
    a = corpus.generate(1500, 7, tails=0.25)
    b = corpus.generate(1500, 7, tails=0.25, asking=corpus.TRAIN_ASKING)
    assert corpus.TRAIN_ASKING == 1.0
    assert [e.to_json() for e in a] == [e.to_json() for e in b]


def test_a_larger_factor_draws_more_asking_turns_and_keeps_their_kinds() -> None:
    base = _shares(corpus.generate(4000, 3, tails=0.25))
    more = _shares(corpus.generate(4000, 3, tails=0.25, asking=2.0))
    asking = sum(base.get(k, 0.0) for k in corpus.ASKING)
    asking_more = sum(more.get(k, 0.0) for k in corpus.ASKING)
    # clarify and fallback weigh 15 of 50 in the shop's weights: doubled, 30 of 65 (twins add clarify turns)
    assert asking_more > asking + 0.1
    assert set(more) == set(base)
    # an answered kind keeps its weight against the other answered kinds
    assert abs(more["book"] / more["hours"] - base["book"] / base["hours"]) < 0.35
