"""The HTML report: self-contained, renders with and without interruptions, canvas states are right."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from voicelab.analysis import RunData, load_run
from voicelab.analysis.report import CANVAS_STATES, breakdown_plot, build_report, canvas_matrix
from voicelab.cli import report as report_cli
from voicelab.runs import synthetic

IMG = re.compile(r'<img alt="([^"]*)" src="([^"]*)"')


def images(page: str) -> list[tuple[str, str]]:
    return IMG.findall(page)


def assert_self_contained(page: str) -> None:
    assert "<script" not in page.lower()
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing fetched from the network
    for _, src in images(page):
        assert src.startswith("data:image/png;base64,")


def test_report_without_interruptions(tmp_path: Path) -> None:
    run = synthetic.write_run(tmp_path, calls=[synthetic.plain_call()])
    page = build_report(run).read_text(encoding="utf-8")
    assert_self_contained(page)
    alts = [a for a, _ in images(page)]
    assert "FAR distribution" in alts and "FAR breakdown" in alts
    assert sum(a.startswith("timeline ") for a in alts) == 2  # one per caller turn
    assert sum(a.startswith("canvas ") for a in alts) == 2
    assert "measurement truth OK" in page
    assert "<td>interrupt</td>" not in page and "<td>True</td>" not in page  # no barge-in, nothing cut


def test_report_with_interruptions(tmp_path: Path) -> None:
    run = synthetic.write_run(tmp_path, calls=[synthetic.barge_in_call()], config={"sampler": "revising"})
    out = tmp_path / "elsewhere" / "r.html"
    page = build_report(run, out, max_canvases=1).read_text(encoding="utf-8")
    assert_self_contained(page)
    alts = [a for a, _ in images(page)]
    assert sum(a.startswith("timeline ") for a in alts) == 3
    assert sum(a.startswith("canvas ") for a in alts) == 1
    assert "<td>interrupt</td>" in page and "<td>no_interrupt</td>" in page
    assert "<td>True</td>" in page  # the reply cut by the barge-in is marked interrupted


def test_report_over_a_folder_of_runs(tmp_path: Path) -> None:
    for policy in ("prefix", "final"):
        synthetic.write_run(tmp_path / "m", {"policy": policy}, [synthetic.plain_call()], run_id=policy)
    page = build_report(tmp_path / "m", detail_runs=1).read_text(encoding="utf-8")
    assert "diffusion / low_confidence / prefix" in page and "diffusion / low_confidence / final" in page
    assert "1 more runs summarised above" in page


def _bars(run: RunData) -> tuple[list[str], list[float]]:
    """The FAR breakdown's legend (without the FAR tick) and each turn's stacked total."""
    fig = breakdown_plot([run])
    assert fig is not None
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts() if "FAR" not in t.get_text()]
    ends: dict[float, float] = {}
    for bar in ax.patches:
        y = round(bar.get_y(), 3)
        ends[y] = max(ends.get(y, 0.0), bar.get_x() + bar.get_width())
    return legend, [ends[y] for y in sorted(ends)]


def test_breakdown_splits_endpointing_where_the_table_has_its_parts(tmp_path: Path) -> None:
    run = load_run(synthetic.write_run(tmp_path, calls=[synthetic.plain_call()]))
    legend, totals = _bars(run)
    assert legend[:3] == ["VAD stop", "final reading", "rule wait"] and "endpointing" not in legend
    assert legend[3:] == ["stt", "engine first commit", "gate to tts", "tts first audio", "playout"]
    old = dataclasses.replace(run, turns=run.turns.drop(columns=["vad_stop_ms", "stt_final_wait_ms", "rule_wait_ms"]))
    old_legend, old_totals = _bars(old)  # a run folder from before the split: one endpointing bar
    assert old_legend == ["endpointing", *legend[3:]]
    assert totals == pytest.approx(old_totals)  # the same critical path either way


def test_canvas_states_follow_the_gate_and_playout(tmp_path: Path) -> None:
    run = load_run(synthetic.write_run(tmp_path, calls=[synthetic.plain_call()], config={"sampler": "revising"},
                                       seed=4))
    m = canvas_matrix(run, "c0", 0)
    assert m is not None
    states, marks, has_mask = m
    assert has_mask
    masked, tentative, committed, spoken = range(len(CANVAS_STATES))
    assert (states[0] == masked).sum() > 0  # the first step leaves most of the canvas masked
    assert (states[-1] == spoken).all()  # by the end of the call the whole answer was played
    # the released prefix never shrinks from one step to the next
    released = ((states == committed) | (states == spoken)).sum(axis=1)
    assert (np.diff(released) >= 0).all() and released[-1] == states.shape[1]
    snaps = run.payloads("engine_snapshot")
    snaps = snaps[(snaps["call_id"] == "c0") & (snaps["turn"] == 0)]
    want = [(r, p) for r, revised in enumerate(snaps["revised"]) for p in revised]
    assert marks == want and marks  # the revising sampler changed something, and every change is marked
    # what the mask says: row r's unmasked positions are exactly the '0's of snapshot r
    for r, mask in enumerate(snaps["mask"]):
        assert [s != masked for s in states[r][: len(mask)]] == [c == "0" for c in mask]


@pytest.mark.slow
def test_cli_report_and_one_line_error(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command("report")(report_cli.report)
    app.command("sweep")(report_cli.sweep)
    runner = CliRunner()
    run = synthetic.write_run(tmp_path, calls=[synthetic.plain_call()])
    res = runner.invoke(app, ["report", str(run), "--out", str(tmp_path / "x.html")])
    assert res.exit_code == 0 and (tmp_path / "x.html").is_file()
    res = runner.invoke(app, ["report", str(tmp_path / "missing")])
    assert res.exit_code == 2
    assert res.output.strip().count("\n") == 0 and "error:" in res.output and "no such run folder" in res.output


@pytest.mark.parametrize("bad", ["nope", "stable"])
def test_cli_sweep_refuses_a_bad_policy(tmp_path: Path, bad: str) -> None:
    app = typer.Typer()
    app.command("report")(report_cli.report)
    app.command("sweep")(report_cli.sweep)
    res = CliRunner().invoke(app, ["sweep", "--out", str(tmp_path / "s"), "--policy", bad, "--runner", "synthetic"])
    assert res.exit_code == 2 and "--policy" in res.output and res.output.strip().count("\n") == 0
