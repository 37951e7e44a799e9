"""Repetitions: call ids carry the repetition, sweeps pool repetitions into one run folder per cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from voicelab.pipeline.config import PipelineConfigError
from voicelab.runs.calls import as_config
from voicelab.runs.matrix import CellSpec, SweepError, SweepMatrix
from voicelab.runs.plan import call_ids
from voicelab.runs.sweep import RUNNERS, run_sweep


class _Named:
    """call_ids reads only a fixture's `.name` (a real Fixture needs recorded clips)."""

    def __init__(self, name: str) -> None:
        self.name = name


def test_call_ids_name_the_repetition() -> None:
    fx = [_Named("alpha"), _Named("beta")]
    assert [c for c, _ in call_ids(fx)] == ["00-alpha", "01-beta"]  # one play keeps the old names
    assert [c for c, _ in call_ids(fx, 2)] == ["r1-00-alpha", "r1-01-beta", "r2-00-alpha", "r2-01-beta"]
    with pytest.raises(PipelineConfigError, match="--repeat 0"):
        call_ids(fx, 0)


def test_repeat_is_not_a_pipeline_setting() -> None:
    cell = CellSpec("diffusion", None, "pinned", repeat=3)
    assert cell.config()["repeat"] == 3
    assert as_config(cell.config()).policy == "pinned"
    assert "repeat" not in CellSpec("diffusion", None, "pinned").config()  # old sweeps keep their cell ids
    with pytest.raises(SweepError, match="--repeat 0"):
        SweepMatrix(repeat=0)


def test_sweep_pools_repetitions_into_one_run_folder(tmp_path: Path) -> None:
    grid = SweepMatrix(policies=("prefix",), fixtures=("plain",), repeat=3)
    res = run_sweep(grid, tmp_path, RUNNERS["synthetic"], echo=lambda _: None)
    (run,) = res.runs.values()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["calls"] == 3 and summary["turns"] == 6
    assert sorted(p.stem for p in (run / "calls").glob("*.wav")) == ["r1-plain-plain", "r2-plain-plain",
                                                                      "r3-plain-plain"]
    assert summary["far_ms"]["n"] == 6 and summary["far_ms"]["p50_ci"] is not None
