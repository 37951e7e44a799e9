"""The bad-input battery of every probe gives one line, a non-zero exit (or a 4xx), no traceback, and
leaves nothing half-written. docs/bad-inputs.md is the table of these probes; keep both in step.

The CLI probes run in-process through typer's runner (one import, no model run: every refusal comes before a
model loads); the server probes go through the real app with Starlette's test client.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from engines.local.engine import TINY_MODELS
from tests.voicelab.pipeline.test_pipeline import write_trace
from voicelab.cli.app import app
from voicelab.fixtures.format import MAX_DELAY_S
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.resources import ResourcePool
from voicelab.runs.sweep import LOCK
from voicelab.web.app import create_app
from voicelab.web.options import ServeOptions
from voicelab.web.requests import MAX_DEPTH

UNWRITABLE = Path("/sys/voicelab-probe")  # sysfs: no one may create files there, root included


def _trace(tmp: Path, mutate: Callable[[list[dict]], list[dict]]) -> str:
    path = write_trace(tmp / "trace.jsonl", [("hi what time do you open on saturday", "we open at nine.")])
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in mutate(rows)))
    return f"replay:{path}"


def _masked_yes(rows: list[dict]) -> list[dict]:
    for r in rows:
        if r["type"] == "snapshot":
            r["masked"] = "yes"
    return rows


def _checkpoint(tmp: Path, **fields: object) -> str:
    folder = tmp / "ckpt"
    shutil.copytree(TINY_MODELS["diffusion"], folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(fields)
    (folder / "config.json").write_text(json.dumps(cfg))
    return str(folder)


def _not_utf8_config(tmp: Path) -> str:
    folder = Path(_checkpoint(tmp))
    (folder / "config.json").write_bytes(b'{"d_model": 64, "name": "caf\xe9"}')
    return str(folder)


def _fixture_with_delay(tmp: Path) -> str:
    src = Path(__file__).parents[3] / "audio_fixtures" / "single_question"
    dst = tmp / "fx"
    shutil.copytree(src, dst)
    doc = json.loads((dst / "fixture.json").read_text())
    doc["turns"][0]["start"]["delay_s"] = 1e12
    (dst / "fixture.json").write_text(json.dumps(doc))
    return str(dst)


def _unsealed_run(tmp: Path) -> str:
    run = tmp / "killed-run"
    (run / "calls").mkdir(parents=True)
    (run / "events.jsonl").write_text("")
    (run / "INCOMPLETE").write_text("killed\n")
    return str(run)


def _locked_sweep(tmp: Path) -> str:
    sweep = tmp / "sweep"
    sweep.mkdir()
    (sweep / LOCK).write_text(str(os.getpid()))  # a live process holds it
    return str(sweep)


RUN = ["run", "single_question", "--stt", "transcript"]
# (probe id, argv builder given a temporary folder, text the one line must contain)
CLI_PROBES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    ("unknown sampler", lambda t: [*RUN, "--sampler", "greedyish", "--out", str(t / "o")], "greedyish"),
    ("ar engine + diffusion sampler", lambda t: [*RUN, "--engine", "ar", "--sampler", "threshold",
                                                 "--out", str(t / "o")], "autoregressive"),
    ("diffusion engine + ar sampler", lambda t: [*RUN, "--engine", "diffusion", "--sampler", "autoregressive",
                                                 "--out", str(t / "o")], "diffusion sampler"),
    ("trace with only a header", lambda t: [*RUN, "--engine", _trace(t, lambda r: r[:1]), "--out", str(t / "o")],
     "no generation"),
    ("trace snapshot masked 'yes'", lambda t: [*RUN, "--engine", _trace(t, _masked_yes), "--out", str(t / "o")],
     "masked"),
    ("trace not UTF-8", lambda t: [*RUN, "--engine", "replay:" + str(_write(t / "t.jsonl", b"\xff\xfe{")),
                                   "--out", str(t / "o")], "UTF-8"),
    ("checkpoint config.json not UTF-8", lambda t: [*RUN, "--engine", _not_utf8_config(t), "--out", str(t / "o")],
     "UTF-8"),
    ("checkpoint rope_theta 'big'", lambda t: [*RUN, "--engine", _checkpoint(t, rope_theta="big"),
                                               "--out", str(t / "o")], "rope_theta"),
    ("checkpoint max_sequence_length 4", lambda t: [*RUN, "--engine", _checkpoint(t, max_sequence_length=4),
                                                    "--out", str(t / "o")], "max_sequence_length"),
    ("run --out at a file", lambda t: [*RUN, "--out", str(_write(t / "file", b"x"))], "is a file"),
    ("run --out unwritable", lambda t: [*RUN, "--out", str(UNWRITABLE)], "cannot write"),
    ("run --inject unknown fault", lambda t: [*RUN, "--inject", "engine-melt@turn:0", "--out", str(t / "o")],
     "--inject"),
    ("run --inject bad place", lambda t: [*RUN, "--inject", "tts-stall@turn:x", "--out", str(t / "o")], "WHERE"),
    ("run --concurrency 0", lambda t: [*RUN, "--concurrency", "0", "--out", str(t / "o")], "concurrency"),
    ("run --ray unreachable", lambda t: [*RUN, "--ray", "127.0.0.1:1", "--out", str(t / "o")], "127.0.0.1:1"),
    ("run --ray with --concurrency 2", lambda t: [*RUN, "--ray", "local", "--concurrency", "2",
                                                  "--out", str(t / "o")], "concurrency"),
    ("run --step-ms 0", lambda t: [*RUN, "--step-ms", "0", "--out", str(t / "o")], "step_ms"),
    ("run --step-ms on a timing profile", lambda t: [*RUN, "--engine", "profile:mercury-2", "--step-ms", "40",
                                                     "--out", str(t / "o")], "has its own timing"),
    ("fixture delay_s 1e12", lambda t: ["run", _fixture_with_delay(t), "--stt", "transcript",
                                        "--out", str(t / "o")], "limit"),
    ("report of an unsealed run", lambda t: ["report", _unsealed_run(t)], "unfinished"),
    ("report --out at a folder", lambda t: ["report", _unsealed_run(t), "--out", str(t)], "is a folder"),
    ("report --out unwritable", lambda t: ["report", _unsealed_run(t), "--out", str(UNWRITABLE / "r.html")],
     "cannot write"),
    ("sweep --out unwritable", lambda t: ["sweep", "--out", str(UNWRITABLE), "--runner", "synthetic"],
     "cannot write"),
    ("second sweep on a locked folder", lambda t: ["sweep", "--out", _locked_sweep(t), "--runner", "synthetic",
                                                   "--fixture", "single_question"], "another sweep"),
    ("sweep unknown sampler", lambda t: ["sweep", "--out", str(t / "s"), "--sampler", "greedyish"], "greedyish"),
]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "needle"), [pytest.param(a, n, id=i) for i, a, n in CLI_PROBES])
def test_cli_probe_gives_one_line(tmp_path: Path, argv: Callable[[Path], list[str]], needle: str) -> None:
    result = CliRunner().invoke(app, argv(tmp_path))
    err = result.stderr.strip()
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert needle in err, err
    out = tmp_path / "o"
    assert not out.exists() or not any(out.iterdir()), "a refused run left a folder behind"


@pytest.fixture(scope="module")
def client() -> TestClient:
    opts = ServeOptions(pipeline=PipelineConfig(stt="pocketsphinx"))
    return TestClient(create_app(opts, pool=ResourcePool()))


OFFER = {"sdp": "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n", "type": "offer"}
DEEP = b"[" * 30_000 + b"]" * 30_000  # 60 kB: json.loads would hit RecursionError


@pytest.mark.parametrize(("headers", "body", "status", "needle"), [
    pytest.param({"Content-Type": "text/plain"}, json.dumps(OFFER).encode(), 415, "Content-Type", id="text/plain"),
    pytest.param({"Content-Type": "application/json", "Origin": "https://evil.example"}, json.dumps(OFFER).encode(),
                 403, "Origin", id="foreign origin"),
    pytest.param({"Content-Type": "application/json"}, DEEP, 400, f"deeper than {MAX_DEPTH}", id="deep 60 kB JSON"),
    pytest.param({"Content-Type": "application/json"}, b"{not json", 400, "not JSON", id="not JSON"),
    pytest.param({"Content-Type": "application/json"}, b'{"sdp": 5, "type": "offer"}', 400, "sdp", id="sdp type"),
])
def test_server_probe_gives_a_4xx_line(client: TestClient, headers: dict[str, str], body: bytes, status: int,
                                       needle: str) -> None:
    r = client.post("/api/offer", content=body, headers=headers)
    assert r.status_code == status, r.text
    msg = r.json()["error"]
    assert needle in msg and "\n" not in msg


def test_fixtures_check_names_the_delay_bound(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["fixtures", "check", _fixture_with_delay(tmp_path)])
    assert result.exit_code == 1 and f"start.delay_s: 1e+12 s is longer than the {MAX_DELAY_S:g} s limit" in result.output
