"""The call-timing group: labelling pauses and turn ends from transcripts with word times, judging rules on them.
Pure: the calls are made up here, except the checks on the committed Harper Valley files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicelab.turnbench.call_timing import (
    CALLS_DIR,
    CallFileError,
    geom,
    hazard_rows,
    judge,
    load_points,
    points_of_call,
    read_call,
)


def _row(i: int, role: str, off: int, words: list[tuple[int, int, str]], hand: str | None = None) -> str:
    """One call-file line: words as (offset in the segment, duration, word)."""
    aligned = " ".join(w for _, _, w in words)
    dur = max(o + d for o, d, _ in words)
    return "\t".join([str(i), role, str(off), str(dur), ",".join(str(o) for o, _, _ in words),
                      ",".join(str(d) for _, d, _ in words), aligned, hand if hand is not None else aligned])


def _write(tmp_path: Path, rows: list[str], name: str = "c1") -> Path:
    p = tmp_path / f"{name}.tsv"
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return p


def test_a_turn_with_a_pause_and_an_end(tmp_path: Path) -> None:
    rows = [
        _row(1, "agent", 0, [(0, 500, "hello"), (600, 400, "there")]),
        _row(2, "caller", 2000, [(0, 300, "hi"), (800, 200, "my"), (1000, 300, "card")], "hi my card"),
        _row(3, "caller", 4000, [(0, 300, "thanks")]),  # 0.7 s pause, no agent in between: same turn
        _row(4, "agent", 5300, [(0, 300, "okay")]),
    ]
    pts = points_of_call("c1", read_call(_write(tmp_path, rows)))
    assert [(p.kind, p.words, p.silence_ms) for p in pts] == [
        ("pause", "hi", 500.0), ("pause", "hi my card", 700.0), ("end", "hi my card thanks", 1000.0)]
    # the rule remembers only pauses the VAD would register, and only those already gone on from
    assert [p.resumed_ms for p in pts] == [0.0, 500.0, 700.0]


def test_the_agent_taking_the_floor_splits_turns_and_talking_over_drops_the_end(tmp_path: Path) -> None:
    rows = [
        _row(1, "caller", 0, [(0, 400, "yes")]),
        _row(2, "agent", 900, [(0, 300, "okay")]),  # takes the floor in the gap
        _row(3, "caller", 1500, [(0, 400, "my"), (400, 400, "name")]),
        _row(4, "agent", 2600, [(0, 300, "sure")]),  # starts before "name" ends (2300 + 0.1 s tolerance)
        _row(5, "caller", 2000, [(0, 300, "is")]),
    ]
    segs = read_call(_write(tmp_path, rows))
    pts = points_of_call("c1", segs)
    ends = [p for p in pts if p.kind == "end"]
    assert ends[0].words == "yes" and ends[0].silence_ms == 500.0
    assert all(p.turn != 0 or p.kind == "end" for p in pts)


def test_tags_are_not_words_and_the_last_turn_has_no_end(tmp_path: Path) -> None:
    rows = [
        _row(1, "caller", 0, [(0, 300, "hello"), (400, 200, "[noise]"), (900, 300, "bye")]),
        _row(2, "caller", 3000, [(0, 300, "[noise]")]),
    ]
    pts = points_of_call("c1", read_call(_write(tmp_path, rows)))
    assert [(p.kind, p.words, p.silence_ms) for p in pts] == [("pause", "hello", 600.0)]


def test_hand_words_are_used_only_where_they_line_up(tmp_path: Path) -> None:
    rows = [
        _row(1, "caller", 0, [(0, 300, "i"), (600, 300, "lost"), (900, 300, "it")], "i lost it"),
        _row(2, "caller", 2000, [(0, 300, "gonna"), (700, 300, "go")], "going to go"),
        _row(3, "agent", 4000, [(0, 300, "okay")]),
    ]
    pts = points_of_call("c1", read_call(_write(tmp_path, rows)))
    assert [(p.words, p.hand_words) for p in pts] == [
        ("i", True), ("i lost it", True), ("i lost it gonna", False), ("i lost it gonna go", False)]


@pytest.mark.parametrize("line, what", [
    ("1\tagent\t0\t100\t0\t100\thi", "expected 8"),
    ("1\trobot\t0\t100\t0\t100\thi\thi", "role must be"),
    ("1\tagent\t0\t100\t0,x\t100\thi\thi", "not a list of integers"),
    ("1\tagent\t0\t100\t0,50\t100\thi\thi", "differ in number"),
])
def test_a_bad_call_file_names_the_file_and_line(tmp_path: Path, line: str, what: str) -> None:
    p = _write(tmp_path, [line])
    with pytest.raises(CallFileError, match=rf"c1\.tsv:1: .*{what}"):
        read_call(p)


def test_an_empty_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CallFileError, match="no call files"):
        load_points(tmp_path)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(100, 6000), min_size=2, max_size=30), st.lists(st.floats(100, 6000), min_size=2,
                                                                          max_size=30))
def test_silence_only_trades_cut_offs_for_dead_air(pauses: list[float], ends: list[float]) -> None:
    from voicelab.turnbench.call_timing import TimedPoint

    pts = ([TimedPoint("c", 0, "pause", "w", g, 0.0, True) for g in pauses]
           + [TimedPoint("c", 1, "end", "w", g, 0.0, True) for g in ends])
    values = geom(100, 8000, 20)
    j = judge("timeout", "silence_ms", values, lambda t, p: t, pts)
    c = j.curve()
    assert np.all(np.diff(c.rate) <= 0) and np.all(np.diff(c.p50) >= 0)
    assert c.rate[-1] == pytest.approx(np.mean(np.asarray(pauses) > values[-1]))


def test_hazard_rows_stop_when_the_caller_goes_on() -> None:
    from voicelab.turnbench.call_timing import TimedPoint

    pts = [TimedPoint("c", 0, "pause", "w", 650.0, 0.0, True), TimedPoint("c", 0, "end", "w", 900.0, 0.0, True)]
    x, y = hazard_rows(pts, [0.2, 0.9])
    # the pause: 200..600 ms (5 rows, silent at each); the end: 200..3000 ms (29 rows), whatever the reply gap
    assert len(y) == 5 + 29 and y[:5].sum() == 0 and y[5:].all()
    assert np.allclose(np.exp(x[:5, 1]), [0.2, 0.3, 0.4, 0.5, 0.6])


def test_the_committed_calls_load() -> None:
    pts = load_points(CALLS_DIR)
    calls = {p.call for p in pts}
    assert len(calls) >= 50
    assert sum(p.kind == "end" for p in pts) >= 200 and sum(p.kind == "pause" for p in pts) >= 200
    assert all(p.words for p in pts)


def test_a_segment_with_an_empty_hand_transcript_is_no_speech(tmp_path: Path) -> None:
    rows = [
        _row(1, "caller", 0, [(0, 300, "hello")]),
        _row(2, "caller", 800, [(0, 300, "uh")], ""),  # the recogniser heard a word, the transcriber none
        _row(3, "caller", 1500, [(0, 300, "bye")]),
        _row(4, "agent", 2300, [(0, 300, "okay")]),
    ]
    pts = points_of_call("c1", read_call(_write(tmp_path, rows)))
    assert [(p.kind, p.words, p.silence_ms) for p in pts] == [("pause", "hello", 1200.0), ("end", "hello bye", 500.0)]


@pytest.mark.slow
def test_the_committed_call_figures_come_from_the_committed_calls(tmp_path: Path) -> None:
    """benchmarks/call_turns.py, run again as its results file says, gives the same figures (seeded, no timing)."""
    import json
    import shlex
    import subprocess
    import sys

    root = CALLS_DIR.parents[3]
    doc = json.loads((root / "benchmarks" / "results" / "call_turns.json").read_text())
    args = shlex.split(doc["command"])[2:]
    args = [str(tmp_path / Path(a).name) if a.startswith("benchmarks/results/") else a for a in args]
    subprocess.run([sys.executable, str(root / "benchmarks" / "call_turns.py"), *args], cwd=root, check=True,
                   capture_output=True, timeout=600)
    again = json.loads((tmp_path / "call_turns.json").read_text())
    for key in ("calls", "turns", "pauses", "ends", "strategies", "ratios_to_silence_only", "pauses_and_ends",
                "caps_shipped_model"):
        assert again[key] == doc[key], key


def test_exported_points_are_what_the_decision_trainer_reads(tmp_path: Path) -> None:
    from engines.decision.conversation import read_points
    from voicelab.turnbench.call_timing import main

    calls = tmp_path / "calls"
    calls.mkdir()
    _write(calls, [_row(1, "agent", 0, [(0, 300, "hello")]), _row(2, "caller", 500, [(0, 300, "skip")]),
                   _row(3, "agent", 1500, [(0, 300, "next")])], "a")
    _write(calls, [_row(1, "agent", 0, [(0, 300, "hello")]),
                   _row(2, "caller", 500, [(0, 300, "hi"), (900, 300, "I'm"), (1200, 300, "Ann")]),
                   _row(3, "agent", 2500, [(0, 300, "okay")])], "b")
    out = tmp_path / "points.tsv"
    assert main(["--calls", str(calls), "--skip-first", "1", "--export", str(out)]) == 0
    pts = read_points(out)
    assert [(p.call, p.complete, p.text, p.context) for p in pts] == [
        ("b", False, "hi", "hello"), ("b", True, "hi i am ann", "hello")]

