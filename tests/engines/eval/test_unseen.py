"""The unseen-caller set is disjoint from every training source, and the training names are what they claim.

Names: the set's come from faker locales no training name comes from and from a closed-syllable generator the
training generator cannot write; none is a training name (but the common-name class: common English first names,
never a name of the shipped weights' corpus, some of them in the open-names corpus). Phrasings and fillers: no unseen prompt's template
is a training utterance's, no filler a corpus filler or opener."""

from __future__ import annotations

import json
import random
import re

import pytest

from engines.eval import unseen
from engines.eval.evaluate import load_prompts, unseen_set
from engines.local.input_norm import engine_text
from engines.shop import business as B
from engines.shop import corpus
from engines.shop import phrasing as PH
from engines.shop.names import (
    TRAIN_LOCALES,
    UNSEEN_LOCALES,
    made_up_cluster,
    made_up_open,
    open_syllable_shape,
    train_names,
    unseen_names,
)


@pytest.fixture(scope="module")
def training_corpus() -> list[corpus.Example]:
    # the open-names corpus (a superset of the shipped weights' names): neither may hold an unseen name
    return corpus.generate(corpus.TRAIN_N, corpus.TRAIN_SEED, 0.5, 0.25)


def test_the_file_is_what_the_builder_writes() -> None:
    rows = [json.loads(x) for x in unseen.FILE.read_text().splitlines()]
    assert rows == unseen.build()
    prompts = unseen_set()
    assert len(prompts) == sum(unseen.COUNTS.values()) + sum(unseen.COMMON_COUNTS.values()) and all(p.tags for p in prompts)
    assert {p.expect.intent for p in prompts} == set(unseen.COUNTS) - {"book_name_followup"} | {"book"}


def test_names_are_disjoint_from_every_training_source(training_corpus: list[corpus.Example]) -> None:
    assert not set(TRAIN_LOCALES) & set(UNSEEN_LOCALES)
    train = set(train_names()) | set(B.NAMES) | {e.slots["name"] for e in training_corpus if "name" in e.slots}
    names = {n for _, n in unseen_names()}
    assert len(names) > 1000 and not names & train
    made = [n for s, n in unseen_names() if s == "made_up"]
    assert made and not any(open_syllable_shape(n) for n in made)  # the training generator cannot write them
    r = random.Random(0)
    assert all(open_syllable_shape(made_up_open(r)) for _ in range(500))
    assert not any(open_syllable_shape(made_up_cluster(r)) for _ in range(500))
    used = {p["expect"]["slots"]["name"] for p in unseen.build()
            if "name" in p["expect"].get("slots", {}) and "name:common" not in p["tags"]}
    assert used <= names and len(used) > 150


def test_the_common_name_class_is_common_english_names_after_the_rest() -> None:
    from wordfreq import zipf_frequency

    from engines.local.open_values import RARE_ZIPF
    from engines.shop.corpus import corpus_words

    rows = unseen.build()
    common = [p for p in rows if "name:common" in p["tags"]]
    assert len(common) == sum(unseen.COMMON_COUNTS.values()) and rows[-len(common):] == common
    assert len(rows) - len(common) == sum(unseen.COUNTS.values())  # the rows before the class are unchanged
    used = {p["expect"]["slots"]["name"] for p in common}
    assert used <= set(unseen.COMMON_NAMES) and len(used) > 25
    # common enough that the rare-word rule misses them, none a shop name or a word the corpus gives callers
    assert all(zipf_frequency(n, "en") >= RARE_ZIPF for n in unseen.COMMON_NAMES)
    assert not set(unseen.COMMON_NAMES) & (set(B.NAMES) | corpus_words())
    assert {p["expect"]["intent"] for p in common} == set(unseen.COMMON_COUNTS)


def test_training_names_are_plain_and_not_corpus_words() -> None:
    names = train_names()
    assert len(names) > 10000 and all(re.fullmatch(r"[a-z]{2,12}", n) for n in names)
    assert not set(names) & (set(B.DAYS) | {"am", "pm", "cancel", "order", "book", "move", "the", "is"})


def _skeleton(text: str, values: list[str]) -> str:
    t = f" {text} "
    for v in sorted(values, key=len, reverse=True):
        t = t.replace(f" {v} ", " X ")
    return " ".join(t.split())


def test_phrasings_and_fillers_are_not_the_corpus(training_corpus: list[corpus.Example]) -> None:
    fillers = {f.strip().lower() for f in ("hi ", "hello ", "um ", "yeah hi ", "okay ", "hey ")}
    fillers |= {f.strip() for f in PH._OPEN + corpus._FOLLOW_UP + corpus._CLOSING}
    mine = {engine_text(f) for f in unseen.FILLERS if f}
    assert not mine & fillers
    said = set()
    for e in training_corpus:
        text = e.messages[-1]["content"]
        vals = [v for k, v in e.slots.items() if k != "number"] + [" ".join(e.slots.get("number", ""))]
        vals += [s for s in B.SERVICES if f" {s} " in f" {text} "]
        said.add(_skeleton(text, [v for v in vals if v]))
    # every unseen template, in the corpus form, with its slots as placeholders
    templates = [t for ts in unseen.COMMON_TEMPLATES.values() for t in ts] + list(unseen.COMMON_FOLLOWUPS)
    templates += [t for ts in unseen.TEMPLATES.values() for t in ts] + list(unseen.FOLLOWUPS)
    for t in templates:
        sk = engine_text(t.format(N="X", D="X", T="X", S="X", O="X", P="X"))
        assert not [s for s in said if s == sk or s.endswith(" " + sk)], t


def test_every_expected_value_is_in_the_callers_words() -> None:
    for p in unseen_set():
        words = " " + " ".join(engine_text(m["content"]) for m in p.messages if m["role"] == "user") + " "
        for k, v in p.expect.slots.items():
            assert f" {' '.join(v) if k == 'number' else v} " in words, (p.messages, k, v)


def test_prompt_files_take_history_and_tags(tmp_path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"prompt": "Bob.", "history": [{"role": "user", "content": "a tune up friday 2 pm"},
                                                           {"role": "assistant", "content": "what name?"}],
                             "tags": ["name:x"], "expect": {"intent": "book_name_followup",
                                                            "slots": {"name": "bob"}}}) + "\n"
                 + json.dumps({"prompt": "x", "expect": "fallback", "history": [{"role": "bot"}]}) + "\n")
    with pytest.raises(ValueError, match=r"p.jsonl:2: .*history"):
        load_prompts(f)
    f.write_text(f.read_text().splitlines()[0] + "\n")
    (p,) = load_prompts(f)
    assert len(p.messages) == 3 and p.tags == ("name:x",) and p.expect.intent == "book"
