"""`voicelab call --concurrency 1,2,4,8`: the levels, the spread of fixtures, the table and plot, the agent's CPU;
and (slow) two calls at once against the reference agent, each with its rows."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tests.voicelab.call.agent_process import example_agent, serving
from voicelab.analysis.tables import is_finished
from voicelab.call.line_run import load_line_fixtures
from voicelab.call.load import (
    CpuWatch,
    LevelRow,
    agent_pid,
    load_sweep,
    load_table,
    parse_levels,
    spread,
    write_load_files,
)
from voicelab.cli.call import call


def test_levels_parse_sorted_and_bad_ones_are_one_line() -> None:
    assert parse_levels("4,1,2,2") == [1, 2, 4]
    assert parse_levels("3") == [3]
    for bad in ("0", "1,x", "", "-2"):
        with pytest.raises(ValueError, match="--concurrency"):
            parse_levels(bad)


def test_the_fixtures_spread_over_whole_rounds_of_callers() -> None:
    fxs = load_line_fixtures(["single_question", "barge_in_early", "backchannel_mm_hmm"])
    assert [f.name for f in spread(fxs, 1)] == [f.name for f in fxs]
    two = spread(fxs, 2)  # 3 fixtures, 2 callers: two rounds, the list cycled
    assert len(two) == 4 and two[3].name == fxs[0].name
    assert len(spread(fxs, 8)) == 8  # more callers than fixtures: each caller still gets a call


def test_bad_concurrency_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(call)
    res = CliRunner().invoke(app, ["ws://127.0.0.1:9/x", "single_question", "--concurrency", "1,two",
                                   "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--concurrency '1,two'" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow  # matplotlib's first figure
def test_the_table_plot_and_files_of_a_sweep(tmp_path: Path) -> None:
    rows = [LevelRow(1, 3, 0, 6, 900.0, 1500.0, 130.0, 160.0, 0, 55.0, 40.0, "n1"),
            LevelRow(2, 4, 1, 8, 1100.0, 2100.0, None, None, 0, None, 41.0, "n2")]
    write_load_files(tmp_path, rows, "line:ws://127.0.0.1:8000/media-stream", pid=None)
    assert (tmp_path / "load.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = list(csv.DictReader((tmp_path / "load.csv").open()))
    assert [r["concurrency"] for r in table] == ["1", "2"] and table[1]["calls_failed"] == "1"
    assert json.loads((tmp_path / "load.json").read_text())["agent_cpu"] == "not measured"
    t = load_table(rows)
    assert t.row_count == 2 and len(t.columns) == 8


def test_the_cpu_of_a_process_of_this_machine_and_of_none() -> None:
    watch = CpuWatch(os.getpid())
    watch.start()
    sum(i * i for i in range(200_000))  # some CPU of our own
    watch.mark()
    assert watch.share_pct() is not None and watch.share_pct() >= 0
    nobody = CpuWatch(None)
    nobody.start()
    nobody.mark()
    assert nobody.share_pct() is None
    assert agent_pid("wss://agent.example.com/media-stream") is None  # not this machine: not measured


@pytest.mark.slow
def test_two_calls_at_once_against_the_reference_agent(tmp_path: Path) -> None:
    with serving(example_agent("pipecat_phone_agent.py")) as (port, proc):
        url = f"ws://127.0.0.1:{port}/media-stream"
        assert agent_pid(url) == proc.pid
        root, rows = load_sweep(url, load_line_fixtures(["single_question"]), [2], tmp_path, readback=False)
    [row] = rows
    assert row.concurrency == 2 and row.calls == 2 and row.calls_failed == 0
    assert row.agent_cpu_pct is not None and row.agent_cpu_pct > 0  # FAR may be None: a cold agent on 2 cores
    run = root / "n2"
    assert is_finished(run)
    turns = list(csv.DictReader((run / "turns.csv").open()))
    assert sorted({r["call_id"] for r in turns}) == ["00-single_question", "01-single_question"]
    assert len(turns) == 2 and all(r["turn"] == "0" for r in turns)
    assert (root / "load.png").exists() and json.loads((root / "matrix.json").read_text())[0]["calls"] == 2
