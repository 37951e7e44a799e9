"""The live demo's servers and the phone line (docs/live-demo.md, docs/phone-line.md, README): one test, one module,
so that the xdist worker that takes this file (`--dist loadfile`) runs it beside the other example files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.repo.test_doc_examples import (  # noqa: F401 - the autouse fixture stops what a test started
    RAN,
    T_LINE,
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
def test_live_demo_servers_and_the_phone_line(tmp_path: Path) -> None:
    ports = {k: free_port() for k in ("serve", "ar", "host", "agent")}
    serve_cmd = f"voicelab serve --port {ports['serve']}"
    servers = {
        # `voicelab serve` and `voicelab serve --port 8000` become the same command: one server for both
        "serve": Server("voicelab serve", workdir(tmp_path / "serve"), {"voicelab serve": serve_cmd},
                        ports["serve"]),
        "ar": Server("voicelab serve --engine ar --policy prefix", workdir(tmp_path / "serve_ar"),
                     {"--policy prefix": f"--policy prefix --port {ports['ar']}"}, ports["ar"]),
        "host": Server("voicelab serve --host 0.0.0.0 --port 8000 --max-sessions 2 --allow-origin https://example.org",
                       workdir(tmp_path / "serve_host"),
                       {"0.0.0.0": "127.0.0.1", "--port 8000": f"--port {ports['host']}"}, ports["host"]),
        "agent": Server("python examples/pipecat_phone_agent.py --port 8765", workdir(tmp_path / "agent"),
                        {"8765": str(ports["agent"])}, ports["agent"]),
    }
    RAN["voicelab serve --port 8000"] = serve_cmd
    try:
        for name in ("host", "ar", "serve"):
            status, body = servers[name].wait_up()
            assert status == 200 and "voicelab" in body, (name, status)
        for name in ("host", "ar"):  # the live demo's variants: they answer, then make room for the calls
            servers[name].stop()
        servers["agent"].wait_up()
        # two lines at once: the reference agent's and voicelab serve's, each in its own work folder
        agent_w, serve_w = workdir(tmp_path / "calls_agent"), workdir(tmp_path / "calls_serve")
        agent_url, serve_url = f"127.0.0.1:{ports['agent']}", f"127.0.0.1:{ports['serve']}"
        a1 = Job("voicelab call ws://127.0.0.1:8765/media-stream single_question", agent_w,
                 {"127.0.0.1:8765": agent_url})
        s1 = Job("voicelab call ws://HOST:PORT/media-stream single_question", serve_w, {"HOST:PORT": serve_url})
        a1.finish()
        a2 = Job("voicelab call wss://agent.example.com/media-stream single_question --repeat 2 "
                 "--header \"Authorization: Bearer $TOKEN\" --param caller=+15550100", agent_w,
                 {"wss://agent.example.com": f"ws://{agent_url}"})
        s1.finish()
        s2 = Job("voicelab call ws://127.0.0.1:8000/media-stream single_question", serve_w,
                 {"127.0.0.1:8000": serve_url})
        a2.finish()
        s2.finish()
        line_w = workdir(tmp_path / "line")  # the same fixture in process through the codec, then on the line
        run("voicelab run default --line mulaw8k --clip-grid-ms 0 --out runs/line", line_w,
            {"default": "single_question"})
        (in_process,) = run_folders(line_w / "runs")
        run("voicelab call ws://127.0.0.1:8000/media-stream default --out runs/line", line_w,
            {"127.0.0.1:8000": serve_url, " default ": " single_question "})
        (on_line,) = [r for r in run_folders(line_w / "runs") if r != in_process]
        run("voicelab compare runs/line/RUN runs/line/CALL", line_w,
            {"runs/line/RUN": str(in_process), "runs/line/CALL": str(on_line)}, ok=(0, 1, 3))
        assert json.loads((in_process / "config.json").read_text(encoding="utf-8"))["pipeline"]["line"] == "mulaw8k"
    finally:
        for s in servers.values():
            s.stop()
    calls = run_folders(tmp_path / "calls_agent" / "runs") + run_folders(tmp_path / "calls_serve" / "runs")
    assert len(calls) == 4, calls
    for r in calls:
        assert json.loads((r / "summary.json").read_text(encoding="utf-8"))["calls_failed"] == 0, r
    repeated = [r for r in calls if len(list((r / "calls").glob("*.wav"))) == 2]
    assert len(repeated) == 1, calls  # --repeat 2: both calls pooled in one run folder
    all_ran(T_LINE)
