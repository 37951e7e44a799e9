"""The decision model (engines/decision/model.py), its corpus, and the turn / pause policies."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.decision import corpus as dc
from engines.errors import CheckpointError
from engines.local.input_norm import normalize
from voicelab.rules.barge_in import PauseAction, PauseThresholds, decide_interruption
from voicelab.rules.turn_end import (
    TurnAction,
    TurnThresholds,
    decide_turn,
    required_silence_ms,
    text_p_complete,
)

P = st.one_of(st.none(), st.floats(0.0, 1.0))
MS = st.floats(0.0, 10_000.0)


# --- transcript normalisation -----------------------------------------------------------------

def test_normalize_brings_whisper_output_to_the_corpus_form() -> None:
    assert normalize("I'd like to book on Saturday, 555-1234.") == "i would like to book on saturday 5 5 5 1 2 3 4"
    assert normalize("Can't   make it at 10:30?") == "cannot make it at 1 0 3 0"
    assert normalize("  ") == ""


# --- corpus -----------------------------------------------------------------------------------

def test_corpus_is_reproducible_and_balanced() -> None:
    a = dc.generate(400, seed=5)
    assert a == dc.generate(400, seed=5)
    assert a != dc.generate(400, seed=6)
    for task in dc.TASKS:
        labels = [u.answer for u in a if u.task == task]
        assert 0.35 < sum(labels) / len(labels) < 0.65


def test_cut_offs_end_on_a_word_a_sentence_cannot_end_on() -> None:
    for u in dc.generate(3000, seed=2):
        if u.task == "turn_complete" and u.kind.startswith("cut_") and u.kind != "cut_number":
            assert u.text.split()[-1] in dc.CUT_WORDS, u
        if u.kind == "cut_number":
            assert u.text.split()[-1] in {*"0123456789", *dc._NUM_WORDS, "oh"}, u


def test_no_text_carries_both_labels() -> None:
    seen: dict[tuple[str, str], bool] = {}
    for u in dc.generate(6000, seed=3):
        assert seen.setdefault((u.task, u.text), u.answer) == u.answer, u


def test_heldout_draws_templates_training_never_sees() -> None:
    train = {u.text for u in dc.generate(4000, seed=0)}
    novel = [u for u in dc.generate(2000, seed=1001, split="heldout") if u.novel]
    assert novel and sum(u.text not in train for u in novel) / len(novel) > 0.5
    assert not any(u.novel for u in dc.generate(2000, seed=0))


def test_prefaces_are_incomplete_and_requests_after_them_complete() -> None:
    utts = [u for u in dc.generate(6000, seed=4) if u.task == "turn_complete"]
    prefaces = [u for u in utts if u.kind == "preface"]
    after = [u for u in utts if u.kind == "preface_request"]
    assert prefaces and after
    assert not any(u.answer for u in prefaces) and all(u.answer for u in after)
    # the held-out split's own openers and vocatives never reach the training split
    held_only = [" " + w + " " for w in dc.PREFACES[1] + dc.VOCATIVES[1]]
    assert not any(w in f" {u.text} " for u in utts for w in held_only)
    novel = [u for u in dc.generate(4000, seed=1001, split="heldout") if u.kind == "preface" and u.novel]
    assert novel and any(w in f" {u.text} " for u in novel for w in held_only)


def test_half_numbers_never_stop_at_a_whole_order_number() -> None:
    for u in dc.generate(4000, seed=6):
        if u.kind == "cut_number":
            digits = [w for w in u.text.split() if w.isdigit() or w in dc._NUM_WORDS or w == "oh"]
            assert 0 < len(digits) != 5 and len(digits) < 7, u


def test_noise_keeps_the_last_word() -> None:
    r = random.Random(0)
    for _ in range(200):
        assert dc.add_noise(r, "can you check my order 1 2 3 4 5 please").split()[-1] == "please"


def test_bad_split_or_task_is_one_line_error() -> None:
    with pytest.raises(ValueError, match="split 'test'"):
        dc.generate(1, 0, split="test")
    with pytest.raises(ValueError, match="task 'weather'"):
        dc.generate(1, 0, tasks=("weather",))


# --- the shipped model ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dm():
    from engines.decision.model import load_decision_model

    return load_decision_model()


@pytest.mark.parametrize(("task", "text", "expected"), [
    ("turn_complete", "what time do you open on saturday", True),
    ("turn_complete", "What time do you open on Saturday?", True),
    ("turn_complete", "i would like to book a", False),
    ("turn_complete", "thank you goodbye", True),
    ("turn_complete", "my phone number is 5 5 5", False),
    ("turn_complete", "um so i wanted to", False),
    ("turn_complete", "and so my friends", False),  # a preface: nothing asked yet
    ("turn_complete", "so um what time do you open on friday", True),
    ("interruption", "mm hmm", False),
    ("interruption", "uh huh", False),
    ("interruption", "no wait i meant sunday", True),
    ("interruption", "", False),
])
@pytest.mark.slow
def test_model_answers_fixed_utterances(dm, task: str, text: str, expected: bool) -> None:
    d = dm.ask(task, text)
    assert d.answer is expected, (task, text, d)
    assert 0.5 <= d.confidence <= 1.0 and d.ms > 0


def test_model_reads_the_bot_line_as_context(dm) -> None:
    d = dm.ask("turn_complete", "anna", context="sure, a tune up on friday. what name should i put it under?")
    assert d.answer is True


def test_shipped_eval_covers_both_tasks() -> None:
    from engines.decision.model import SHOP_FOLDER

    ev = json.loads((SHOP_FOLDER / "eval.json").read_text())
    assert set(ev["tasks"]) == set(dc.TASKS)
    assert all(f["p_yes"] >= 0.5 if f["expected"] else f["p_yes"] < 0.5 for f in ev["fixed"])
    assert ev["latency_ms"]["n"] > 0


def test_unknown_task_is_refused(dm) -> None:
    with pytest.raises(ValueError, match="decision task 'weather'"):
        dm.ask("weather", "is it sunny")


def test_a_folder_that_is_not_a_decision_model_is_refused(tmp_path: Path) -> None:
    from engines.decision.model import SHOP_FOLDER, load_decision_model

    folder = tmp_path / "d"
    shutil.copytree(SHOP_FOLDER, folder)
    cfg = json.loads((folder / "config.json").read_text())
    del cfg["voicelab"]
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match="config.json: no 'voicelab.decision' section"):
        load_decision_model(folder)
    with pytest.raises(CheckpointError, match="not found"):
        load_decision_model(tmp_path / "missing")


@pytest.mark.slow
def test_training_entry_point_writes_a_loadable_model(tmp_path: Path) -> None:
    from engines.decision.model import load_decision_model
    from engines.decision.train import main

    main(["--out", str(tmp_path), "--steps", "20", "--n-train", "600", "--n-heldout", "100", "--latency-n", "20",
          "--d-model", "64", "--n-layers", "1", "--mlp-hidden-size", "128", "--vocab-size", "400"])
    ev = json.loads((tmp_path / "eval.json").read_text())
    assert ev["n"] == 100 and ev["latency_ms"]["n"] == 20
    assert json.loads((tmp_path / "train_log.json").read_text())["steps_done"] == 20
    assert 0.5 <= load_decision_model(tmp_path).ask("interruption", "mm hmm").confidence <= 1.0
    # one task, with misheard endings: the eval says how such endings are judged
    one = tmp_path / "turn"
    main(["--out", str(one), "--steps", "20", "--n-train", "600", "--n-heldout", "100", "--latency-n", "20",
          "--d-model", "64", "--n-layers", "1", "--mlp-hidden-size", "128", "--vocab-size", "400",
          "--tasks", "turn_complete", "--last-word-slip", "0.2", "--broad", "1"])
    ev = json.loads((one / "eval.json").read_text())
    assert set(ev["tasks"]) == {"turn_complete"} and ev["n_misheard_endings"] > 0
    # the broad corpus's kinds are held out too, and the hand-written probe is scored
    assert "cut_clause" in ev["tasks"]["turn_complete"]["accuracy_by_kind"]
    assert ev["probe"]["n"] == 40 and 0.0 <= ev["probe"]["accuracy"] <= 1.0
    assert 0.0 <= ev["accuracy_on_misheard_endings"] <= 1.0
    assert json.loads((one / "config.json").read_text())["voicelab"]["decision"]["tasks"] == ["turn_complete"]


# --- turn-end policy --------------------------------------------------------------------------

@given(silence=MS, later=MS, audio=P, text=P)
def test_turn_end_is_monotone_in_silence(silence: float, later: float, audio, text) -> None:
    if decide_turn(silence, audio, text).action is TurnAction.END:
        assert decide_turn(silence + later, audio, text).action is TurnAction.END


@given(audio=P, a=st.floats(0.0, 1.0), b=st.floats(0.0, 1.0))
def test_more_confidence_in_completion_never_waits_longer(audio, a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    assert required_silence_ms(audio, hi)[0] <= required_silence_ms(audio, lo)[0]
    assert required_silence_ms(hi, audio)[0] <= required_silence_ms(lo, audio)[0]


@given(audio=P, text=P)
def test_never_ends_before_the_floor_always_by_the_cap(audio, text) -> None:
    th = TurnThresholds()
    assert decide_turn(th.floor_ms - 1, audio, text).action is TurnAction.WAIT
    assert decide_turn(th.cap_ms, audio, text).action is TurnAction.END


def test_turn_end_tiers() -> None:
    th = TurnThresholds()
    assert required_silence_ms(0.9, 0.95)[0] == th.floor_ms
    assert required_silence_ms(None, 0.95)[0] == th.single_sure_ms
    assert required_silence_ms(0.3, 0.95)[0] == th.medium_ms
    assert required_silence_ms(0.6, 0.3)[0] == th.disputed_ms
    assert required_silence_ms(0.9, 0.05)[0] == th.vetoed_ms
    assert required_silence_ms(0.2, 0.1)[0] == th.cap_ms
    assert required_silence_ms(None, None)[0] == th.cap_ms
    assert text_p_complete(False, 0.9) == pytest.approx(0.1)


def test_a_cut_off_sentence_that_sounds_complete_waits_as_long_as_any_disagreement() -> None:
    # a one-second thinking pause survives; the firm "cut off" waits no longer than a disputed turn (on recognised
    # human speech it is no surer: docs/decisions/turn-end-veto-wait.md)
    th = TurnThresholds()
    for silence in range(0, 1200, 100):
        assert decide_turn(silence, 0.95, text_p_complete(False, 0.97)).action is TurnAction.WAIT
    assert decide_turn(th.disputed_ms, 0.95, text_p_complete(False, 0.97)).action is TurnAction.END
    assert th.vetoed_ms == th.disputed_ms


def test_bad_thresholds_and_scores_are_refused() -> None:
    with pytest.raises(ValueError, match="floor <= single_sure"):
        TurnThresholds(floor_ms=900)
    with pytest.raises(ValueError, match=r"P\(complete\) must be in \[0, 1\], got 1.5"):
        decide_turn(100, 1.5, None)


# --- paused-bot policy ------------------------------------------------------------------------

WORDS = st.sampled_from(["", "mm hmm", "uh", "no wait", "no wait i meant sunday at two", "okay"])


@given(words=WORDS, p=P, t=MS, later=MS, speaking=st.booleans())
@settings(max_examples=300)
def test_pause_outcome_is_final_once_reached(words: str, p, t: float, later: float, speaking: bool) -> None:
    first = decide_interruption(words, p, t, speaking).action
    if first is not PauseAction.WAIT:
        assert decide_interruption(words, p, t + later, speaking).action is first


@given(p=P, t=MS, speaking=st.booleans())
def test_silence_without_words_never_stops_the_bot(p, t: float, speaking: bool) -> None:
    assert decide_interruption("", p, t, speaking).action is not PauseAction.STOP


def test_pause_rules() -> None:
    th = PauseThresholds()
    assert decide_interruption("no wait", 0.95, 50, True).action is PauseAction.STOP
    assert decide_interruption("mm hmm", 0.03, 100, True).action is PauseAction.WAIT
    assert decide_interruption("mm hmm", 0.03, th.settle_ms, False).action is PauseAction.RESUME
    assert decide_interruption("uh", 0.5, th.settle_ms, False).action is PauseAction.WAIT
    assert decide_interruption("uh", 0.4, th.resume_ms, False).action is PauseAction.RESUME
    assert decide_interruption("one two three four five", 0.1, 10, True).action is PauseAction.STOP
    assert decide_interruption("", None, th.max_hold_ms, True).action is PauseAction.RESUME
    assert decide_interruption("blah", None, th.max_hold_ms, True).action is PauseAction.STOP
    with pytest.raises(ValueError, match="settle <= resume"):
        PauseThresholds(settle_ms=700)


# --- misheard endings (engines.decision.corpus `last_word_slip`: a training option, not shipped) ---

def test_misheard_endings_never_end_on_a_cut_word_or_a_digit() -> None:
    items = dc.generate(3000, 3, tasks=("turn_complete",), last_word_slip=1.0)
    slipped = [u for u in items if u.kind == "misheard_ending"]
    assert len(slipped) > 500 and all(u.answer for u in slipped)
    assert not any(u.text.split()[-1] in dc.CUT_WORDS or u.text.split()[-1].isdigit() for u in slipped)
    assert dc.generate(300, 3, last_word_slip=0.5) == dc.generate(300, 3, last_word_slip=0.5)
    assert not any(u.kind == "misheard_ending" for u in dc.generate(2000, 3))  # off by default
    with pytest.raises(ValueError, match="last_word_slip"):
        dc.generate(1, 0, last_word_slip=1.5)


# --- the broad corpus (engines.decision.corpus `broad`: a training option, not shipped) -----------

def test_broad_corpus_cuts_end_on_content_words_and_clauses_wait_for_their_request() -> None:
    items = dc.generate(6000, 4, tasks=("turn_complete",), broad=True)
    kinds = {u.kind for u in items}
    assert {"cut_transitive", "cut_clause", "off_topic"} <= kinds
    subordinators = tuple(f"{s} " for s in dc.SUBORDINATORS[0])
    for u in items:
        if u.kind in ("cut_transitive", "cut_modifier"):
            assert not u.answer and dc.CONTENT_CUTS[u.text.split()[-1]] == u.kind, u
        if u.kind == "cut_clause":
            # noise may replace a word of the clause, never its label: a clause alone is unfinished
            assert not u.answer, u
    clauses = [u for u in dc.generate(3000, 5, tasks=("turn_complete",), broad=True) if u.kind == "cut_clause"]
    assert sum(u.text.startswith(subordinators) for u in clauses) > 0.7 * len(clauses)
    # off by default: the shipped model's corpus has none of it
    assert not {"cut_transitive", "cut_modifier", "cut_clause", "off_topic"} & {u.kind for u in dc.generate(4000, 4)}


# --- the hand-written probe turns (engines/decision/probe.py) ----------------------------------

@pytest.mark.slow
def test_probe_turns_lie_outside_the_generator_and_are_scored(dm) -> None:
    from engines.decision import probe as decision_probe

    texts = {t for t, _ in decision_probe.PROBE}
    assert len(texts) == len(decision_probe.PROBE) == 40
    assert sum(e for _, e in decision_probe.PROBE) == 20
    generated = {u.text for split, seed in (("train", 0), ("heldout", 1001))
                 for u in dc.generate(20000, seed, split, broad=True)}
    assert not texts & generated
    s = decision_probe.score(dm)
    assert s["n"] == 40 and 0.0 <= s["accuracy"] <= 1.0
    assert len(s["wrong"]) == round((1 - s["accuracy"]) * 40)


def test_probe_cli_refuses_a_folder_that_is_not_a_model(tmp_path: Path, capsys) -> None:
    from engines.decision import probe as decision_probe

    with pytest.raises(SystemExit) as e:
        decision_probe.main([str(tmp_path / "missing")])
    assert "missing: not a decision model" in str(e.value)


def test_the_shipped_ensemble_averages_its_members_probabilities_per_task() -> None:
    """The turn end asks both trainings (the mean of their P(complete)); the barge-in's interruption asks the
    shop's alone."""
    from engines.decision.model import DEFAULT_FOLDER, SHOP_FOLDER, EnsembleDecisionModel, load_decision_model

    ens = load_decision_model()
    assert isinstance(ens, EnsembleDecisionModel) and ens.pool == "probability"
    shop, calls = load_decision_model(SHOP_FOLDER), load_decision_model(DEFAULT_FOLDER.parent / "decision_calls")
    text = "i would like to book a break"  # a misread ending: the shop's doubt keeps it under one half
    a, b = shop.p_yes_batch([("turn_complete", text, None)])[0], calls.p_yes_batch([("turn_complete", text, None)])[0]
    both = ens.p_yes_batch([("turn_complete", text, None), ("interruption", "stop please", None)])
    assert both[0] == pytest.approx((a + b) / 2, abs=1e-6) and both[0] < 0.5
    assert both[1] == pytest.approx(shop.p_yes_batch([("interruption", "stop please", None)])[0], abs=1e-6)
    d = ens.ask("turn_complete", text)
    assert d.answer is False and d.confidence == pytest.approx(1 - both[0], abs=1e-4)


def test_the_logit_pool_lets_a_confident_member_decide(tmp_path: Path) -> None:
    import json
    import math

    from engines.decision.model import DEFAULT_FOLDER, EnsembleDecisionModel, load_decision_model

    members = {"turn_complete": [str(DEFAULT_FOLDER.parent / "decision"), str(DEFAULT_FOLDER.parent / "decision_calls")]}
    (tmp_path / "ensemble.json").write_text(json.dumps({"members": members, "pool": "logit"}))
    ens = load_decision_model(tmp_path)
    assert isinstance(ens, EnsembleDecisionModel) and ens.pool == "logit"

    def logit(p: float) -> float:
        return math.log(p / (1 - p))

    ps = [load_decision_model(m).p_yes_batch([("turn_complete", "is that what happened", None)])[0]
          for m in members["turn_complete"]]
    got = ens.p_yes_batch([("turn_complete", "is that what happened", None)])[0]
    assert logit(got) == pytest.approx(sum(logit(p) for p in ps) / 2, abs=1e-3)
    assert got < sum(ps) / 2  # the shop's near-certain doubt outweighs: the linear pool's reason to be
    (tmp_path / "ensemble.json").write_text(json.dumps({"members": members, "pool": "median"}))
    with pytest.raises(CheckpointError, match="pool 'median'"):
        load_decision_model(tmp_path)


def test_a_bad_ensemble_file_is_refused(tmp_path: Path) -> None:
    from engines.decision.model import load_decision_model

    (tmp_path / "ensemble.json").write_text('{"members": {"turn_complete": []}}')
    with pytest.raises(CheckpointError, match="ensemble.json: every task needs at least one member"):
        load_decision_model(tmp_path)
    (tmp_path / "ensemble.json").write_text('{"models": []}')
    with pytest.raises(CheckpointError, match="ensemble.json: expected"):
        load_decision_model(tmp_path)
    (tmp_path / "ensemble.json").write_text('{"members": {"turn_complete": ["missing"]}}')
    with pytest.raises(CheckpointError, match="not found"):
        load_decision_model(tmp_path)
