"""End to end against an agent the lab did not write: examples/pipecat_phone_agent.py (pipecat's own transport,
Twilio serializer, Whisper and Piper services on the packaged weights), started on loopback as its own process,
called by `voicelab call`: a FAR for every caller turn and the agent's words read back."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tests.voicelab.call.test_helpers import free_port
from voicelab.analysis.tables import is_finished
from voicelab.cli.call import call

ROOT = Path(__file__).resolve().parents[3]


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the reference agent exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"the reference agent did not listen on {port} within {timeout_s:g} s")


@pytest.mark.slow
def test_reference_pipecat_agent_end_to_end(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "examples" / "pipecat_phone_agent.py"), "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_port(port, proc)
        app = typer.Typer()
        app.command()(call)
        res = CliRunner().invoke(app, [f"ws://127.0.0.1:{port}/media-stream", "single_question",
                                       "--out", str(tmp_path)])
    finally:
        proc.terminate()
        proc.wait(10)
    assert res.exit_code == 0, res.stderr
    run = next(tmp_path.iterdir())
    assert is_finished(run)
    summary = json.loads((run / "summary.json").read_text())
    meta = json.loads(next((run / "calls").glob("*.json")).read_text())
    assert meta["status"] == "ok"
    assert summary["far_ms"]["n"] == len(meta["utterances"]) == 1 and summary["far_ms"]["p50"] > 0
    assert summary["truth"]["far_abs_diff_ms_p95"] <= 20
    replies = {r["turn"]: r for r in meta["readback"]}
    assert "said" in replies[0]["text"]  # the echo brain: "you said ..."
    assert summary["answers"]["n"] == 1 and summary["answers"]["correct"] == 0.0  # an echo is no answer
    assert summary["line"]["agent_media_messages"] > 50
