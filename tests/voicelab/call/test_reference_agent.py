"""End to end against an agent the lab did not write: examples/pipecat_phone_agent.py (pipecat's own transport,
Twilio serializer, Whisper and Piper services on the packaged weights), started on loopback as its own process,
called by `voicelab call`: a FAR for every caller turn and the agent's words read back, scored against the
fixture's checks, and tables that say what turns.parquet and the summary say."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import typer
from typer.testing import CliRunner

from tests.voicelab.call.agent_process import example_agent, serving
from voicelab.analysis.tables import is_finished
from voicelab.cli.call import call, read_turn_rows
from voicelab.measure.expectations import cell_text, from_json, score, tally
from voicelab.runs.console import turn_cells

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_reference_pipecat_agent_end_to_end(tmp_path: Path) -> None:
    with serving(example_agent("pipecat_phone_agent.py"), timeout_s=60.0) as (port, _):
        app = typer.Typer()
        app.command()(call)
        res = CliRunner().invoke(app, [f"ws://127.0.0.1:{port}/media-stream", "single_question",
                                       "--out", str(tmp_path)])
    assert res.exit_code == 0, res.stderr
    run = next(tmp_path.iterdir())
    assert is_finished(run)
    summary = json.loads((run / "summary.json").read_text())
    meta = json.loads(next((run / "calls").glob("*.json")).read_text())
    assert meta["status"] == "ok"
    assert summary["far_ms"]["n"] == len(meta["utterances"]) == 1 and summary["far_ms"]["p50"] > 0
    assert summary["truth"]["far_abs_diff_ms_p95"] <= 20
    replies = {r["turn"]: r for r in meta["readback"]}
    assert "said" in replies[0]["text"]  # the echo brain: "you said ..."
    assert summary["answers"]["n"] == 1 and summary["answers"]["correct"] == 0.0  # an echo is no answer
    assert summary["line"]["agent_media_messages"] > 50


def _checked_copy(tmp: Path) -> Path:
    """single_question with checks any agent can meet beside the shop's answer: the echo says "you said ..."."""
    fx = tmp / "fixtures" / "echo_question"
    shutil.copytree(ROOT / "audio_fixtures" / "single_question", fx)
    doc = json.loads((fx / "fixture.json").read_text(encoding="utf-8"))
    doc["name"] = "echo_question"
    doc["turns"][0]["expect_reply"] = {**doc["turns"][0]["expect_reply"], "says_any": ["you said", "said"],
                                       "not_says": ["sorry"], "matches": r"\bsaturday\b|\bopen\b"}
    (fx / "fixture.json").write_text(json.dumps(doc), encoding="utf-8")
    return fx


@pytest.mark.slow
def test_reference_agent_tables_say_what_turns_parquet_and_the_summary_say(tmp_path: Path) -> None:
    """Every answer, checks and flags cell of the printed per-turn table comes from turns.parquet's row, and
    counted over the table they give the summary's answers, expectations and false barge-ins (the "mm hmm" that
    stops the echo agent is flagged in its own row)."""
    with serving(example_agent("pipecat_phone_agent.py"), timeout_s=60.0) as (port, _):
        app = typer.Typer()
        app.command()(call)
        res = CliRunner().invoke(app, [f"ws://127.0.0.1:{port}/media-stream", str(_checked_copy(tmp_path)),
                                       "backchannel_mm_hmm", "--out", str(tmp_path / "runs")])
    assert res.exit_code == 0, res.output
    run = next((tmp_path / "runs").iterdir())
    summary = json.loads((run / "summary.json").read_text())
    rows = pq.read_table(run / "turns.parquet").to_pylist()
    assert read_turn_rows(run) == rows
    cells = turn_cells(rows)
    scored = [r for r in rows if r["answer_correct"] is not None]
    assert summary["answers"]["n"] == len(scored) >= 2
    assert summary["answers"]["correct"] == round(sum(r["answer_correct"] for r in scored) / len(scored), 3)
    for r, c in zip(rows, cells, strict=True):
        assert c["answer"] == {None: "—", True: "ok", False: "wrong"}[r["answer_correct"]]
        assert ("false BI" in c["flags"]) == (r["false_barge_in"] is True)
        assert c.get("checks", "") == cell_text(r["expectations"])
    assert sum("false BI" in c["flags"] for c in cells) == summary["false_barge_ins"]
    assert [c["answer"] for c in cells].count("ok") == round(summary["answers"]["correct"] * len(scored))
    checks = [tally(r["expectations"]) for r in rows if r["expectations"] is not None]
    assert len(checks) == 1 and checks[0][1] == 3  # echo_question's turn: three checks
    assert summary["answers"]["expectations_passed"] == checks[0][0]
    assert summary["answers"]["expectations"] == 3
    expect = json.loads((tmp_path / "fixtures" / "echo_question" / "fixture.json").read_text())["turns"][0]
    assert rows[0]["expectations"] == score(rows[0]["readback_text"], expect["expect_reply"])  # on the words heard
    assert [i["check"] for i in from_json(rows[0]["expectations"])] == ["says_any", "matches", "not_says"]
    printed = " ".join(res.output.split())
    assert printed.count(" wrong ") == sum(1 for c in cells if c["answer"] == "wrong")
    assert ("false BI" in printed) == (summary["false_barge_ins"] > 0)
    assert f"{checks[0][0]} of 3" in printed  # the overall table's expectations row
