"""`voicelab compare`: verdicts on known distributions, pairing, --fail-on through the CLI on synthetic runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from voicelab.analysis.compare import (
    BETTER,
    SAME,
    SPECS,
    WORSE,
    CompareError,
    compare_samples,
    needed_halfwidth,
    parse_fail_on,
    repetitions_for,
)
from voicelab.cli.app import app
from voicelab.runs.synthetic import Timing, plain_call, write_run

FAR = stats.lognorm(s=0.4, scale=600.0)


def _keyed(x: np.ndarray, tag: str) -> list[tuple[tuple[str, int, int], float]]:
    return [((f"{tag}{i}", 0, 0), float(v)) for i, v in enumerate(x)]


# turns per side that let an unpaired interval resolve 100 ms: a tail percentile needs ten times more
@pytest.mark.slow
@pytest.mark.parametrize(("figure", "n"), [("far_p50", 300), ("far_p95", 3000)])
def test_one_distribution_is_no_detectable_difference_and_a_100ms_shift_is_worse(figure: str, n: int) -> None:
    rng = np.random.default_rng(11)
    a, b = FAR.rvs(size=n, random_state=rng), FAR.rvs(size=n, random_state=rng)
    spec = SPECS[figure]
    same = compare_samples(spec, _keyed(a, "a"), _keyed(b, "b"), n_resamples=999)
    assert not same.diff.paired and same.verdict == SAME
    worse = compare_samples(spec, _keyed(a, "a"), _keyed(b + 100.0, "b"), n_resamples=999)
    assert worse.verdict == WORSE and worse.diff.ci[0] > 0
    faster = compare_samples(spec, _keyed(a, "a"), _keyed(b - 100.0, "b"), n_resamples=999)
    assert faster.verdict == BETTER


def test_same_fixture_turns_are_paired() -> None:
    rng = np.random.default_rng(2)
    turns = FAR.rvs(size=30, random_state=rng)
    a = _keyed(turns + rng.normal(0, 10, 30), "t")
    b = _keyed(turns + 40 + rng.normal(0, 10, 30), "t")
    r = compare_samples(SPECS["far_p50"], a, b, n_resamples=999)
    assert r.diff.paired and r.verdict == WORSE  # 40 ms over 30 turns: visible only because paired
    acc = compare_samples(SPECS["accuracy"], _keyed(np.ones(30), "t"), _keyed(np.r_[np.zeros(15), np.ones(15)], "t"),
                          n_resamples=999)
    assert acc.verdict == WORSE and acc.regression_low > 0  # higher accuracy is better


def test_fail_on_parsing() -> None:
    assert parse_fail_on("far_p95:+50ms,audible:+0") == {"far_p95": 50.0, "audible": 0.0}
    assert parse_fail_on("accuracy:+5%") == {"accuracy": 0.05}
    for bad, msg in (("far_p95", "expected FIGURE"), ("speed:+3", "unknown figure"), ("audible:+1ms", "not in ms"),
                     ("", "no figure")):
        with pytest.raises(CompareError, match=msg):
            parse_fail_on(bad)


def test_repetitions_needed_scales_with_the_square_of_the_width() -> None:
    assert repetitions_for(needed_halfwidth(), 1) == 1
    assert repetitions_for(2 * needed_halfwidth(), 1) == 4
    assert repetitions_for(2 * needed_halfwidth(), 3) == 12


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("runs")
    calls = [plain_call(f"c{i}") for i in range(10)]  # 20 answered turns: enough for a p95 verdict
    slow = replace(Timing(), endpointing_ms=Timing().endpointing_ms + 200)  # the planted regression
    return {"a": write_run(out, calls=calls, seed=1, run_id="a"),
            "a2": write_run(out, calls=calls, seed=2, run_id="a2"),
            "slow": write_run(out, calls=calls, seed=3, run_id="slow", timing=slow)}


def test_cli_fail_on_exits_nonzero_on_a_planted_regression(runs: dict[str, Path], tmp_path: Path) -> None:
    cli = CliRunner()
    page = tmp_path / "cmp.html"
    res = cli.invoke(app, ["compare", str(runs["a"]), str(runs["slow"]), "--fail-on", "far_p95:+50ms,audible:+0",
                           "--resamples", "999", "--html", str(page)])
    assert res.exit_code == 1, res.output
    assert "worse" in res.output and "regression: slow vs a: FAR p95" in res.output
    assert "<img" in page.read_text() and "worse" in page.read_text()
    ok = cli.invoke(app, ["compare", str(runs["a"]), str(runs["a2"]), "--fail-on", "far_p95:+50ms,audible:+0",
                          "--resamples", "999"])
    assert ok.exit_code == 0, ok.output
    assert "FAR p50" in ok.output and "worse" not in ok.output


def test_cli_fail_on_that_cannot_decide_exits_with_its_own_code(tmp_path: Path) -> None:
    """A 6-turn run cannot decide a p95: the gate says so and exits 3, never 0 on no evidence."""
    few = [plain_call(f"c{i}") for i in range(3)]
    a = write_run(tmp_path, calls=few, seed=1, run_id="fa")
    b = write_run(tmp_path, calls=few, seed=2, run_id="fb")
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--fail-on", "far_p95:+50ms", "--resamples", "199"])
    assert res.exit_code == 3, res.output
    assert "cannot decide: fb vs fa: FAR p95: too few samples" in res.output


def test_cli_bad_input_is_one_line(runs: dict[str, Path], tmp_path: Path) -> None:
    cli = CliRunner()
    res = cli.invoke(app, ["compare", str(runs["a"]), str(tmp_path / "nope")])
    assert res.exit_code == 2 and res.output.strip().startswith("error:") and "nope" in res.output
    assert "Traceback" not in res.output
    res = cli.invoke(app, ["compare", str(runs["a"]), str(runs["a2"]), "--fail-on", "far:+1"])
    assert res.exit_code == 2 and "unknown figure 'far'" in res.output
    assert cli.invoke(app, ["compare", str(runs["a"])]).exit_code == 2


def _junit_cases(path: Path) -> list[tuple[str, str]]:
    """(name, kind) of every test case of a JUnit file: kind 'passed', 'failure' or 'error'."""
    from xml.etree import ElementTree as ET

    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        kind = next((k for k in ("failure", "error") if case.find(k) is not None), "passed")
        out.append((case.get("name", ""), kind))
    return out


def test_cli_junit_writes_each_gate_as_a_case_with_the_exit_status_unchanged(runs: dict[str, Path],
                                                                             tmp_path: Path) -> None:
    cli = CliRunner()
    res = cli.invoke(app, ["compare", str(runs["a"]), str(runs["slow"]), "--fail-on", "far_p95:+50ms,far_p50:+5000ms",
                           "--resamples", "999", "--junit", str(tmp_path / "slow.xml")])
    assert res.exit_code == 1, res.output
    assert _junit_cases(tmp_path / "slow.xml") == [("far_p95 +50ms", "failure"), ("far_p50 +5000ms", "passed")]
    ok = cli.invoke(app, ["compare", str(runs["a"]), str(runs["a2"]), "--fail-on", "far_p95:+50ms",
                          "--resamples", "999", "--junit", str(tmp_path / "ok.xml")])
    assert ok.exit_code == 0, ok.output
    assert _junit_cases(tmp_path / "ok.xml") == [("far_p95 +50ms", "passed")]


def test_cli_junit_a_gate_that_cannot_decide_is_an_error_never_a_pass(tmp_path: Path) -> None:
    """Too few turns for a p95, and a figure neither run measured (stop latency: no barge-ins): both errors, exit 3."""
    few = [plain_call(f"c{i}") for i in range(3)]
    a = write_run(tmp_path, calls=few, seed=1, run_id="fa")
    b = write_run(tmp_path, calls=few, seed=2, run_id="fb")
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--fail-on", "far_p95:+50ms,stop_p50:+50ms",
                                   "--resamples", "199", "--junit", str(tmp_path / "j.xml")])
    assert res.exit_code == 3, res.output
    assert _junit_cases(tmp_path / "j.xml") == [("far_p95 +50ms", "error"), ("stop_p50 +50ms", "error")]
    assert "stop latency p50: measured in neither run" in res.output


def test_cli_junit_needs_fail_on_and_a_file(runs: dict[str, Path], tmp_path: Path) -> None:
    cli = CliRunner()
    res = cli.invoke(app, ["compare", str(runs["a"]), str(runs["a2"]), "--junit", str(tmp_path / "j.xml")])
    assert res.exit_code == 2 and res.output.strip().startswith("error: --junit") and "--fail-on" in res.output
    res = cli.invoke(app, ["compare", str(runs["a"]), str(runs["a2"]), "--fail-on", "far_p50:+50",
                           "--resamples", "199", "--junit", str(tmp_path)])
    assert res.exit_code == 2 and "cannot write" in res.output and "Traceback" not in res.output
