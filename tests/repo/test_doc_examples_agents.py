"""docs/scenarios.md's booking agent and docs/own-calls.md's CI job, each against a local agent on a free port."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.repo.test_doc_examples import (  # noqa: F401 - the autouse fixture stops what a test started
    T_CI,
    T_SCENARIO,
    Server,
    _stop_what_the_test_started,
    all_ran,
    free_port,
    run,
    run_folders,
    workdir,
)


@pytest.mark.slow
def test_scenario_calls_to_the_booking_agent(tmp_path: Path) -> None:
    """docs/scenarios.md: the mock engine, the booking agent on it, the scenario fixture as a listening caller
    and as its fixed script, and the two runs compared."""
    work = workdir(tmp_path / "scenario")
    llm, agent_port = free_port(), free_port()
    mock = Server("voicelab mock-engine --port 8808", work, {"8808": str(llm)}, llm, "/v1/models")
    agent = Server("python examples/pipecat_booking_agent.py --port 8766", work,
                   {"--port 8766": f"--port {agent_port} --llm-url http://127.0.0.1:{llm}/v1"}, agent_port)
    try:
        mock.wait_up()
        agent.wait_up()
        line = {"127.0.0.1:8766": f"127.0.0.1:{agent_port}"}
        run("voicelab call ws://127.0.0.1:8766/media-stream booking_table_scenario", work, line)
        (listen,) = run_folders(work / "runs")
        run("voicelab call ws://127.0.0.1:8766/media-stream booking_table_scenario --no-listen", work, line)
        (script,) = [r for r in run_folders(work / "runs") if r != listen]
        run("voicelab compare runs/SCRIPT runs/LISTEN", work, {"runs/SCRIPT": str(script), "runs/LISTEN": str(listen)},
            ok=(0, 1, 3))
    finally:
        agent.stop()
        mock.stop()
    assert json.loads((listen / "summary.json").read_text(encoding="utf-8"))["tasks"]["done"] == 1
    assert json.loads((script / "summary.json").read_text(encoding="utf-8"))["tasks"] is None
    all_ran(T_SCENARIO)


@pytest.mark.slow
def test_ci_call_and_compare_with_junit(tmp_path: Path) -> None:
    """docs/own-calls.md, In CI: the reference agent called with examples/ci/fixtures, compared with the baseline."""
    work = workdir(tmp_path / "ci")
    port = free_port()
    agent = Server("python examples/pipecat_phone_agent.py --port 8765", work, {"8765": str(port)}, port)
    try:
        agent.wait_up()
        run("voicelab call ws://127.0.0.1:8765/media-stream examples/ci/fixtures --repeat 6 --out ci-out/runs "
            "--junit ci-out/call.xml --fail-on-expectations", work, {"8765": str(port), "--repeat 6": "--repeat 2"},
            ok=(0, 1))
    finally:
        agent.stop()
    (call_run,) = run_folders(work / "ci-out" / "runs")
    checks = json.loads((call_run / "summary.json").read_text(encoding="utf-8"))["answers"]["expectations"]
    assert (work / "ci-out" / "call.xml").read_text(encoding="utf-8").count("<testcase ") >= checks == 18
    run("voicelab compare examples/ci/baseline ci-out/runs/RUN --fail-on far_p50:+200ms --junit ci-out/compare.xml",
        work, {"ci-out/runs/RUN": str(call_run)}, ok=(0, 1, 3))
    assert (work / "ci-out" / "compare.xml").read_text(encoding="utf-8").count("<testcase ") == 1
    all_ran(T_CI)
