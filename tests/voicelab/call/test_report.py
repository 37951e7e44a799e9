"""A line run in `voicelab report` and `voicelab compare`: what the audio supports is shown, the rest reads
"not measured", never 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.voicelab.call.test_helpers import ToneAgent, serving
from voicelab.analysis import load_run
from voicelab.analysis.compare import NOT_MEASURED, compare_runs, row_cells
from voicelab.analysis.report import build_report
from voicelab.call.line_run import load_line_fixtures, run_line_calls
from voicelab.measure.figures import line_not_measured


@pytest.mark.slow
def test_report_and_compare_mark_what_the_line_cannot_see(tmp_path: Path) -> None:
    with serving(ToneAgent()) as url:
        run, _ = run_line_calls(url, load_line_fixtures(["single_question"]), tmp_path, readback=False)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["false_cut_ins"] == 0 and "false_cut_ins" not in summary["not_measured"]  # from the recording
    assert [k for k in summary["not_measured"] if k != "answers"] == list(line_not_measured())
    for key in ("stt_wer", "tool_calls", "revisions", "answers", "far_breakdown_ms"):
        assert summary[key] is None and key in summary["not_measured"]
    page = build_report(run).read_text()
    assert "The phone line" in page and page.count(NOT_MEASURED) >= 4
    data = load_run(run)
    c = compare_runs(data, data, n_resamples=200)
    rows = {r.spec.name: row_cells(r) for r in c.rows}
    assert rows["far_p50"][-1] != NOT_MEASURED
    for name in ("first_token_to_audio_p50", "audible", "accuracy"):
        assert rows[name][1:3] == [NOT_MEASURED, NOT_MEASURED] and rows[name][-1] == NOT_MEASURED
