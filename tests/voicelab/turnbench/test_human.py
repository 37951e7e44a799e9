"""The human groups' labelling: turns from speaker segments (`floor`), points from speech stretches
(`human_labels`, `read_speech`), the committed labels file, and the bench's rows per group. No model runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from voicelab.turnbench import floor, meetings
from voicelab.turnbench import turn_bench as bench
from voicelab.turnbench.audio import SR
from voicelab.turnbench.floor import RttmError, Segment, parse_rttm, turns
from voicelab.turnbench.human_labels import MIN_PAUSE_S, LabelError, label_turn, speech_spans
from voicelab.turnbench.read_speech import utterance_points


def seg(spk: str, a: float, b: float) -> Segment:
    return Segment(a, b, spk)


def test_a_backchannel_does_not_end_the_turn_and_is_no_turn() -> None:
    segs = [seg("A", 1.0, 3.0), seg("B", 3.2, 3.6), seg("A", 4.0, 6.0), seg("B", 6.3, 9.0), seg("A", 9.5, 12)]
    ts = turns(segs, (0.0, 20.0))
    assert [(t.speaker, t.start, t.end, t.next_speaker) for t in ts] == [("A", 1.0, 6.0, "B"), ("B", 6.3, 9.0, "A")]


def test_edges_and_overlapped_ends_are_dropped() -> None:
    # A's turn, under way at the region's start, is kept (its end and the silence before B are known); B's turn
    # is talked over by C; C's end is never followed inside the region
    segs = [seg("A", 0.0, 2.0), seg("B", 2.5, 5.0), seg("C", 4.0, 8.0), seg("A", 8.3, 9.0)]
    assert [(t.speaker, t.next_speaker) for t in turns(segs, (0.0, 10.0))] == [("A", "B")]
    # with room on both sides: A's, C's and A's short one (B's, taken over by C mid-speech, is dropped); a
    # segment of a second or less never takes the floor, so C hands it to B
    shifted = [Segment(s.start + 1, s.end + 1, s.speaker) for s in segs] + [seg("B", 10.5, 13.0)]
    assert [(t.speaker, t.next_speaker) for t in turns(shifted, (0.0, 20.0))] == [("A", "B"), ("C", "B"), ("A", "B")]


def test_parse_rttm() -> None:
    rows = parse_rttm(["SPEAKER r1 1 0.5 1.25 <NA> <NA> MÉO069 <NA> <NA>", "", "SPEAKER r2 1 2 1 <NA> <NA> X <NA>"])
    assert rows == {"r1": [Segment(0.5, 1.75, "MÉO069")], "r2": [Segment(2.0, 3.0, "X")]}
    with pytest.raises(RttmError, match="line 1"):
        parse_rttm(["SPEAKER r1 1 zero 1 <NA> <NA> X"])


def test_label_turn_overlap_and_backchannel() -> None:
    # A speaks 0-1 and 1.5-3 and 3.12-4; B says "yeah" over A's silence 1.2-1.3; a second silence 3.0-3.12
    heard = [(0.0, 1.0), (1.2, 1.3), (1.5, 3.0), (3.12, 4.0)]
    onset, end, pts = label_turn(heard, heard, [(1.2, 1.3)], (0.0, 4.0))
    assert (onset, end) == (0.0, 4.0)
    assert [(p.kind, p.t_s, p.resume_s) for p in pts] == [
        ("pause", 1.0, 1.2), ("pause", 1.3, 1.5), ("pause", 3.0, 3.12), ("end", 4.0, None)]
    # B talking over the whole of A's silence: no pause there
    _, _, pts = label_turn([(0.0, 1.0), (1.5, 3.0)], [(0.0, 1.0), (1.5, 3.0)], [(0.9, 1.6)], (0.0, 3.0))
    assert [p.kind for p in pts] == ["end"]
    with pytest.raises(LabelError):
        label_turn([], [], [], (0.0, 1.0))


spans_st = st.lists(st.tuples(st.floats(0, 30), st.floats(0.01, 3)), min_size=1, max_size=12).map(
    lambda xs: [(a, a + d) for a, d in xs])


@settings(max_examples=200, deadline=None)
@given(heard=spans_st, others=st.lists(st.tuples(st.floats(0, 30), st.floats(0.01, 2)), max_size=5),
       t0=st.floats(0, 10), length=st.floats(0.5, 20))
def test_label_turn_properties(heard: list[tuple[float, float]], others: list[tuple[float, float]], t0: float,
                               length: float) -> None:
    try:
        onset, end, pts = label_turn(heard, heard, [(a, a + d) for a, d in others], (t0, t0 + length))
    except LabelError:
        return
    assert [p.kind for p in pts].count("end") == 1 and pts[-1].kind == "end" and pts[-1].t_s == end
    times = [x for p in pts for x in (p.t_s, p.resume_s) if x is not None]
    assert times == sorted(times) and all(onset <= x <= end for x in times)
    assert all(p.resume_s - p.t_s >= MIN_PAUSE_S - 1e-9 for p in pts if p.kind == "pause" and p.resume_s)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0.05, 2), st.floats(0.1, 1.5)), min_size=1, max_size=8))
def test_turns_are_ordered_and_inside_the_region(parts: list[tuple[float, float]]) -> None:
    segs, t = [], 0.5
    for i, (gap, dur) in enumerate(parts):
        t += gap
        segs.append(seg("AB"[i % 2], t, t + dur))
        t += dur
    for tr in turns(segs, (0.0, t + 5.0)):
        assert tr.start >= floor.EDGE_S and tr.next_speaker and tr.next_speaker != tr.speaker
        assert all(a.end <= b.start for a, b in zip(tr.segments, tr.segments[1:], strict=False))


def test_speech_spans_and_utterance_points() -> None:
    t = np.arange(SR) / SR
    tone = 0.3 * np.sin(2 * np.pi * 200 * t[: SR // 2])
    x = np.concatenate([np.zeros(SR // 4), tone, np.zeros(SR // 5), tone, np.zeros(SR // 20), tone, np.zeros(SR)])
    spans = speech_spans(x)
    assert len(spans) == 2  # the 50 ms silence is inside a stretch, the 200 ms one splits
    pts = utterance_points(spans)
    assert [p.kind for p in pts] == ["pause", "end"]
    assert pts[0].resume_s - pts[0].t_s == pytest.approx(0.2, abs=0.015)
    assert pts[1].t_s == pytest.approx(0.25 + 0.5 + 0.2 + 0.5 + 0.05 + 0.5, abs=0.01)


def test_committed_labels_match_their_clips() -> None:
    path = meetings.MEETINGS_DIR / meetings.LABELS_FILE
    if not path.is_file():
        pytest.skip("no meeting clips here")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["counts"] == meetings.counts(doc["cases"])
    # the AMI excerpts found so far (pyannote-audio's): 25 turn ends, 52 pauses; the aim is 100 and 150
    assert doc["counts"]["ends"] >= 25 and doc["counts"]["pauses"] >= 50
    for c in doc["cases"]:
        f = meetings.MEETINGS_DIR / c["audio"]
        assert f.is_file(), f
        ends = [p for p in c["points"] if p["kind"] == "end"]
        assert len(ends) == 1 and c["points"][-1] is ends[0]
        assert all(p["resume_s"] - p["t_s"] >= MIN_PAUSE_S - 1e-3 for p in c["points"] if p["kind"] == "pause")
    cases = meetings.load_cases()
    assert len(cases) == len(doc["cases"]) and all(c.group == "human" and c.key.startswith("hm-") for c in cases)


def test_load_cases_names_a_bad_labels_file(tmp_path: Path) -> None:
    (tmp_path / meetings.LABELS_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(meetings.MeetingsError, match=str(tmp_path)):
        meetings.load_cases(tmp_path)


def test_refs_for_rejects_an_unknown_group() -> None:
    with pytest.raises(bench.TurnBenchError, match="--group 'nope'"):
        bench.refs_for("nope")


def test_json_rows_per_group_and_group_option(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.voicelab.turnbench.test_cli import _app, _turn_doc

    def docs(*_: object, **__: object) -> list[dict[str, object]]:
        rng = np.random.default_rng(1)
        out = []
        for i in range(30):
            d = _turn_doc(i, float(rng.random()), float(rng.random()), float(rng.uniform(0.2, 2.5)))
            d["group"], d["id"] = ("human" if i % 2 else "generated"), f"c{i}"
            out.append(d)
        return out

    seen: list[str | None] = []
    monkeypatch.setattr(bench, "load_scores", docs)
    monkeypatch.setattr(bench, "refs_for", lambda group=None, limit=None: seen.append(group) or [])
    res = CliRunner().invoke(_app(), ["bench-turns", "--json", "--resamples", "20", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [(r["group"], r["strategy"]) for r in rows][:7] == [
        ("generated", "timeout"), ("generated", "smart"), ("generated", "decide"), ("generated", "decide+early"),
        ("generated", "fuse"), ("generated", "listen"),
        ("human", "timeout")]
    assert all(r["pauses"] == 15 and r["ends"] == 15 and r["dead_air_p50_ms_ci_at"] for r in rows)
    assert (tmp_path / "turn_bench.png").stat().st_size > 10_000
    res = CliRunner().invoke(_app(), ["bench-turns", "--group", "human", "--resamples", "0"])
    assert res.exit_code == 0, res.output
    assert seen == [None, "human"]
    res = CliRunner().invoke(_app(), ["bench-turns", "--group", "human", "--fixtures", str(tmp_path)])
    assert res.exit_code != 0
