"""`voicelab run --ray ADDRESS`: calls as Ray tasks, one run folder written by the driver.

The refusals and the driver's bookkeeping (plan order, a failed task as an error row, one join for a matrix)
run without Ray; one slow test plays two real calls on a private Ray instance.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from engines.local.engine import TINY_MODELS
from voicelab.analysis.tables import is_finished
from voicelab.cli.app import app
from voicelab.measure.events import Event, read_events
from voicelab.measure.machine_load import CpuUse, LoopLag, MachineLoad
from voicelab.pipeline.config import PipelineConfig
from voicelab.runs import cluster
from voicelab.runs.calls import run_fixtures
from voicelab.runs.folder import CONFIG, EVENTS, SUMMARY, RunFolder
from voicelab.runs.ray_dispatch import run_calls_ray

RUN = ["run", "single_question", "--stt", "transcript"]


@pytest.mark.parametrize(("extra", "needles"), [
    pytest.param(["--ray", "127.0.0.1:1"], ["--ray 127.0.0.1:1", "no cluster answers"], id="nothing listening"),
    pytest.param(["--ray", "local", "--concurrency", "2"], ["--concurrency 2", "--ray local"], id="with concurrency"),
    pytest.param(["--ray", "local", "--cpus-per-task", "0"], ["--cpus-per-task"], id="no cpus"),
])
def test_run_ray_refusals_give_one_line_and_no_run_folder(tmp_path: Path, extra: list[str],
                                                          needles: list[str]) -> None:
    out = tmp_path / "runs"
    result = CliRunner().invoke(app, [*RUN, *extra, "--out", str(out)])
    err = result.stderr.strip()
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert all(n in err for n in needles), err
    assert not (out.is_dir() and any(out.iterdir()))  # no run folder


class _FakeRay:
    """Enough of `ray` for the driver: tasks run at submission; `wait` hands them back last first."""

    def __init__(self, fail: set[str]) -> None:
        self.fail = fail
        # what each task's probe read: alpha on a quiet machine, gamma beside another job
        self.loads = {"00-alpha": MachineLoad(LoopLag(0.5, 2.0, 4.0, 100), CpuUse(0.05, 0.3, 2), 10.0),
                      "02-gamma": MachineLoad(LoopLag(3.0, 25.0, 60.0, 100), CpuUse(0.6, 0.3, 2), 10.0)}
        self.inits = self.shutdowns = 0
        self.initialized = False

    def init(self, **_: Any) -> None:
        self.inits += 1
        self.initialized = True

    def shutdown(self) -> None:
        self.shutdowns += 1
        self.initialized = False

    def is_initialized(self) -> bool:
        return self.initialized

    def remote(self, **_: Any) -> Callable[[Callable[..., Any]], SimpleNamespace]:
        return lambda fn: SimpleNamespace(remote=self._submit)

    def _submit(self, cfg: PipelineConfig, fixture_path: str, call_id: str, call_kw: dict[str, Any]) -> str:
        return call_id

    def wait(self, refs: list[str], num_returns: int = 1) -> tuple[list[str], list[str]]:
        return refs[-1:], refs[:-1]

    def get(self, ref: str) -> dict[str, Any]:
        if ref in self.fail:
            raise RuntimeError("worker exploded")
        return {"events": [Event(ref, -1, 0, "call_start"), Event(ref, 0, 5, "call_end")],
                "stereo": np.zeros((160, 2), dtype=np.int16), "sample_rate": 16000, "meta": {"fixture": ref},
                "warnings": "", "machine": self.loads.get(ref)}


def test_driver_writes_events_in_plan_order_and_a_failed_task_as_an_error_row(tmp_path: Path) -> None:
    fixtures = [SimpleNamespace(name=n, path=tmp_path / n / "fixture.json") for n in ("alpha", "beta", "gamma")]
    folder = RunFolder.create(tmp_path / "run")
    ray = _FakeRay(fail={"01-beta"})
    with folder.events_writer() as writer:
        events, machine = run_calls_ray(ray, PipelineConfig(), fixtures, folder, writer, None, concurrency=1)
    assert [e.call_id for e in events] == ["00-alpha", "00-alpha", "01-beta", "02-gamma", "02-gamma"]
    assert [e.call_id for e in read_events(folder.path / EVENTS)] == [e.call_id for e in events]
    err = events[2]
    assert err.kind == "error" and err.payload == {"where": "call", "message": "RuntimeError: worker exploded"}
    assert sorted(p.name for p in (folder.path / "calls").glob("*.wav")) == ["00-alpha.wav", "02-gamma.wav"]
    # each task measured its own call's machine: the run reads as its busiest call
    assert machine is ray.loads["02-gamma"] and machine.verdict == "busy"


def test_nested_joins_share_one_ray_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeRay(set())
    monkeypatch.setitem(sys.modules, "ray", fake)
    with cluster.joined("local") as outer:
        with cluster.joined("local") as inner:  # a matrix: each configuration's run joins again
            assert inner is outer and fake.inits == 1
        assert fake.shutdowns == 0 and fake.is_initialized()
    assert fake.inits == 1 and fake.shutdowns == 1 and not fake.is_initialized()


@pytest.mark.slow
def test_two_calls_on_local_ray_make_one_sealed_run_folder(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    if not (TINY_MODELS["diffusion"] / "config.json").is_file():
        pytest.skip("engines/tiny holds no trained diffusion model yet")
    # one call at a time (one CPU, one per call): what this test is for, one sealed folder from Ray tasks, needs
    # no overlap, and two real-time pipelines at once load the machine twice
    try:
        root = run_fixtures(["single_question"], [PipelineConfig(stt="transcript")], tmp_path, repeat=2,
                            ray_address="local", ray_init={"num_cpus": 1, "include_dashboard": False},
                            console=Console(file=io.StringIO(), width=160))
        assert not ray.is_initialized()  # the run shut its instance down
    finally:
        if ray.is_initialized():
            ray.shutdown()
    assert is_finished(root)
    config = json.loads((root / CONFIG).read_text())
    assert config["ray"] == "local" and config["cpus_per_call"] == 1.0 and config["repeat"] == 2
    plan = ["r1-00-single_question", "r2-00-single_question"]
    events = read_events(root / EVENTS)
    assert [c for i, c in enumerate(e.call_id for e in events) if i == 0 or events[i - 1].call_id != c] == plan
    assert not [e for e in events if e.kind == "error"]
    assert sorted(p.stem for p in (root / "calls").glob("*.wav")) == plan
    summary = json.loads((root / SUMMARY).read_text())
    assert summary["calls"] == 2 and summary["turns"] == 2
    assert summary["machine"]["verdict"] in ("quiet", "busy") and summary["machine"]["loop_lag_ms"]["n"] > 0
    # every caller clip played in both calls; whether the bot answered within the caller's patience is the
    # machine's: beside the suite's other worker and a busy loop, a cold Ray worker's first call ran its VAD
    # 18 s behind the caller's audio and ended unanswered (the summary counts only the turns answered)
    for call in plan:
        kinds = {e.kind for e in events if e.call_id == call}
        assert {"caller_clip_start", "caller_clip_end", "call_end"} <= kinds
    answered = {e.call_id for e in events if e.kind == "bot_audible_onset" and e.turn == 0}
    assert summary["far_ms"]["n"] == len(answered)
