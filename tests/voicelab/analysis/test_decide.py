"""The decision table: axes from summary.json, the Pareto front, `voicelab report --decide` on synthetic runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from voicelab.analysis import load_run
from voicelab.analysis.pareto import Choice, answer_success, decide, dominates
from voicelab.cli.app import app
from voicelab.runs.synthetic import Timing, plain_call, write_run


def _choice(label: str, **kw: object) -> Choice:
    base = dict(far_p50=600.0, far_p50_ci=None, far_p95=900.0, far_p95_ci=None, tokens_per_s=100.0,
                per_1000_calls_usd=1.0, answer_success=None, api="append-only", audible_per_100_words=0.0)
    base.update(kw)
    return Choice(label, label, **base)  # type: ignore[arg-type]


def test_dominance_uses_the_axes_both_measured() -> None:
    a, slower = _choice("a"), _choice("slower", far_p50=700.0)
    assert dominates(a, slower) and not dominates(slower, a)
    cheaper_but_slow = _choice("cheap", far_p50=700.0, per_1000_calls_usd=0.1)
    assert not dominates(a, cheaper_but_slow) and not dominates(cheaper_but_slow, a)  # a trade-off: both on front
    assert not dominates(a, _choice("twin"))  # equal everywhere: neither beats the other
    unscored = _choice("u", answer_success=None)
    assert dominates(_choice("s", answer_success=0.9, far_p50=500.0), unscored)  # answers not compared


def test_answer_success_tolerates_its_shapes() -> None:
    assert answer_success({}) is None
    assert answer_success({"answers": {"correct": 9, "n": 10}}) == pytest.approx(0.9)
    # summary.json's own shape: the share correct, not a count (1.0 of 4 replies is 100 %, not 25 %)
    assert answer_success({"answers": {"correct": 1.0, "coherent": 1.0, "n": 4}}) == 1.0
    assert answer_success({"answers": {"correct": 0.5, "n": 34}}) == 0.5
    assert answer_success({"answers": {"rate": 0.5}}) == 0.5
    assert answer_success({"answers": 0.75}) == 0.75


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("decide")
    calls = [plain_call(f"c{i}") for i in range(3)]
    slow = replace(Timing(), endpointing_ms=Timing().endpointing_ms + 200)
    return [write_run(out, {"policy": "prefix"}, calls, seed=1, run_id="fast"),
            write_run(out, {"policy": "prefix"}, calls, seed=1, run_id="slow", timing=slow),
            write_run(out, {"sampler": "revising", "policy": "stable:2"}, calls, seed=1, run_id="revising")]


def test_front_and_api_behaviour_from_real_run_folders(runs: list[Path]) -> None:
    rows = {c.run_id: c for c in decide([load_run(p) for p in runs])}
    assert rows["fast"].pareto and not rows["slow"].pareto  # same engine, 200 ms later: dominated
    assert rows["fast"].far_p50_ci is not None and rows["fast"].per_1000_calls_usd == 0.0
    assert rows["revising"].api == "revising"
    assert rows["fast"].api.startswith("append-only")


def test_report_decide_cli(runs: list[Path], tmp_path: Path) -> None:
    page = tmp_path / "d.html"
    res = CliRunner().invoke(app, ["report", "--decide", *map(str, runs), "-o", str(page), "--detail-runs", "0"])
    assert res.exit_code == 0, res.output
    assert "decision table" in res.output and "★" in res.output
    text = page.read_text()
    assert "Decision table" in text and "<img" in text  # the section, and the FAR plot with its intervals
    assert "[" in text.split("Decision table")[1].split("</table>")[0]  # FAR p50 [lo–hi]
    bad = CliRunner().invoke(app, ["report", str(runs[0]), str(runs[1])])
    assert bad.exit_code == 2 and "only with --decide" in bad.output
