"""benchmarks/busy_machine.py on a tiny input: synthetic runs instead of the pipeline, a sleeping process instead of
a busy loop (the test loads no core), and its refusal to start on a machine that is not quiet."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

from voicelab.measure.machine_load import CpuUse, LoopLag, MachineLoad
from voicelab.runs.synthetic import plain_call, write_run

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"
SLEEPER = (sys.executable, "-c", "import time; time.sleep(60)")


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("busy_machine")


def _play(loops: int, run_dir: Path) -> Path:
    """A synthetic run whose machine reading says what `loops` busy loops would do on 2 cores."""
    others = 0.01 + 0.5 * loops
    machine = MachineLoad(LoopLag(1.0, 2.0 + loops, 5.0, 300), CpuUse(min(others, 0.55), 0.4, 2), 3.0)
    return write_run(run_dir.parent, calls=[plain_call("c0"), plain_call("c1")], run_id=run_dir.name,
                     machine=machine)


def test_each_condition_is_a_row_with_its_figures_and_verdict(bench: ModuleType, tmp_path: Path) -> None:
    rows = bench.measure([0, 1], _play, tmp_path, spin=SLEEPER)
    assert [r["busy_loops"] for r in rows] == [0, 1]
    assert [r["verdict"] for r in rows] == ["quiet", "busy"]
    assert all(r["calls"] == 2 and r["far_n"] and r["error_rows"] == 0 and r["false_cut_ins"] == 0 for r in rows)
    assert rows[1]["others_cpu_share"] == 0.51 and rows[1]["loop_lag_ms"]["p95"] == 3.0
    table = bench.markdown({"date": "2026-12-06T08:00:00+00:00", "cpu_count": 2, "command": "benchmarks/x",
                            "conditions": rows})
    assert table.count("\n| ") == 3  # the header and a row per condition
    assert "| 1 | " in table and "| 51 % of 2 | busy |" in table


def test_the_busy_loops_end_with_the_block(bench: ModuleType) -> None:
    with bench.busy_loops(2, SLEEPER) as procs:
        assert len(procs) == 2 and all(p.poll() is None for p in procs)
    assert all(p.poll() is not None for p in procs)


def test_it_will_not_start_on_a_machine_that_is_not_quiet(bench: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(bench, "others_now", lambda settle_s: 1.2)
    assert bench.main(["--settle-s", "0"]) == bench.EXIT_NOT_QUIET
    err = capsys.readouterr().err.strip()
    assert err.startswith("the machine is not quiet: others took 1.20 cores") and "\n" not in err
    assert bench.main(["--loops", "1,x"]) == 2
