"""Stand-in names: callers' own values carried past the tiny models' closed vocabulary (engines/local/open_values.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from wordfreq import top_n_list, zipf_frequency

from engines.errors import CheckpointError
from engines.local import TINY_MODELS
from engines.local.engine import open_engine
from engines.local.input_norm import engine_text
from engines.local.open_values import (
    FILE,
    FUNCTION_ZIPF,
    RARE_ZIPF,
    StandIns,
    Vocabulary,
    capitalised_inside,
    learn_cues,
    read_vocabulary,
    stand_ins,
)
from engines.local.train import shop_vocabulary
from engines.shop import business as B
from engines.shop.answers import parse_expect, score_reply
from engines.shop.names import unseen_names

KNOWN = frozenset({"this", "is", "can", "you", "move", "my", "appointment", "to", "thursday", "at", "1", "30", "pm",
                   "it", "for", "book", "a", "tune", "up", "on", "friday", "please"})
NAMES = ("anna", "ben", "carla")


def _turn(raw: str) -> tuple[str, str]:
    return raw, engine_text(raw)


def test_a_rare_word_the_corpus_never_used_gets_a_stand_in() -> None:
    s = stand_ins([_turn("this is tviskoy can you move my appointment to thursday at 1 30 pm")], KNOWN, NAMES)
    assert s.by_word == {"tviskoy": "anna"}
    assert s.replace("this is tviskoy can you") == "this is anna can you"


def test_a_common_english_word_stays_a_word() -> None:
    # "afternoon" and "instead" are outside the corpus but common English: taking them for names would book under them
    s = stand_ins([_turn("good afternoon this is oddur can you move my appointment to friday instead")], KNOWN, NAMES)
    assert s.by_word == {"oddur": "anna"}


def test_a_capital_inside_a_sentence_marks_a_common_name() -> None:
    assert capitalised_inside("It's for Tom. Thanks, I said Anna") == {"tom", "anna"}
    assert capitalised_inside("Tom here. I'd like") == set()  # sentence starts and "I" say nothing
    s = stand_ins([_turn("Can you book a tune up on Friday? It's for Tom.")], KNOWN, NAMES)
    assert s.by_word == {"tom": "anna"}
    # in lower case a common name cannot be told from a word: no stand-in (the model copies it as it can)
    assert stand_ins([_turn("it is for tom please")], KNOWN, NAMES).by_word == {}


def test_a_name_already_said_is_never_a_stand_in_and_each_word_keeps_one() -> None:
    turns = [_turn("this is anna for zdolk"), _turn("zdolk and mrundaz please")]
    s = stand_ins(turns, KNOWN, NAMES)
    assert s.by_word == {"zdolk": "ben", "mrundaz": "carla"}
    # a name the model copies exactly keeps itself, capitalised or not
    assert stand_ins([_turn("It's for Carla, thanks")], KNOWN, NAMES).by_word == {}
    assert stand_ins(turns, KNOWN, ("anna",)).by_word == {}  # no free name: nothing replaced


@given(st.lists(st.sampled_from(sorted(KNOWN) + ["qzxv", "vlornop", "brrk"]), max_size=12))
def test_replacing_touches_only_the_callers_words(words: list[str]) -> None:
    text = " ".join(words)
    s = stand_ins([(text, text)], KNOWN, NAMES)
    out = s.replace(text).split()
    assert len(out) == len(words)
    for w, o in zip(words, out, strict=True):
        assert o == s.by_word.get(w, w)
    assert len(set(s.by_word.values())) == len(s.by_word)


def test_the_vocabulary_file_round_trips_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    v = Vocabulary(frozenset({"book", "please"}), ("anna", "ben"))
    v.write(tmp_path)
    assert read_vocabulary(tmp_path) == v
    assert read_vocabulary(tmp_path / "nowhere") is None
    (tmp_path / FILE).write_text(json.dumps({"names": ["anna"]}))
    with pytest.raises(ValueError, match=f"{FILE}: not an open-values file"):
        read_vocabulary(tmp_path)


def test_the_shop_vocabulary_is_its_corpus_words_without_names() -> None:
    v = shop_vocabulary()
    assert v.names == B.NAMES and not set(B.NAMES) & v.known
    assert {"book", "appointment", "friday", "please"} <= v.known and all(w.isalpha() for w in v.known)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["ar", "diffusion"])
def test_the_shipped_engines_book_under_a_name_they_never_saw(model: str) -> None:
    eng = open_engine(model)
    assert eng.vocabulary is not None and len(eng.vocabulary.names) == 40
    prompt = "Can I get a brake check on Friday at 2 PM? It's for Tviskoy."
    reply = eng.answer([{"role": "user", "content": prompt}])
    s = score_reply(reply, parse_expect({"intent": "book", "slots": {"name": "tviskoy", "day": "friday",
                                                                      "time": "2 pm"}}))
    assert s.correct, reply
    # every snapshot shows the caller's word, never the stand-in, and keeps one piece per token
    gen = eng.generate([{"role": "user", "content": prompt}])
    for snap in gen:
        assert "anna" not in snap.text() and len(snap.pieces) == len(snap.tokens)
    assert "tviskoy" in snap.text()


def test_an_earlier_reply_reads_with_the_same_stand_in() -> None:
    eng = open_engine("ar")
    chat = [{"role": "user", "content": "can i book a tune up on friday at 2 pm"},
            {"role": "assistant", "content": "sure, what name should i put it under?"},
            {"role": "user", "content": "zdolk"}]
    reply = eng.answer(chat)
    assert "zdolk" in reply and "anna" not in reply, reply


def test_a_broken_vocabulary_file_is_a_checkpoint_error(tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "ar"
    shutil.copytree(Path(open_engine("ar").ckpt.folder), folder)
    (folder / FILE).write_text("{")
    with pytest.raises(CheckpointError, match=FILE):
        open_engine(str(folder))


def test_no_stand_ins_without_a_vocabulary_file(tmp_path: Path) -> None:
    import shutil

    assert StandIns().replace("this is tviskoy") == "this is tviskoy"
    folder = tmp_path / "ar"
    shutil.copytree(Path(open_engine("ar").ckpt.folder), folder)
    (folder / FILE).unlink()
    eng = open_engine(str(folder))
    assert eng.vocabulary is None
    gen = eng.generate([{"role": "user", "content": "It's for Tviskoy."}])
    prompt = eng.ckpt.tokenizer.tok.decode(gen.prompt)
    assert "tviskoy" in prompt and "anna" not in prompt and gen.shown == {}


# --- a name in a name's place is a value whatever its frequency (NameCues) ---

SHIPPED = read_vocabulary(TINY_MODELS["ar"])
COMMON = ("tom", "daniel", "oliver", "clara", "emily", "sarah", "james", "liam", "chloe", "sophie", "ryan", "megan")
SLOTS = ("this is {n} can you move my appointment to thursday at 1 30 pm",
         "i need to cancel my friday booking my name is {n}",
         "{n} speaking please reschedule me to monday at 2 pm",
         "hi it's {n}, i have to cancel my appointment on friday",
         "ah {n} here could you book me a tune up on friday at 2 pm",
         "could you move my appointment to friday at 2 pm the booking is under {n}",
         "the name's {n}, can i get a tune up on friday at 2 pm",
         "can i book a tune up on friday at 2 pm it's for {n}",
         "sorry it's {n}, i'd like to move my booking to friday at 2 pm",
         "hey good morning {n} here could you book me a tune up on friday at 2 pm")


def _shipped(raw: str, asked: tuple[bool, ...] = ()) -> dict[str, str]:
    assert SHIPPED is not None
    return stand_ins([_turn(raw)], SHIPPED.known, SHIPPED.names, SHIPPED.cues, asked).by_word


def test_the_shipped_cues_are_learned_from_the_corpus() -> None:
    assert SHIPPED is not None and SHIPPED.cues == shop_vocabulary().cues
    c = SHIPPED.cues
    assert {("name", "is"), ("this", "is"), ("^", "it", "is"), ("is", "for")} <= c.before
    assert ("for",) not in c.before
    assert "here" in c.after and c.asks == ("what name should i put it under?",)


def test_learning_keeps_contexts_a_name_nearly_always_follows() -> None:
    chats = [[{"role": "user", "content": f"this is {n} i need a tune up for {d}"}]
             for n, d in zip(NAMES * 10, ("friday", "monday", "me") * 10, strict=True)]
    c = learn_cues(chats, NAMES, min_count=5)
    assert c.before == {("is",)} and c.after == {"i"} and c.asks == ()  # "for" is followed by a name in none
    assert c.slot("this is tom".split(), 2) and not c.slot("a tune up for tom".split(), 4)


@given(st.sampled_from(COMMON), st.sampled_from(SLOTS))
def test_a_common_name_in_a_name_slot_gets_a_stand_in(name: str, template: str) -> None:
    assert zipf_frequency(name, "en") >= RARE_ZIPF  # the rare-word rule alone leaves it a word
    assert _shipped(template.format(n=name)) == {name: "anna"}


@pytest.mark.parametrize("raw", ["this is about my bike, can you book a tune up on friday",
                                 "it's for a service on friday at 2 pm", "my name is not on the booking",
                                 "can i book a tune up on friday at 2 pm for the kids",  # "for" is no slot
                                 "sorry it's about my order", "hey good morning the parts here are late",
                                 "the parts here are late", "this is the shop on main street",
                                 "i'm calling about my order", "it is under the bench"])
def test_ordinary_words_after_the_cues_stay_words(raw: str) -> None:
    assert _shipped(raw) == {}


def test_what_the_rule_takes_wrongly_without_a_name_list() -> None:
    """Known wrong, kept visible: a word no corpus gives callers in a slot the corpus always fills with a name.
    Telling "it's for olivia" from "it's for maintenance" needs a list of names, which the rule does without."""
    assert _shipped("it's for maintenance") == {"maintenance": "anna"}
    assert _shipped("it is under warranty") == {"warranty": "anna"}


@given(st.sampled_from([w for w in top_n_list("en", 300) if w.isalpha()]), st.sampled_from(SLOTS))
def test_a_function_word_is_never_taken(word: str, template: str) -> None:
    assume(zipf_frequency(word, "en") >= FUNCTION_ZIPF)
    assert word not in _shipped(template.format(n=word))


def test_the_answer_to_the_name_question_is_a_name() -> None:
    assert SHIPPED is not None and SHIPPED.cues.answers_ask("sure, a tune up on friday at 2 pm. what name should "
                                                            "i put it under?")
    assert _shipped("Put it down for Mitchell, please.", (True,)) == {"mitchell": "anna"}
    assert _shipped("yeah tom thanks", (True,)) == {"tom": "anna"}
    assert _shipped("yeah tom thanks") == {}  # the same words, not after the question


@given(st.sampled_from([n for _, n in unseen_names()[::40]]), st.sampled_from(SLOTS + (
    "can i book a tune up on friday at 2 pm for {n}", "good afternoon {n} wants a tune up")))
def test_rare_names_are_taken_as_before(name: str, template: str) -> None:
    assert SHIPPED is not None
    turn = _turn(template.format(n=name))
    assert (stand_ins([turn], SHIPPED.known, SHIPPED.names, SHIPPED.cues).by_word
            == stand_ins([turn], SHIPPED.known, SHIPPED.names).by_word)


@pytest.mark.parametrize("model", ["ar", "diffusion"])
@pytest.mark.parametrize(("prompt", "want"), [
    ("this is tom can you move my appointment to thursday at 1 30 pm",
     {"intent": "reschedule", "slots": {"name": "tom", "day": "thursday", "time": "1 30 pm"}}),
    ("please cancel my appointment on friday my name is daniel",
     {"intent": "cancel", "slots": {"name": "daniel", "day": "friday"}}),
])
@pytest.mark.slow
def test_the_shipped_engines_answer_a_common_name_verbatim(model: str, prompt: str, want: dict) -> None:
    reply = open_engine(model).answer([{"role": "user", "content": prompt}])
    assert score_reply(reply, parse_expect(want)).correct, reply
    assert want["slots"]["name"] in reply and "anna" not in reply
