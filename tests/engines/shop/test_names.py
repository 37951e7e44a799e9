"""Open names in the training corpus: the default corpus is unchanged, the training corpus copies any name."""

from __future__ import annotations

import random

from engines.shop import business as B
from engines.shop import corpus
from engines.shop.asr_noise import SOUND_ALIKE, damage
from engines.shop.names import train_names


def test_the_default_corpus_keeps_the_shops_40_names() -> None:
    ex = corpus.generate(1500, 7)
    assert [e.to_json() for e in ex] == [e.to_json() for e in corpus.generate(1500, 7, open_names=0.0)]
    assert {e.slots["name"] for e in ex if "name" in e.slots} <= set(B.NAMES)


def test_the_training_corpus_copies_names_beyond_the_list() -> None:
    ex = corpus.generate(3000, 7, open_names=0.5)
    names = [e.slots["name"] for e in ex if "name" in e.slots]
    outside = [n for n in names if n not in B.NAMES]
    assert 0.35 < len(outside) / len(names) < 0.65 and set(outside) <= set(train_names())
    for e in ex:  # the name the reply carries is the one the caller said
        if "name" in e.slots:
            said = " ".join(m["content"] for m in e.messages if m["role"] == "user").split()
            assert e.slots["name"] in said and e.slots["name"] in e.reply


def test_a_misheard_name_is_dropped_never_a_sound_alike_when_names_are_open() -> None:
    text = "this is diana can you cancel my monday appointment"
    for seed in range(60):
        hurt = damage(text, random.Random(seed), ["diana"], plain=("diana",)).split()
        assert "diana" not in hurt and not {"die", "anna"} & set(hurt)
    assert any("die" in damage(text, random.Random(s), ["diana"]).split() for s in range(60))
    assert "diana" in SOUND_ALIKE  # the default keeps the sound-alike (the out-of-domain set's "die anna")
