"""The bench's figures against what `voicelab run` measures for the same turns.

Three fixtures go through the real pipeline (`voicelab run`, the default configuration) and through the bench.
Per caller turn: the VAD's stop after the true end of speech must agree within 100 ms, and within 30 ms at the
median (the run's VAD works in an executor thread and its events are logged from the pipeline's tasks: on a
busy machine one stop in a run comes 80 ms late), and where the rule's wait, not a model's
pass, set the turn end (the run's verdict came within 60 ms of the silence the rule required, on the same
reading), the bench's dead air must be the run's within 80 ms. Elsewhere the run's turn end also holds the
recogniser's pass, which on a busy 2-core machine is anything from 0.1 to 1.3 s: the bench reports that part
separately (`passes_added`). The third fixture is there for its misread last turn ("and happy ball"), which the
rule waits out for almost 2 s whatever the load: with the decision ensemble's linear pool the other rule-set
turns wait about 1 s, and on some of them the run's reading and the bench's differ by a word, so they are not
compared. A run that judged its own machine busy is checked only for stops and turn ends not earlier than the
bench's: how much later they come is the machine's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from voicelab.measure.machine_load import BUSY, verdict_of
from voicelab.turnbench import turn_bench as bench
from voicelab.turnbench.replay import DecideTurnEndReplay, score_points, trace_of

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ("slow_talker_directions", "ulaw_noisy_hours", "barge_in_correction_day")


@pytest.mark.slow
def test_bench_agrees_with_voicelab_run(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "voicelab.cli.app", "run", *FIXTURES, "--out", str(out)]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    run_dir = next(p.parent for p in out.rglob("events.jsonl"))
    # a run that judged its own machine busy (voicelab.measure.machine_load) is late by what the machine took, not
    # by anything the bench can know: its stops and turn ends are then only checked not to come early (beside a
    # busy loop with three test workers on two cores, one stop came 179 ms after the bench's)
    busy = verdict_of(json.loads((run_dir / "summary.json").read_text()).get("machine")) == BUSY
    slack_ms = float("inf") if busy else 0.0
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    first: dict[tuple[str, int, str], dict] = {}
    for e in events:
        first.setdefault((e["call_id"].split("-", 1)[1], e["turn"], e["kind"]), e)
    refs = [r for r in bench.fixture_refs([ROOT / "audio_fixtures" / f for f in FIXTURES], {}, "user")
            if r.kind == "turn"]
    docs = bench.load_scores(refs, tmp_path / "cache")
    decide = DecideTurnEndReplay()
    vad_diffs: list[float] = []
    rule_checked = 0
    for d in docs:
        name, turn = d["id"].split("/t")
        key = (name, int(turn))
        if (*key, "turn_decision") not in first:
            continue
        tr = trace_of(d)
        end_ns = first[(*key, "caller_speech_end")]["t_ns"]
        stops = [e for e in events if e["kind"] == "vad_stop" and e["call_id"].endswith(name)
                 and e["t_ns"] > end_ns - 300_000_000]
        run_vad_ms = (stops[0]["t_ns"] - end_ns) / 1e6
        bench_vad_ms = (tr.stops[-1].t_s - tr.points[-1].t_s) * 1000.0
        assert -100.0 < run_vad_ms - bench_vad_ms < 100.0 + slack_ms, (d["id"], run_vad_ms, bench_vad_ms)
        vad_diffs.append(abs(run_vad_ms - bench_vad_ms))
        row = first[(*key, "turn_decision")]["payload"]
        if row["silence_ms"] - row["required_ms"] < 60.0 and row["text"] == tr.stops[-1].text:
            run_ms = (first[(*key, "turn_end")]["t_ns"] - end_ns) / 1e6
            bench_ms = score_points(tr, decide.declarations(tr, 1.0, False)).dead_ms[-1]
            assert -80.0 < run_ms - bench_ms < 80.0 + slack_ms, (d["id"], run_ms, bench_ms)
            rule_checked += 1
    assert len(vad_diffs) >= 5 and rule_checked >= (0 if busy else 2)  # a late verdict is not the rule's wait
    assert busy or sorted(vad_diffs)[len(vad_diffs) // 2] < 30.0
