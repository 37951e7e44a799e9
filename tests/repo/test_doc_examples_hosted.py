"""A hosted engine against the mock engine, the probe, and docs/engine-profiles.md's long-answer matrix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.repo.test_doc_examples import (  # noqa: F401 - the autouse fixture stops what a test started
    T_HOSTED,
    T_SLOW_MATRIX,
    Job,
    Server,
    _stop_what_the_test_started,
    all_ran,
    free_port,
    run,
    run_folders,
    workdir,
)


@pytest.mark.slow
def test_hosted_engine_against_the_mock_engine_and_probe(tmp_path: Path) -> None:
    work, pwork = workdir(tmp_path / "hosted"), workdir(tmp_path / "probe")
    port = free_port()
    probe = Job("voicelab probe profile:mercury-2", pwork)
    mock = Server("voicelab mock-engine", work, {"voicelab mock-engine": f"voicelab mock-engine --port {port}"},
                  port, "/v1/models")
    try:
        status, body = mock.wait_up()
        assert status == 200 and json.loads(body)["data"], body
        run("voicelab run weekly_hours --stt transcript --engine openai:gemini-2.5-flash "
            "--base-url http://127.0.0.1:8808/v1", work, {":8808/": f":{port}/"})
    finally:
        mock.stop()
    (hosted,) = run_folders(work / "runs")
    assert json.loads((hosted / "summary.json").read_text(encoding="utf-8"))["far_ms"]["n"] >= 1
    probe.finish()
    assert (pwork / "runs" / "probe" / "profile-mercury-2" / "probe.json").is_file()
    all_ran(T_HOSTED)


@pytest.mark.slow
def test_slow_long_answer_profile_matrix(tmp_path: Path) -> None:
    work = workdir(tmp_path / "matrix")
    run("voicelab run weekly_hours --stt transcript --matrix profiles:gpt-4.1-mini", work)
    assert len(run_folders(work / "runs")) == 2  # pinned and final
    all_ran(T_SLOW_MATRIX)
