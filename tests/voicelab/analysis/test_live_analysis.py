"""Analysis on fresh real runs: a tiny sweep through the real pipeline, then the notebooks, the
report and the WAV analyzer read what it wrote (marked slow: about a minute of real-time calls)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.repo.test_notebooks import execute, outputs
from voicelab.analysis import load_run
from voicelab.analysis.report import build_report
from voicelab.measure.truth import analyze_run
from voicelab.runs.sweep import RUNNERS, SweepMatrix, run_sweep

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("live") / "sweep"
    grid = SweepMatrix(policies=("pinned", "final"), fixtures=("single_question",))
    run_sweep(grid, out, RUNNERS["pipeline"], echo=lambda _: None)
    return out


def _runs(sweep: Path) -> list[Path]:
    return sorted(p.parent for p in sweep.rglob("summary.json"))


def test_sweep_of_real_runs_has_figures(sweep_dir: Path) -> None:
    runs = _runs(sweep_dir)
    assert len(runs) == 2
    for run in runs:
        s = json.loads((run / "summary.json").read_text())
        assert s["far_ms"]["n"] >= 1 and 100 < s["far_ms"]["p50"] < 5000
        assert s["truth"]["far_abs_diff_ms_p95"] is not None and s["truth"]["far_abs_diff_ms_p95"] <= 20
        rows = analyze_run(run)
        assert any(r["far_ms"] is not None for r in rows)


def test_notebooks_execute_on_fresh_real_runs(sweep_dir: Path, tmp_path: Path) -> None:
    run = _runs(sweep_dir)[0]
    nb = execute("latency_report.ipynb", {"VOICELAB_RUN": str(run)}, tmp_path)
    assert sum("image/png" in o.get("data", {}) for o in outputs(nb)) >= 3
    nb = execute("policy_sweep.ipynb", {"VOICELAB_SWEEP": str(sweep_dir)}, tmp_path)
    assert sum("image/png" in o.get("data", {}) for o in outputs(nb)) >= 2


def test_report_renders_a_real_run(sweep_dir: Path, tmp_path: Path) -> None:
    run = _runs(sweep_dir)[0]
    data = load_run(run)
    assert len(data.events) > 0 and len(data.turns) >= 1
    html = build_report(run, tmp_path / "r.html")
    text = Path(html).read_text()
    assert "data:image/png;base64," in text and "http://" not in text.replace("http://www.w3.org", "")
