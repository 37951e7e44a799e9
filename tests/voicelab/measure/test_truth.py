"""The WAV analyzer (voicelab.measure.truth) on recordings whose onsets are known to the sample."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voicelab.measure import truth
from voicelab.measure.events import read_events
from voicelab.measure.metrics import turn_table
from voicelab.measure.truth import TruthError, Utterance
from voicelab.runs import synthetic
from voicelab.runs.folder import write_json

SR = 16000
HALF_WINDOW_MS = 5.0  # the onset rule marks a hard edge up to half a 10 ms window early (onset) or late (end)


def burst(x: np.ndarray, a: float, b: float, seed: int) -> None:
    """Loud noise (about -18 dBFS) from a to b seconds, exact to the sample."""
    rs = np.random.default_rng(seed)
    i, j = round(a * SR), round(b * SR)
    x[i:j] = rs.uniform(-0.2, 0.2, j - i)


def write_call(tmp: Path, caller: list[tuple[float, float]], bot: list[tuple[float, float]],
               utts: list[Utterance], seconds: float = 9.0) -> Path:
    run = tmp / "run"
    (run / "calls").mkdir(parents=True, exist_ok=True)
    left, right = np.zeros(int(seconds * SR)), np.zeros(int(seconds * SR))
    for k, (a, b) in enumerate(caller):
        burst(left, a, b, k)
    for k, (a, b) in enumerate(bot):
        burst(right, a, b, 100 + k)
    sf.write(str(run / "calls" / "c0.wav"), np.stack([left, right], axis=1), SR, subtype="PCM_16")
    write_json(run / "calls" / "c0.json", truth.call_truth_dict("c0", utts, fixture="hand", sample_rate=SR))
    return run


def hand_call(tmp: Path) -> Path:
    """t0 answered at 2.1 s and cut by t1's barge-in (2.6 s) at 2.78 s; t1 answered at 3.8 s; t2 a backchannel
    over that answer; t3 answered at 7.0 s."""
    caller = [(0.5, 1.5), (2.6, 3.2), (4.0, 4.3), (5.6, 6.4)]
    bot = [(2.1, 2.78), (3.8, 5.0), (7.0, 7.9)]
    utts = [Utterance(0, 0.5, 1.5, None, 0.4, 1.6), Utterance(1, 2.6, 3.2, "interrupt", 2.5, 3.3),
            Utterance(2, 4.0, 4.3, "no_interrupt", 3.9, 4.4), Utterance(3, 5.6, 6.4, None, 5.5, 6.5)]
    return write_call(tmp, caller, bot, utts)


def test_known_onsets_and_stops(tmp_path: Path) -> None:
    rows = {r["turn"]: r for r in truth.analyze_run(hand_call(tmp_path))}
    assert sorted(rows) == [0, 1, 2, 3]
    assert rows[0]["far_ms"] == pytest.approx(600, abs=HALF_WINDOW_MS + 1)
    assert rows[0]["stop_latency_ms"] is None  # not a barge-in turn
    assert rows[1]["stop_latency_ms"] == pytest.approx(180, abs=HALF_WINDOW_MS + 1)
    assert rows[1]["far_ms"] == pytest.approx(600, abs=HALF_WINDOW_MS + 1)
    assert rows[2]["far_ms"] is None and rows[2]["stop_latency_ms"] is None  # backchannel: no reply expected
    assert rows[3]["far_ms"] == pytest.approx(600, abs=HALF_WINDOW_MS + 1)
    for r in rows.values():
        assert r["call_id"] == "c0" and not r["overlap"]
        # the left channel confirms the ground truth's speech end
        assert r["caller_end_wav_ms"] == pytest.approx(r["speech_end_ms"], abs=HALF_WINDOW_MS + 1)


def test_missing_reply_is_not_taken_from_the_next_turn(tmp_path: Path) -> None:
    # turn 0 is never answered; the first bot audio answers turn 1
    run = write_call(tmp_path, [(0.5, 1.5), (3.0, 3.8)], [(4.4, 5.2)],
                     [Utterance(0, 0.5, 1.5), Utterance(1, 3.0, 3.8)])
    rows = {r["turn"]: r for r in truth.analyze_run(run)}
    assert rows[0]["far_ms"] is None
    assert rows[1]["far_ms"] == pytest.approx(600, abs=HALF_WINDOW_MS + 1)


def test_bot_talking_over_the_speech_end_is_not_the_reply(tmp_path: Path) -> None:
    # the bot is still audible when the caller stops (1.5 s): its reply is the sound starting at 2.4 s
    run = write_call(tmp_path, [(0.5, 1.5)], [(1.0, 1.8), (2.4, 3.0)], [Utterance(0, 0.5, 1.5)])
    (row,) = truth.analyze_run(run)
    assert row["overlap"] is True
    assert row["far_ms"] == pytest.approx(900, abs=HALF_WINDOW_MS + 1)


def test_interrupt_on_a_silent_bot_has_no_stop_latency(tmp_path: Path) -> None:
    run = write_call(tmp_path, [(0.5, 1.5), (3.0, 3.5)], [(2.0, 2.5)],
                     [Utterance(0, 0.5, 1.5), Utterance(1, 3.0, 3.5, "interrupt")])
    rows = {r["turn"]: r for r in truth.analyze_run(run)}
    assert rows[1]["stop_latency_ms"] is None


def test_synthetic_run_event_and_wav_figures_agree(tmp_path: Path) -> None:
    run = synthetic.write_run(tmp_path, seed=3)
    rows = truth.analyze_run(run)
    check = truth.compare(run, rows)
    assert check.ok is True, check.line()
    assert check.far_abs_diff_ms_p95 is not None and check.far_abs_diff_ms_p95 <= truth.GOAL_MS
    assert check.stop_abs_diff_ms_p95 is not None and check.stop_abs_diff_ms_p95 <= truth.GOAL_MS
    summary = json.loads((run / "summary.json").read_text())
    assert summary["truth"]["far_abs_diff_ms_p95"] == check.far_abs_diff_ms_p95
    assert "OK" in truth.summary_verdict(summary)


def test_a_known_playout_delay_moves_both_figures(tmp_path: Path) -> None:
    """150 ms more between the pipeline and the ear: events and WAV both move FAR and stop latency by it."""
    base = synthetic.Timing(gap_s=0.0, jitter_ms=2.0)  # continuous bot speech: a cut lands mid-sound
    runs = {d: synthetic.write_run(tmp_path / f"d{d}", timing=replace(base, playout_delay_ms=d), seed=1)
            for d in (0.0, 150.0)}
    ev = {d: {(r["call_id"], r["turn"]): r for r in turn_table(read_events(p / "events.jsonl"))}
          for d, p in runs.items()}
    wav = {d: {(r["call_id"], r["turn"]): r for r in truth.analyze_run(p)} for d, p in runs.items()}
    moved = {"far_ms": 0, "stop_latency_ms": 0}
    for key, r0 in ev[0.0].items():
        for fig in moved:
            if r0[fig] is None:
                assert ev[150.0][key][fig] is None and wav[0.0][key][fig] is None
                continue
            assert ev[150.0][key][fig] - r0[fig] == pytest.approx(150, abs=10), (key, fig)
            assert wav[150.0][key][fig] - wav[0.0][key][fig] == pytest.approx(150, abs=10), (key, fig)
            moved[fig] += 1
    assert moved["far_ms"] >= 4 and moved["stop_latency_ms"] >= 1


def test_disagreement_is_reported(tmp_path: Path) -> None:
    run = synthetic.write_run(tmp_path)
    rows = truth.analyze_run(run)
    shifted = [{**r, "far_ms": None if r["far_ms"] is None else r["far_ms"] + 50} for r in rows]
    check = truth.compare(run, shifted)
    assert check.ok is False and check.far_abs_diff_ms_p95 == pytest.approx(50, abs=10)
    assert check.line().startswith("measurement truth NOT MET") and "FAR" in check.line()
    lost = [{**r, "far_ms": None} if r["turn"] == 0 else r for r in rows]
    assert truth.compare(run, lost).unmatched and truth.compare(run, lost).ok is False
    assert truth.verdict_line(None, None) == "measurement truth: not checked (no recorded turns to compare)"


def test_bad_inputs_name_the_file_and_field(tmp_path: Path) -> None:
    run = hand_call(tmp_path)
    sf.write(str(run / "calls" / "c0.wav"), np.zeros(SR), SR)  # mono
    with pytest.raises(TruthError, match="c0.wav.*stereo"):
        truth.analyze_run(run)
    (run / "calls" / "c0.json").write_text(json.dumps({"call_id": "c0", "utterances": [{"turn": 0,
                                                                                       "speech_start_s": 1}]}))
    with pytest.raises(TruthError, match=r"c0.json: field 'utterances\[0\].speech_end_s'"):
        truth.read_call_truth(run / "calls" / "c0.json")
    (run / "calls" / "c0.wav").unlink()
    (run / "calls" / "c0.json").write_text(json.dumps({"call_id": "c0", "utterances": []}))
    with pytest.raises(TruthError, match="recording missing"):
        truth.analyze_run(run)


def test_recording_named_in_the_ground_truth(tmp_path: Path) -> None:
    run = hand_call(tmp_path)
    (run / "calls" / "c0.wav").rename(run / "calls" / "call-0.wav")
    d = json.loads((run / "calls" / "c0.json").read_text())
    (run / "calls" / "c0.json").write_text(json.dumps({**d, "wav": "call-0.wav", "scheduled": []}))
    assert len(truth.analyze_run(run)) == 4
