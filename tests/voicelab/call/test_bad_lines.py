"""Bad lines: every way a phone line to an agent goes wrong is one line on stderr naming the URL, a non-zero
exit, no traceback, no hang, and a sealed run folder with the call marked failed. Each against a small
loopback server. Also one good call through the command, for the tables and the folder."""

from __future__ import annotations

import asyncio
import base64
import csv
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner
from websockets.asyncio.server import ServerConnection

from tests.voicelab.call.test_helpers import ToneAgent, free_port, media, raw_tcp, read_start, serving, tone
from voicelab.analysis.tables import is_finished
from voicelab.cli.call import call

app = typer.Typer()
app.command()(call)


def _run(url: str, tmp_path: Path, *extra: str) -> tuple[int, str, str, Path | None]:
    out = tmp_path / "runs"
    res = CliRunner().invoke(app, [url, "single_question", "--out", str(out), "--no-readback", *extra])
    runs = sorted(out.glob("*")) if out.is_dir() else []
    return res.exit_code, res.stdout, res.stderr, runs[0] if runs else None


def _assert_one_line(code: int, stderr: str, url_part: str, what: str) -> None:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert code != 0
    assert "Traceback" not in stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and url_part in lines[0] and what in lines[0], lines[0]


def _assert_failed_folder(run: Path | None, what: str) -> None:
    assert run is not None and is_finished(run)
    meta = json.loads(next((run / "calls").glob("*.json")).read_text())
    assert meta["status"] == "failed" and what in meta["failure"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["calls_failed"] == 1 and what in summary["failures"][0]


def test_refused_connection(tmp_path: Path) -> None:
    url = f"ws://127.0.0.1:{free_port()}/media-stream"
    code, _, err, run = _run(url, tmp_path)
    _assert_one_line(code, err, url, "connection refused")
    _assert_failed_folder(run, "connection refused")


@pytest.mark.parametrize(("reply", "what"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", "HTTP 200"),
    (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "wrong handshake"),
])
def test_wrong_handshake(tmp_path: Path, reply: bytes, what: str) -> None:
    with raw_tcp(reply) as url:
        code, _, err, run = _run(url, tmp_path)
    _assert_one_line(code, err, "127.0.0.1", what)
    _assert_failed_folder(run, what)


def test_handshake_that_never_comes_is_timed_out(tmp_path: Path) -> None:
    with raw_tcp(None) as url:
        code, _, err, run = _run(url, tmp_path, "--connect-timeout-ms", "800")
    _assert_one_line(code, err, "127.0.0.1", "no WebSocket handshake within 0.8 s")
    _assert_failed_folder(run, "no WebSocket handshake")


async def _silent(ws: ServerConnection) -> None:
    await read_start(ws)
    async for _ in ws:
        pass


@pytest.mark.slow
def test_agent_that_never_answers(tmp_path: Path) -> None:
    with serving(_silent) as url:
        code, _, err, run = _run(url, tmp_path, "--no-greeting", "--answer-timeout-ms", "1000")
    _assert_one_line(code, err, url, "never answered")
    _assert_failed_folder(run, "never answered")


def _sends(message: str | bytes):
    async def agent(ws: ServerConnection) -> None:
        await read_start(ws)
        await ws.send(message)
        async for _ in ws:
            pass
    return agent


@pytest.mark.parametrize(("message", "what"), [
    ("{\"event\": \"media\", \"media\": {", "malformed JSON"),
    (json.dumps({"event": "media", "media": {"payload": base64.b64encode(b"\0" * 640).decode(),
                                             "contentType": "audio/x-l16", "sampleRate": 16000}}),
     "sent audio as audio/x-l16 at 16000 Hz; the line carries audio/x-mulaw at 8000 Hz"),
    (b"\0" * 640, "binary WebSocket frame"),
])
def test_malformed_or_other_codec(tmp_path: Path, message: str | bytes, what: str) -> None:
    with serving(_sends(message)) as url:
        code, _, err, run = _run(url, tmp_path)
    _assert_one_line(code, err, url, what)
    _assert_failed_folder(run, what)


async def _hangs_up(ws: ServerConnection) -> None:
    sid = await read_start(ws)
    await ws.send(media(sid, tone(0.5)))

    async def drain() -> None:  # an agent reads its line (a full receive queue would stall the close)
        async for _ in ws:
            pass

    reader = asyncio.create_task(drain())
    await asyncio.sleep(1.5)
    await ws.close(1000, "bye")
    reader.cancel()


@pytest.mark.slow
def test_agent_that_hangs_up_mid_call(tmp_path: Path) -> None:
    with serving(_hangs_up) as url:
        code, _, err, run = _run(url, tmp_path)
    _assert_one_line(code, err, url, "hung up at 1.")
    assert "close code 1000" in err
    _assert_failed_folder(run, "hung up")
    # what was measured before the hang-up stays: the greeting is on the right channel
    assert run is not None and (run / "calls" / "00-single_question.wav").stat().st_size > 10000


@pytest.mark.slow
def test_good_calls_through_the_command_repeated_and_concurrent(tmp_path: Path) -> None:
    with serving(ToneAgent()) as url:
        code, out, err, run = _run(url, tmp_path, "--param", "caller=+15550100", "--header", "X-Token: abc",
                                   "--repeat", "2", "--concurrency", "2")
    assert code == 0, err
    assert "per turn" in out and "not measured" in out
    assert run is not None and is_finished(run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["calls"] == 2 and summary["far_ms"]["n"] == 2 and summary["far_ms"]["p50"] > 0
    assert sorted(p.name for p in (run / "calls").glob("*.wav")) == ["r1-00-single_question.wav",
                                                                     "r2-00-single_question.wav"]
    assert summary["false_cut_ins"] == 0 and "stt_wer" in summary["not_measured"]
    assert summary["calls_failed"] == 0 and summary["audio_gaps"] == 0
    assert summary["truth"]["far_abs_diff_ms_p95"] is not None and summary["truth"]["far_abs_diff_ms_p95"] <= 20
    config = json.loads((run / "config.json").read_text())
    assert config["headers"] == ["X-Token"] and "abc" not in json.dumps(config)
    for table in ("events", "turns", "chunks"):
        assert (run / f"{table}.parquet").is_file()


@pytest.mark.slow
def test_a_reply_with_lost_packets_has_audio_gaps(tmp_path: Path) -> None:
    """200 ms of silence in the middle of the 2 s reply is one gap, counted for the turn it answers."""
    with serving(ToneAgent(reply_s=2.0, gap_ms=200)) as url:
        code, _, err, run = _run(url, tmp_path)
    assert code == 0, err
    assert run is not None
    summary = json.loads((run / "summary.json").read_text())
    assert summary["audio_gaps"] == 1
    meta = json.loads(next((run / "calls").glob("*.json")).read_text())
    assert [round(g["ms"]) for g in meta["audio_gaps"]] == [200]  # a sample near zero beside it may join it
    rows = list(csv.DictReader((run / "turns.csv").open()))
    assert [r["audio_gaps"] for r in rows] == ["1"]


def test_bad_arguments_are_one_line(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["http://example.com/x", "single_question", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "not a ws:// or wss:// URL" in res.stderr
    res = CliRunner().invoke(app, ["ws://127.0.0.1:9/x", "no_such_fixture", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "no_such_fixture" in res.stderr and "Traceback" not in res.stderr
    res = CliRunner().invoke(app, ["ws://127.0.0.1:9/x", "single_question", "--header", "nocolon"])
    assert res.exit_code == 2 and "'Name: value'" in res.stderr


@pytest.mark.slow
def test_a_clear_the_agent_resumes_after_is_a_pause_not_a_false_barge_in(tmp_path: Path) -> None:
    # the agent clears on "mm hmm" and sends the rest of its reply 300 ms later, as the lab's line output does
    with serving(ToneAgent(reply_s=4.0, clear_after_ms=100, resume_after_ms=300)) as url:
        res = CliRunner().invoke(app, [url, "backchannel_mm_hmm", "--out", str(tmp_path), "--no-readback"])
    assert res.exit_code == 0, res.stderr
    run = next(tmp_path.iterdir())
    summary = json.loads((run / "summary.json").read_text())
    assert summary["false_barge_ins"] == 0
    assert summary["line"]["clears"] >= 1 and summary["line"]["clears_resumed"] == summary["line"]["clears"]
    events = [json.loads(ln) for ln in (run / "events.jsonl").read_text().splitlines()]
    assert not any(e["kind"] == "interruption" and e["payload"].get("bot_speaking") for e in events)


@pytest.mark.slow
def test_a_clear_on_a_backchannel_is_a_false_barge_in(tmp_path: Path) -> None:
    # the agent clears its long reply as soon as it hears 100 ms of the caller, "mm hmm" included, and stays silent
    # until it replies 2.5 s after the caller stopped: a stop (silent past --stop-silence-ms, 2 s), not a pause
    with serving(ToneAgent(reply_s=4.0, clear_after_ms=100, reply_after_ms=2500)) as url:
        res = CliRunner().invoke(app, [url, "backchannel_mm_hmm", "--out", str(tmp_path), "--no-readback"])
    assert res.exit_code == 0, res.stderr
    run = next(tmp_path.iterdir())
    summary = json.loads((run / "summary.json").read_text())
    assert summary["false_barge_ins"] == 1 and summary["line"]["clears"] >= 1
    assert summary["line"]["cleared_audio_ms"] > 1000  # most of the 4 s reply was dropped from the queue
    events = [json.loads(ln) for ln in (run / "events.jsonl").read_text().splitlines()]
    assert any(e["kind"] == "interruption" and e["payload"]["by"] == "clear" and e["payload"]["bot_speaking"]
               for e in events)


@pytest.mark.slow
def test_calls_placed_from_ray_tasks_make_the_same_folder(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    with serving(ToneAgent()) as url:
        code, out, err, run = _run(url, tmp_path, "--repeat", "2", "--concurrency", "2", "--ray", "local")
    assert code == 0, err
    assert "joined Ray (local)" in out and "per turn" in out
    assert run is not None and is_finished(run)
    assert json.loads((run / "config.json").read_text())["ray"] is True
    summary = json.loads((run / "summary.json").read_text())
    assert summary["calls"] == 2 and summary["calls_failed"] == 0 and summary["far_ms"]["n"] == 2
    assert summary["machine"]["verdict"] in ("quiet", "busy")  # each task's probe; the run's: the busiest call's
    assert sorted(p.name for p in (run / "calls").glob("*.wav")) == ["r1-00-single_question.wav",
                                                                     "r2-00-single_question.wav"]
    events = [json.loads(ln) for ln in (run / "events.jsonl").read_text().splitlines()]
    assert {e["call_id"] for e in events} == {"r1-00-single_question", "r2-00-single_question"}


def test_ray_options_are_checked_before_any_call(tmp_path: Path) -> None:
    for extra, what in ((["--ray", " "], "--ray ''"), (["--cpus-per-task", "0"], "--cpus-per-task 0")):
        res = CliRunner().invoke(app, ["ws://127.0.0.1:9/x", "single_question", "--out", str(tmp_path), *extra])
        assert res.exit_code == 2 and what in res.stderr and "Traceback" not in res.stderr
    assert not list(tmp_path.iterdir())
