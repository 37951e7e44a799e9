"""The machine probe on a made-up clock and made-up kernel counters, and where its reading goes: config.json,
summary.json, the console, the results page and `voicelab compare`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from voicelab.analysis.results_md import find_entries, render_results
from voicelab.cli.app import app
from voicelab.measure.events import read_events
from voicelab.measure.machine_load import BUSY, QUIET, CpuTicks, CpuUse, LoopLag, MachineLoad
from voicelab.runs.calls import finish_run
from voicelab.runs.console import BUSY_MARK, print_summary
from voicelab.runs.folder import CONFIG, EVENTS, SUMMARY, RunFolder
from voicelab.runs.machine_probe import MachineProbe
from voicelab.runs.synthetic import plain_call, write_run


class FakeTime:
    """A clock that moves only when the probe sleeps: each sleep lasts what was asked plus the next delay."""

    def __init__(self, delays_s: list[float]) -> None:
        self.now = 100.0
        self.delays = list(delays_s)
        self.slept = 0

    def clock(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        self.slept += 1
        if not self.delays:
            await asyncio.Event().wait()  # the run is over: wait to be cancelled
        self.now += s + self.delays.pop(0)


def _probe_run(delays_s: list[float], ticks: list[CpuTicks | None]) -> MachineLoad:
    fake = FakeTime(delays_s)
    readings = iter(ticks)
    probe = MachineProbe(ticks=lambda: next(readings), clock=fake.clock, sleep=fake.sleep, cores=2)

    async def run() -> None:
        async with probe:
            while fake.delays:
                await asyncio.sleep(0)

    asyncio.run(run())
    return probe.load()


def test_the_probe_records_how_late_each_timer_fired_and_the_cpu_between_its_readings() -> None:
    delays = [0.001, 0.002, 0.0, 0.030, 0.001]
    load = _probe_run(delays, [CpuTicks(0, 0, 0), CpuTicks(busy=150, total=200, own=40)])
    assert load.lag is not None and load.lag.n == len(delays)
    assert load.lag.max_ms == pytest.approx(30.0) and load.lag.p50_ms == pytest.approx(1.0)
    assert load.cpu == CpuUse(others=0.55, own=0.2, cores=2)
    assert load.seconds > 0 and load.verdict == BUSY  # others took 1.1 cores, the loop ran late


def test_a_timer_late_by_whole_periods_is_one_sample_and_the_next_is_due_a_period_later() -> None:
    load = _probe_run([0.055, 0.0], [None, None])
    assert load.lag is not None and load.lag.n == 2
    assert (load.lag.p50_ms, load.lag.p95_ms, load.lag.max_ms) == pytest.approx((27.5, 52.25, 55.0))
    assert load.cpu is None  # no kernel counters: the share is unknown, the lag decides
    assert load.verdict == BUSY


def _machine(verdict: str) -> MachineLoad:
    others = 0.5 if verdict == BUSY else 0.01
    return MachineLoad(LoopLag(2.0, 14.0, 30.0, 900), CpuUse(others=others, own=0.4, cores=2), 9.0)


def test_finish_run_puts_the_reading_in_the_summary_and_the_config(tmp_path: Path) -> None:
    run = write_run(tmp_path, calls=[plain_call("c0")], run_id="r", finish=False)
    finish_run(RunFolder(run), read_events(run / EVENTS), {"engine": "diffusion"}, machine=_machine(BUSY))
    summary, config = (json.loads((run / f).read_text()) for f in (SUMMARY, CONFIG))
    assert summary["machine"]["verdict"] == BUSY and summary["machine"]["others_cpu_share"] == 0.5
    assert config["machine_load"] == summary["machine"] and config["run_id"] == "r"


def test_the_console_marks_a_busy_runs_figures_and_says_why(tmp_path: Path) -> None:
    busy = write_run(tmp_path, calls=[plain_call("c0")], run_id="busy", machine=_machine(BUSY))
    quiet = write_run(tmp_path, calls=[plain_call("c0")], run_id="quiet", machine=_machine(QUIET))
    console = Console(record=True, width=200)
    print_summary(console, [json.loads((r / SUMMARY).read_text()) for r in (busy, quiet)])
    text = console.export_text()
    assert text.count(BUSY_MARK.strip()) == 1 and "quiet" in text and "busy machine busy: busy: loop lag p95 14 ms" in text
    assert "quiet: loop lag p95 14 ms" in text  # the machine row of the overall table


def test_the_results_page_states_each_runs_machine_load(tmp_path: Path) -> None:
    write_run(tmp_path, calls=[plain_call("c0")], run_id="busy", machine=_machine(BUSY))
    write_run(tmp_path, calls=[plain_call("c0")], run_id="old")
    page = render_results(find_entries([tmp_path]), tmp_path / "results.md")
    assert "- machine load: busy: loop lag p95 14 ms (max 30), others took 50 % of 2 cores" in page
    assert "- machine load: not measured" in page


def test_compare_refuses_busy_against_quiet_unless_allowed(tmp_path: Path) -> None:
    calls = [plain_call(f"c{i}") for i in range(3)]
    quiet = write_run(tmp_path, calls=calls, run_id="quiet", machine=_machine(QUIET))
    busy = write_run(tmp_path, calls=calls, run_id="busy", machine=_machine(BUSY))
    old = write_run(tmp_path, calls=calls, run_id="old")
    cli = CliRunner()
    res = cli.invoke(app, ["compare", str(quiet), str(busy), "--resamples", "99"])
    assert res.exit_code == 3, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"cannot decide: {busy} ran on a busy machine"), res.output
    assert "Traceback" not in res.output
    ok = cli.invoke(app, ["compare", str(quiet), str(busy), "--allow-busy", "--resamples", "99"])
    assert ok.exit_code == 0, ok.output
    assert "note: busy machine: busy:" in ok.output
    assert cli.invoke(app, ["compare", str(old), str(busy), "--resamples", "99"]).exit_code == 0
