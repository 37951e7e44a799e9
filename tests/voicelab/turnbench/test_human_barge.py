"""The human barge-in cases: which segments are backchannels, where a clip is cut, which words it gets, the
sound's onset and offset, and the loader the bench reads. No model runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voicelab.turnbench import human_barge, meetings, read_speech
from voicelab.turnbench import turn_bench as bench
from voicelab.turnbench.audio import BARGE_TAIL_S, SR
from voicelab.turnbench.floor import Segment, backchannel_segments
from voicelab.turnbench.human_barge import (
    BargeSetError,
    alone,
    command_cuts,
    cut_window,
    load_cases,
    sentences,
    sound_span,
    words_of,
)
from voicelab.turnbench.human_labels import LabelError


def seg(spk: str, a: float, b: float) -> Segment:
    return Segment(a, b, spk)


def burst(total_s: float, on_s: float, off_s: float) -> np.ndarray:
    t = np.arange(round(total_s * SR)) / SR
    x = 0.5 * np.sin(2 * np.pi * 220 * t) * ((t >= on_s) & (t < off_s))
    return x.astype(np.float32)


def test_short_segments_inside_another_turn_are_backchannels() -> None:
    segs = [seg("A", 1.0, 6.0), seg("B", 2.0, 2.5), seg("A", 6.5, 9.0), seg("B", 9.5, 12.0), seg("C", 10.0, 10.8),
            seg("B", 19.96, 20.0)]
    # B's 0.5 s inside A's turn and C's 0.8 s inside B's are; B's long turn is not; one at the region's edge is not
    assert backchannel_segments(segs, (0.0, 20.0)) == [seg("B", 2.0, 2.5), seg("C", 10.0, 10.8)]


def test_words_pair_with_segments_only_when_they_fit() -> None:
    own = [seg("D", 0.0, 5.0), seg("D", 18.5, 19.0), seg("D", 22.3, 22.7)]
    text = ". And symbols that you don't necessarily understand. Oh yeah. Mm-hmm."
    assert sentences(text) == ["And symbols that you don't necessarily understand.", "Oh yeah.", "Mm-hmm."]
    assert words_of(own, text) == {own[0]: sentences(text)[0], own[1]: "Oh yeah.", own[2]: "Mm-hmm."}
    assert words_of(own[:2], text) == {}  # three sentences, two segments: the words cannot be placed
    # a long sentence cannot be said in a 0.4 s segment: the pairing is wrong somewhere, so none is kept
    assert words_of(own, "Mm-hmm. Oh yeah. Uh uh right, I was thinking on the same lines as you were.") == {}


def test_a_far_field_backchannel_must_be_alone_and_the_cut_stays_clear_of_others() -> None:
    segs = [seg("A", 1.0, 3.0), seg("B", 3.3, 3.7), seg("A", 3.75, 6.0), seg("B", 6.5, 7.0)]
    assert not alone(segs[1], segs)  # A resumes 0.05 s after it: within the 0.1 s margin
    assert alone(segs[1], [*segs[:2], seg("A", 3.9, 6.0)])  # A silent from 0.3 s before to 0.2 s after
    assert not alone(segs[1], [*segs[:2], seg("C", 3.5, 3.6)])  # someone talks over it
    assert cut_window(segs[1], segs, (0.0, 30.0)) == (pytest.approx(3.1), 3.75)  # 0.2 s pad, not into A's resumption
    assert cut_window(seg("B", 0.1, 0.5), [], (0.0, 30.0)) == (0.0, pytest.approx(0.7))


def test_the_sound_span_is_the_speakers_first_and_last_sound() -> None:
    x = burst(1.0, 0.25, 0.6)
    on, off = sound_span(x, (0.2, 0.8))
    assert on == pytest.approx(0.25, abs=0.02) and off == pytest.approx(0.6, abs=0.02)
    with pytest.raises(LabelError):
        sound_span(np.zeros(SR, np.float32), (0.2, 0.8))


def test_the_commands_are_the_interruptions() -> None:
    cuts = command_cuts()
    assert [(c.kind, c.text, c.window) for c in cuts] == [("interruption", "no", (1.0, 2.0)),
                                                         ("interruption", "stop", (3.0, 4.0))]
    assert all(len(c.commit) == 40 for c in cuts)


def _labels(root: Path, cases: list[dict[str, object]]) -> Path:
    path = root / "labels.json"
    path.write_text(json.dumps({"cases": cases}), encoding="utf-8")
    return path


def test_the_loader_gives_barge_in_cases(tmp_path: Path) -> None:
    sf.write(str(tmp_path / "a.flac"), burst(0.8, 0.2, 0.5), SR, format="FLAC")
    _labels(tmp_path, [{"id": "m/B/2.00", "file": "a.flac", "kind": "backchannel", "text": "mm-hmm",
                        "onset_s": 0.2, "offset_s": 0.5},
                       {"id": "m/C/3.00", "file": "a.flac", "kind": "interruption", "text": None,
                        "onset_s": 0.2, "offset_s": 0.5}])
    cases = load_cases(tmp_path)
    assert [c.group for c in cases] == ["human", "human"]
    a, b = cases
    assert a.audio.size == round(0.8 * SR) + round(BARGE_TAIL_S * SR)
    assert [(p.kind, p.t_s) for p in a.points] == [("end", 0.5)]
    assert a.meta == {"kind": "backchannel", "text": "mm-hmm", "onset_s": 0.2, "reading": None, "speaker": None}
    assert b.meta["kind"] == "interruption" and b.meta["text"] == ""
    assert a.key.startswith("hb-") and a.key == b.key  # content-addressed: the same audio, the same scores


def test_bad_labels_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(BargeSetError, match="labels.json"):
        load_cases(tmp_path)
    sf.write(str(tmp_path / "a.flac"), burst(0.8, 0.2, 0.5), SR, format="FLAC")
    _labels(tmp_path, [{"id": "x", "file": "a.flac", "kind": "cough", "onset_s": 0.2, "offset_s": 0.5}])
    with pytest.raises(BargeSetError, match=r"labels\.json: case 'x': kind 'cough'"):
        load_cases(tmp_path)
    _labels(tmp_path, [{"id": "y", "file": "missing.flac", "kind": "backchannel", "onset_s": 0.2,
                        "offset_s": 0.5}])
    with pytest.raises(BargeSetError, match="missing.flac"):
        load_cases(tmp_path)


def test_the_bench_takes_them_as_the_human_groups_barge_in_cases(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    sf.write(str(tmp_path / "a.flac"), burst(0.8, 0.2, 0.5), SR, format="FLAC")
    _labels(tmp_path, [{"id": "m/B/2.00", "file": "a.flac", "kind": "backchannel", "onset_s": 0.2,
                        "offset_s": 0.5}])
    monkeypatch.setattr(human_barge, "BARGE_DIR", tmp_path)
    monkeypatch.setattr(meetings, "MEETINGS_DIR", tmp_path / "none")
    monkeypatch.setattr(read_speech, "load_cases", lambda: [])
    refs = bench.refs_for("human")
    assert [(r.id, r.group, r.kind) for r in refs] == [("m/B/2.00", "human", "barge")]
    assert refs[0].meta["onset_s"] == 0.2 and refs[0].make().key == refs[0].key
