"""`voicelab call` against the lab's own pipeline on the line: `voicelab serve` answers a media stream at
/media-stream (pipecat's WebSocket transport and Twilio serializer around the browser demo's pipeline)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tests.voicelab.call.agent_process import serving
from voicelab.analysis.tables import is_finished
from voicelab.cli.call import call
from voicelab.web.media_stream import PATH


@pytest.mark.slow
def test_call_measures_the_labs_own_media_stream_endpoint(tmp_path: Path) -> None:
    with serving([sys.executable, "-m", "voicelab.cli.app", "serve"], timeout_s=120) as (port, _):
        app = typer.Typer()
        app.command()(call)
        res = CliRunner().invoke(app, [f"ws://127.0.0.1:{port}{PATH}", "single_question", "--out", str(tmp_path),
                                       "--no-readback"])
    assert res.exit_code == 0, res.stderr
    run = next(tmp_path.iterdir())
    assert is_finished(run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["calls_failed"] == 0
    assert summary["far_ms"]["n"] == 1 and summary["far_ms"]["p50"] > 0  # the lab's greeting, then its answer
    assert summary["line"]["agent_media_messages"] > 50 and summary["line"]["clears"] >= 1  # clear on turn start
    assert summary["line"]["queue_depth_ms"]["n"] > 0
