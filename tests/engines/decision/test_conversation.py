"""Callers' turns from transcripts (engines/decision/transcripts.py), their labels and the mix
(engines/decision/conversation.py), the held-out comparison (engines/decision/held_out.py), and the candidate model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.decision import conversation as cv
from engines.decision import transcripts as tr
from engines.decision.held_out import labelled_sets

CANDIDATE = Path(__file__).resolve().parents[3] / "engines" / "tiny" / "decision_conversation"


def _raw_sources(root: Path) -> tuple[Path, Path]:
    """A tiny Taskmaster copy (TM-4 data, TM-3 reward contexts) and a Harper Valley folder, in the raw formats."""
    tm = root / "Taskmaster"
    (tm / "TM-4-2024" / "data").mkdir(parents=True)
    (tm / "TM-3-2020" / "reward").mkdir(parents=True)
    (tm / "TM-4-2024" / "data" / "data_00.json").write_text(json.dumps([{
        "conversation_id": "dlg-a", "utterances": [
            {"index": 0, "speaker": "user", "text": "Hi! Can I get a latte?", "segments": []},
            {"index": 1, "speaker": "assistant", "text": "Sure, what size?"},
            {"index": 2, "speaker": "user", "text": "Large, please."},
            {"index": 3, "speaker": "user", "text": "Hi! Can I get a latte?"}]}]))
    ctx = [{"role": "agent", "text": "What movie?"}, {"role": "user", "text": "Dune at 7 p.m. tonight"},
           {"role": "agent", "api": {"find": {}}}, {"role": "user", "text": "I'd like two tickets. Thanks"}]
    (tm / "TM-3-2020" / "reward" / "reward_00.json").write_text(json.dumps([
        {"conversation_id": "dlg-b", "context": json.dumps(ctx[:2]), "generation": "", "reward": 1.0},
        {"conversation_id": "dlg-b", "context": json.dumps(ctx), "generation": "", "reward": 1.0}]))
    hv = root / "harper"
    hv.mkdir()
    segs = [("agent", "hello [noise] how can i help you today"), ("caller", "[noise]"), ("caller", "hi"),
            ("caller", "my name is mary smith"), ("agent", "[noise]"), ("caller", "i lost my card"),
            ("agent", "which card"), ("caller", "my <unk> card"), ("agent", "okay"), ("caller", "you <unk>")]
    (hv / "0002f70f7386445b.json").write_text(json.dumps(
        [{"index": i + 1, "speaker_role": r, "human_transcript": t, "start_ms": 1000 * (10 - i)}
         for i, (r, t) in enumerate(segs)]))
    return tm, hv


def test_importer_keeps_callers_turns_with_their_stops_and_the_line_before(tmp_path: Path) -> None:
    tm, hv = _raw_sources(tmp_path)
    turns = tr.collect(tm, hv)
    got = {(t.source, t.text): t for t in turns}
    # each distinct turn of a source once; sentence ends inside a written turn are stops
    assert got[("taskmaster4", "hi can i get a latte")].stops == (1,)
    assert got[("taskmaster4", "large please")].context == "sure what size"
    assert sum(t.text == "hi can i get a latte" for t in turns) == 1
    # the longest context of a TM-3 conversation, its agent's lines as context, API rows ignored
    # an abbreviation's full stop counts too: the prefix there is only left out, never mislabelled
    assert got[("taskmaster3", "dune at 7 p m tonight")].stops == (5,)
    assert got[("taskmaster3", "i would like two tickets thanks")].stops == (5,)
    assert got[("taskmaster3", "i would like two tickets thanks")].context == "what movie"
    # Harper Valley in index order (not start_ms); consecutive caller segments make one turn, pauses are stops;
    # tag-only agent segments do not end a turn; a turn ending on <unk> is left out
    hv_turns = [t for t in turns if t.source == "harper_valley"]
    assert [(t.text, t.stops) for t in hv_turns] == [
        ("hi my name is mary smith i lost my card", (1, 6)), ("my card", ())]
    assert hv_turns[0].context == "hello how can i help you today"
    out = tmp_path / "turns.tsv"
    assert tr.write(turns, out) == len(turns)
    assert tr.read(out) == turns


def test_importer_errors_are_one_line(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        tr.main(["--taskmaster", str(tmp_path / "nope"), "--out", str(tmp_path / "x.tsv")])
    assert "--taskmaster" in str(e.value) and "no such folder" in str(e.value)
    (tmp_path / "hv").mkdir()
    (tmp_path / "hv" / "bad.json").write_text("{not json")
    with pytest.raises(SystemExit) as e:
        tr.main(["--harper-valley", str(tmp_path / "hv"), "--out", str(tmp_path / "x.tsv")])
    assert "bad.json" in str(e.value) and "\n" not in str(e.value)
    (tmp_path / "x.tsv").write_text("elsewhere\td\ttext\t\t\n")
    with pytest.raises(ValueError, match="x.tsv:1"):
        tr.read(tmp_path / "x.tsv")


WORD = st.sampled_from(["yes", "i", "would", "like", "a", "latte", "thank", "you", "okay", "my", "card", "no"])
SENTENCE = st.lists(WORD, min_size=1, max_size=6).map(" ".join)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(SENTENCE, st.sampled_from([".", "?", "!", ",", ""])), min_size=1, max_size=4),
       st.sets(SENTENCE, max_size=3))
def test_prefix_labels_are_word_prefixes_never_at_a_sentence_end(parts, whole) -> None:
    raw = " ".join(s + p for s, p in parts)
    turn = tr.written_turn("taskmaster4", "d", raw)
    assert turn is not None
    words = turn.text.split()
    # a stop is where the raw text ended a sentence (. ? !) with more words after it
    ends, n = set(), 0
    for s, p in parts[:-1]:
        n += len(s.split())
        if p in (".", "?", "!"):
            ends.add(n)
    assert set(turn.stops) == ends
    labels = cv.labelled(turn, frozenset(whole))
    assert labels[-1] == (turn.text, True) and all(not a for _, a in labels[:-1])
    for p in cv.cut_prefixes(turn, frozenset(whole)):
        k = len(p.split())
        assert words[:k] == p.split() and 0 < k < len(words)
        assert k not in turn.stops and p not in cv.STANDALONE and p not in whole


def test_mix_is_reproducible_balanced_and_keeps_both_tasks() -> None:
    turns = tr.read(cv.DATA)
    a = cv.mixed(2000, 3, "train", turns)
    assert a == cv.mixed(2000, 3, "train", turns)
    tasks = {t: [u for u in a if u.task == t] for t in ("turn_complete", "interruption")}
    assert len(tasks["interruption"]) == 1000 and len(tasks["turn_complete"]) == 1000
    tc = tasks["turn_complete"]
    assert 0.4 < sum(u.answer for u in tc) / len(tc) < 0.6
    by_source = {s: sum(u.kind.startswith(s) for u in tc) / len(tc) for s in ("taskmaster4", "taskmaster3")}
    assert all(0.2 < v < 0.45 for v in by_source.values())  # no source dominates
    assert not any(u.kind.startswith("harper_valley") for u in a)  # the held-out source never trains
    seen: dict[str, bool] = {}
    for u in tc:
        assert seen.setdefault(u.text, u.answer) == u.answer, u


def test_stops_complete_labels_sentence_ends_complete_and_never_cuts_them() -> None:
    a = tr.TranscriptTurn("taskmaster4", "d2", "yes i would like a latte with oat milk", (1, 6))
    b = tr.TranscriptTurn("taskmaster4", "d2", "i would like a latte please", ())
    assert not cv.is_heldout("d2")
    assert cv.stop_prefixes(a) == ["yes", "yes i would like a latte"] and cv.stop_prefixes(b) == []
    whole = cv.whole_turns([a, b], stops_complete=True)
    assert "i would like a" in cv.cut_prefixes(b, whole)
    assert "i would like a latte" not in cv.cut_prefixes(b, cv.whole_turns([a, b, tr.TranscriptTurn(
        "taskmaster4", "d2", "i would like a latte with oat milk", (5,))], stops_complete=True))
    labels: dict[str, bool] = {}
    for u in cv.conversational([a, b], 400, 0, "train", stops_complete=True):
        assert labels.setdefault(u.text, u.answer) == u.answer, u
    assert labels.get("yes i would like a latte") is True or labels.get("yes") is True


def test_splits_are_by_dialogue(monkeypatch) -> None:
    monkeypatch.setattr(cv, "NOISE_SHARE", 0.0)
    turns = [t for t in tr.read(cv.DATA) if t.source == "taskmaster4"]
    held = [t for t in turns if cv.is_heldout(t.dialog)]
    assert 0.05 < len({t.dialog for t in held}) / len({t.dialog for t in turns}) < 0.15
    prefixes = {" ".join(t.text.split()[:k]) for t in held for k in range(1, len(t.text.split()))}
    for u in cv.conversational(turns, 300, 1, "heldout"):
        assert u.text in ({t.text for t in held} if u.answer else prefixes), u


def test_held_out_sets_follow_the_labelling_rule() -> None:
    t = tr.TranscriptTurn("harper_valley", "c", "hi my name is mary i lost my card", (1, 5))
    sets = labelled_sets([t], frozenset({"my name is mary"}))
    assert sets["complete"] == [t.text]
    assert sets["pause"] == ["hi", "hi my name is mary"]
    assert "hi my" in sets["cut"] and "hi my name is mary i lost my" in sets["cut"]
    assert not {"hi", "hi my name is mary"} & set(sets["cut"])


@pytest.mark.slow
def test_candidate_loads_and_answers_the_fixed_judgements() -> None:
    from engines.decision.model import load_decision_model
    from engines.decision.train import FIXED

    dm = load_decision_model(CANDIDATE)
    for task, text, expected in FIXED:
        assert dm.ask(task, text).answer == expected, (task, text)
    cfg = json.loads((CANDIDATE / "config.json").read_text())["voicelab"]["decision"]
    assert set(cfg["tasks"]) == {"turn_complete", "interruption"}


def test_call_points_keep_the_label_of_the_moment_and_split_by_call(tmp_path: Path) -> None:
    rows = [f"call{i}\t{i % 2}\t{'yes' if i % 3 else 'hi my name is ann'}\tHow can I help?" for i in range(60)]
    p = tmp_path / "points.tsv"
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    pts = cv.read_points(p)
    assert pts[0] == cv.CallPoint("call0", False, "hi my name is ann", "how can i help")
    ex = cv.call_examples(pts, 400, 0, "train")
    assert ex == cv.call_examples(pts, 400, 0, "train")
    assert 0.4 < sum(u.answer for u in ex) / len(ex) < 0.6
    by_text = {(u.text, u.answer) for u in ex}
    assert ("yes", True) in by_text and ("yes", False) in by_text  # one text, both labels: what happened then
    train_calls = {p.call for p in pts if not cv.is_heldout(p.call)}
    assert {u.text for u in ex} <= {p.text for p in pts if p.call in train_calls}
    mix = cv.mixed(1000, 1, "train", tr.read(cv.DATA), {"shop": 0.6, cv.CALL_POINTS: 0.4}, points=pts)
    assert sum(u.kind.startswith("call_") for u in mix) == 200  # 0.4 of the 500 turn_complete examples


def test_a_bad_points_file_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "points.tsv"
    p.write_text("call0\tmaybe\tyes\t\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"points\.tsv:1: expected"):
        cv.read_points(p)
