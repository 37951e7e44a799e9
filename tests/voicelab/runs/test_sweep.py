"""Sweeps: the grid, resuming after a kill, failed cells, the Pareto table, and a tiny sweep on local Ray."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from voicelab.runs import synthetic
from voicelab.runs.sweep import (
    RUNNERS,
    CellSpec,
    SweepError,
    SweepMatrix,
    _pareto_mask,
    finished_run,
    parse_shaper,
    run_sweep,
)

GRID = SweepMatrix(engines=("diffusion", "ar"), samplers=(None, "low_confidence", "autoregressive"),
                 policies=("prefix", "final"), fixtures=("plain",))


def quiet(_: str) -> None:
    pass


def test_grid_skips_incompatible_pairs_and_names_cells_uniquely() -> None:
    cells = GRID.cells()
    pairs = {(c.engine, c.sampler) for c in cells}
    assert pairs == {("diffusion", None), ("diffusion", "low_confidence"), ("ar", None), ("ar", "autoregressive")}
    assert len(cells) == 8 and len({c.cell_id for c in cells}) == 8
    assert cells == GRID.cells()  # stable order and ids: what resuming relies on
    with pytest.raises(SweepError, match="--policy 'stable'"):
        SweepMatrix(policies=("stable",))
    with pytest.raises(SweepError, match="no compatible"):
        SweepMatrix(engines=("ar",), samplers=("threshold",)).cells()


def test_parse_shaper() -> None:
    assert parse_shaper("default") == ()
    assert parse_shaper("max_hold_ms=150, min_words=2") == (("max_hold_ms", 150.0), ("min_words", 2))
    assert parse_shaper("first_chunk_short=false") == (("first_chunk_short", False),)
    for bad, msg in (("min_words", "key=value"), ("speed=2", "unknown setting 'speed'"),
                     ("min_words=two", "needs a int"), ("min_words=9,max_words=3", "max_words")):
        with pytest.raises(SweepError, match=msg):
            parse_shaper(bad)


class Killer:
    """A runner that dies like a killed process on its nth cell, after leaving a half-written run."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls: list[str] = []

    def __call__(self, cell: CellSpec, out: Path) -> Path:
        self.calls.append(cell.cell_id)
        if len(self.calls) == self.n:
            synthetic.write_run(out, calls=[synthetic.plain_call()], run_id="partial", finish=False)
            raise KeyboardInterrupt
        return synthetic.synthetic_cell_runner(cell, out)


def test_resume_after_an_interrupted_sweep(tmp_path: Path) -> None:
    cells = GRID.cells()
    first = Killer(3)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(GRID, tmp_path, first, echo=quiet)
    assert first.calls == [c.cell_id for c in cells[:3]]
    assert finished_run(tmp_path / "cells" / cells[2].cell_id) is None  # the killed cell is unfinished

    again = Killer(0)
    lines: list[str] = []
    res = run_sweep(GRID, tmp_path, again, echo=lines.append)
    assert again.calls == [c.cell_id for c in cells[2:]]  # finished cells skipped, the killed one redone
    assert res.skipped == [c.cell_id for c in cells[:2]] and res.ran == again.calls and not res.failed
    assert not (tmp_path / "cells" / cells[2].cell_id / "partial").exists()  # the half-written run was cleared
    assert any("one after another" in line for line in lines)
    matrix = json.loads((tmp_path / "matrix.json").read_text())
    assert [m["cell_id"] for m in matrix] == [c.cell_id for c in cells]
    assert {"far_ms", "revisions", "truth", "label"} <= set(matrix[0])
    pareto = pd.read_csv(tmp_path / "pareto.csv")
    assert len(pareto) == len(cells)  # one fixture per configuration here
    assert (tmp_path / "pareto.png").stat().st_size > 1000

    third = Killer(0)
    res = run_sweep(GRID, tmp_path, third, echo=quiet)
    assert third.calls == [] and len(res.skipped) == len(cells)


def test_a_failing_cell_is_reported_and_retried(tmp_path: Path) -> None:
    grid = SweepMatrix(policies=("prefix", "final"), fixtures=("plain",))
    bad = grid.cells()[1].cell_id

    def flaky(cell: CellSpec, out: Path) -> Path:
        if cell.cell_id == bad:
            raise RuntimeError("engine exploded")
        return synthetic.synthetic_cell_runner(cell, out)

    res = run_sweep(grid, tmp_path, flaky, echo=quiet)
    assert res.failed == {bad: "engine exploded"} and len(res.ran) == 1
    res = run_sweep(grid, tmp_path, RUNNERS["synthetic"], echo=quiet)
    assert res.ran == [bad] and not res.failed


def test_pareto_frontier() -> None:
    df = pd.DataFrame({"far_p50_ms": [500.0, 700.0, 600.0, 650.0, float("nan")],
                       "audible_per_100_words": [2.0, 0.0, 1.0, 1.5, 0.0]})
    assert _pareto_mask(df) == [True, True, True, False, False]


def test_pooled_fixtures_make_one_point_per_configuration(tmp_path: Path) -> None:
    grid = SweepMatrix(policies=("prefix", "final"), fixtures=("plain", "barge_in"))
    res = run_sweep(grid, tmp_path, RUNNERS["synthetic"], echo=quiet)
    assert len(res.cells) == 4 and len(res.pareto) == 2
    assert list(res.pareto["cells"]) == [2, 2]
    by_policy = res.pareto.set_index("policy")
    assert by_policy.loc["final", "far_p50_ms"] > by_policy.loc["prefix", "far_p50_ms"]
    assert res.pareto["pareto"].sum() >= 1


@pytest.mark.slow
def test_tiny_sweep_on_local_ray(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    grid = SweepMatrix(policies=("prefix", "final"), fixtures=("plain",))
    lines: list[str] = []
    res = run_sweep(grid, tmp_path, RUNNERS["synthetic"], ray_address="local",
                    ray_init={"num_cpus": 1, "include_dashboard": False}, echo=lines.append)
    assert sorted(res.ran) == sorted(c.cell_id for c in grid.cells()) and not res.failed
    assert any("concurrent calls on one small machine disturb latencies" in line for line in lines)
    assert not ray.is_initialized()  # the sweep shut its instance down
    for c in grid.cells():
        assert finished_run(tmp_path / "cells" / c.cell_id) is not None
