"""The `human-calls` group: two-channel phone calls labelled by the floor rule on each party's own channel."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from hypothesis import given, settings
from hypothesis import strategies as st

from voicelab.turnbench import phone_calls as pc
from voicelab.turnbench import turn_bench as bench
from voicelab.turnbench.audio import SR
from voicelab.turnbench.human_labels import MIN_PAUSE_S
from voicelab.turnbench.meetings import LABELS_FILE, counts

spans_st = st.lists(st.tuples(st.floats(0, 100), st.floats(0.01, 5)), max_size=30).map(
    lambda xs: [(a, a + d) for a, d in xs])


@given(spans_st)
@settings(max_examples=200, deadline=None)
def test_party_segments_cover_the_spans_and_keep_long_silences(spans: list[tuple[float, float]]) -> None:
    segs = pc.party_segments(spans, "caller")
    assert all(s.speaker == "caller" for s in segs)
    assert all(any(s.start <= a and b <= s.end for s in segs) for a, b in spans)
    assert all(b.start - a.end >= pc.SEGMENT_JOIN_S for a, b in zip(segs, segs[1:], strict=False))
    # every segment starts and ends where some span does: joining invents no speech at the edges
    assert all(any(s.start == a for a, _ in spans) and any(s.end == b for _, b in spans) for s in segs)


def _tone(s: float) -> np.ndarray:
    t = np.arange(round(s * SR)) / SR
    return (0.5 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def _silence(s: float) -> np.ndarray:
    return np.zeros(round(s * SR), np.float32)


def _track(total_s: float, parts: list[tuple[float, float]]) -> np.ndarray:
    """Silence of `total_s` with a tone over each (start, duration)."""
    x = np.zeros(round(total_s * SR), np.float32)
    for a, d in parts:
        tone = _tone(d)
        x[round(a * SR):round(a * SR) + tone.size] = tone
    return x


def test_a_made_up_call_gives_the_caller_turn_its_pause_and_its_end(tmp_path: Path) -> None:
    """The caller speaks 2 s, pauses 0.6 s, speaks 1.5 s; the agent answers 0.7 s later for 2 s; the caller again
    for 2 s, the agent again for 2 s: two caller turns (the second ends before the agent's reply)."""
    caller = _track(12.0, [(0.5, 2.0), (3.1, 1.5), (7.3, 2.0)])
    agent = _track(12.0, [(5.3, 2.0), (9.3 + 0.4, 2.0)])
    n = max(caller.size, agent.size)
    folder = tmp_path / pc.SOURCE_DIR
    folder.mkdir(parents=True)
    for call in pc.CALLS:
        for party, x in (("caller", caller), ("agent", agent)):
            sf.write(str(folder / f"{call}_{party}.wav"), np.pad(x, (0, n - x.size)), SR, subtype="PCM_16")
    got, rows = pc.write(tmp_path, tmp_path / "out")
    assert got["ends"] == got["turns"] and got["turns"] >= 2 * len(pc.CALLS)
    doc = json.loads((tmp_path / "out" / LABELS_FILE).read_text(encoding="utf-8"))
    first = next(c for c in doc["cases"] if c["speaker"].endswith(":caller"))
    pauses = [p for p in first["points"] if p["kind"] == "pause"]
    assert len(pauses) == 1 and pauses[0]["resume_s"] - pauses[0]["t_s"] == pytest.approx(0.6, abs=0.03)
    assert first["speech_end_s"] + first["clip_start_s"] == pytest.approx(0.5 + 2.0 + 0.6 + 1.5, abs=0.03)
    assert first["next_speaker"].endswith(":agent")
    assert len(rows) == got["turns"] and all(r.licence == pc.LICENCE for r in rows)


def test_a_missing_source_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(pc.PhoneCallsError, match=f"{pc.CALLS[0]}_caller.wav: missing"):
        pc.write(tmp_path, tmp_path / "out")


def test_committed_labels_match_their_clips() -> None:
    path = pc.CALLS_DIR / LABELS_FILE
    if not path.is_file():
        pytest.skip("no phone-call clips here")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["counts"] == counts(doc["cases"])
    assert doc["counts"]["ends"] >= 30 and doc["counts"]["speakers"] == 2 * len(pc.CALLS)
    for c in doc["cases"]:
        assert (pc.CALLS_DIR / c["audio"]).is_file()
        assert c["source_commit"] == pc.COMMIT and c["speaker"].split(":")[1] in pc.PARTIES
        assert c["next_speaker"] != c["speaker"]
        ends = [p for p in c["points"] if p["kind"] == "end"]
        assert len(ends) == 1 and c["points"][-1] is ends[0]
        assert all(p["resume_s"] - p["t_s"] >= MIN_PAUSE_S - 1e-3 for p in c["points"] if p["kind"] == "pause")
    cases = pc.load()
    assert len(cases) == len(doc["cases"]) and all(c.group == pc.GROUP for c in cases)
    assert {r.group for r in bench.refs_for(pc.GROUP)} == {pc.GROUP}


def test_a_bad_labels_file_is_named(tmp_path: Path) -> None:
    (tmp_path / LABELS_FILE).write_text("[]", encoding="utf-8")
    with pytest.raises(pc.PhoneCallsError, match=str(tmp_path)):
        pc.load(tmp_path)
