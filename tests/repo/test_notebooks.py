"""The analysts' notebooks execute top to bottom against fresh run folders (a failing cell fails the test)."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from voicelab.runs import synthetic
from voicelab.runs.sweep import RUNNERS, SweepMatrix, run_sweep

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def execute(name: str, env: dict[str, str], cwd: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits the environment: that is how the notebooks get their input
    try:
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def outputs(nb: nbformat.NotebookNode) -> list[dict]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def test_notebooks_read_runs_only_through_load_run() -> None:
    for path in NOTEBOOKS.glob("*.ipynb"):
        src = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
        assert "load_run" in src
        for raw in ("read_events", "events.jsonl", "read_parquet", "summary.json", "pd.read_"):
            assert raw not in src, (path.name, raw)


@pytest.mark.slow
def test_latency_report_notebook(tmp_path: Path) -> None:
    run = synthetic.write_run(tmp_path, seed=5, config={"sampler": "revising"})
    nb = execute("latency_report.ipynb", {"VOICELAB_RUN": str(run)}, tmp_path)
    outs = outputs(nb)
    assert sum("image/png" in o.get("data", {}) for o in outs) >= 4  # CDF, breakdown, truth, waterfall, canvas
    assert any(run.name in o.get("text", "") for o in outs)  # it read the run we gave it


@pytest.mark.slow
def test_policy_sweep_notebook(tmp_path: Path) -> None:
    grid = SweepMatrix(policies=("prefix", "final"), samplers=("low_confidence", "revising"), fixtures=("default",))
    run_sweep(grid, tmp_path / "sweep", RUNNERS["synthetic"], echo=lambda _: None)
    nb = execute("policy_sweep.ipynb", {"VOICELAB_SWEEP": str(tmp_path / "sweep")}, tmp_path)
    outs = outputs(nb)
    assert sum("image/png" in o.get("data", {}) for o in outs) >= 3  # Pareto, CDFs, breakdown
    assert any("4 runs" in o.get("text", "") for o in outs)
