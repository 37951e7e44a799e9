"""`--junit` and `--fail-on-expectations` of `voicelab call` and `voicelab run` (voicelab.cli.call.report_expectations)
on run folders written the way a line run writes them: one JUnit case per check, an error per call that failed on
the line, and the exit status the flag asks for (0 without it, whatever the checks said)."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console
from typer.testing import CliRunner

from voicelab.cli.app import app
from voicelab.cli.call import EXIT_EXPECTATIONS_FAILED, EXIT_NO_CHECKS, report_expectations
from voicelab.measure.expectations import score

CHECKS = {"says_all": ["you said"], "not_says": ["sorry"]}


def _run_folder(root: Path, name: str, heard: list[str | None], failed: str | None = None) -> Path:
    """A sealed run folder: turns.parquet with the scored `expectations` cells, summary.json, calls/*.json."""
    run = root / name
    (run / "calls").mkdir(parents=True)
    cells = [None if h is None else score(h, CHECKS) for h in heard]
    pq.write_table(pa.table({"call_id": ["00-echo"] * len(heard), "turn": list(range(len(heard))),
                             "expectations": pa.array(cells, pa.string())}), run / "turns.parquet")
    (run / "calls" / "00-echo.json").write_text(json.dumps({"status": "ok", "failure": None}))
    if failed:
        (run / "calls" / "01-gone.json").write_text(json.dumps({"status": "failed", "failure": failed}))
    (run / "summary.json").write_text(json.dumps({"run_id": name, "answers": {"expectations": 2 * len(heard)}}))
    return run


def _cases(path: Path) -> list[tuple[str, str, str]]:
    return [(c.get("classname", ""), c.get("name", ""),
             next((k for k in ("failure", "error") if c.find(k) is not None), "passed"))
            for c in ET.parse(path).getroot().iter("testcase")]


def test_every_check_is_a_case_and_the_flag_alone_decides_the_exit(tmp_path: Path) -> None:
    run = _run_folder(tmp_path, "r1", ["you said hello", "sorry, you said what"], failed="no audio within 15 s")
    console = Console(file=open(tmp_path / "console.txt", "w"))  # noqa: SIM115
    junit = tmp_path / "ci" / "call.xml"
    assert report_expectations(console, [run], junit, gate=False) == 0  # checks never change the default exit
    assert _cases(junit) == [("00-echo", "turn 0 says_all", "passed"), ("00-echo", "turn 0 not_says", "passed"),
                             ("00-echo", "turn 1 says_all", "passed"), ("00-echo", "turn 1 not_says", "failure"),
                             ("01-gone", "call", "error")]
    assert report_expectations(console, [run], None, gate=True) == EXIT_EXPECTATIONS_FAILED


def test_all_passing_is_0_and_no_checks_at_all_is_undecided(tmp_path: Path) -> None:
    console = Console(file=open(tmp_path / "console.txt", "w"))  # noqa: SIM115
    good = _run_folder(tmp_path, "good", ["you said yes"])
    none = _run_folder(tmp_path, "none", [None, None])
    assert report_expectations(console, [good], tmp_path / "g.xml", gate=True) == 0
    assert report_expectations(console, [none], tmp_path / "n.xml", gate=True) == EXIT_NO_CHECKS
    assert _cases(tmp_path / "n.xml") == []
    both = report_expectations(console, [good, none], tmp_path / "b.xml", gate=True)  # a matrix: a suite each
    assert both == 0 and len(ET.parse(tmp_path / "b.xml").getroot().findall("testsuite")) == 2


@pytest.mark.parametrize("command", [["call", "ws://127.0.0.1:9/media-stream", "single_question"],
                                     ["run", "single_question", "--stt", "transcript"]])
def test_a_folder_for_junit_is_refused_before_any_call(command: list[str], tmp_path: Path) -> None:
    res = CliRunner().invoke(app, [*command, "--out", str(tmp_path / "runs"), "--junit", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert res.output.strip().startswith(f"error: --junit {tmp_path}: a folder") and "Traceback" not in res.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_voicelab_run_writes_a_case_per_check_of_the_bots_replies(tmp_path: Path) -> None:
    """The lab's own bike-shop bot played examples/ci/fixtures (checks written for an agent that repeats its
    caller): a case per check; exit 0 by default, 1 with --fail-on-expectations when any check failed."""
    root = Path(__file__).resolve().parents[3]
    fixtures = str(root / "examples" / "ci" / "fixtures")
    res = CliRunner().invoke(app, ["run", fixtures, "--stt", "transcript", "--out", str(tmp_path / "runs"),
                                   "--junit", str(tmp_path / "run.xml")])
    assert res.exit_code == 0, res.output
    (summary,) = (tmp_path / "runs").rglob("summary.json")
    answers = json.loads(summary.read_text())["answers"]
    cases = _cases(tmp_path / "run.xml")
    assert len(cases) == answers["expectations"] == 9  # three turns, three checks each
    assert sum(k == "passed" for _c, _n, k in cases) == answers["expectations_passed"]
    run = summary.parent
    console = Console(file=open(tmp_path / "console.txt", "w"))  # noqa: SIM115
    failed = any(k == "failure" for _c, _n, k in cases)
    assert report_expectations(console, [run], None, gate=True) == (EXIT_EXPECTATIONS_FAILED if failed else 0)
