"""`voicelab serve`: the live mic demo."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import uvicorn

from engines.errors import CheckpointError, EngineSpecError
from voicelab.cli.common import fail, quiet_pipecat_logs
from voicelab.gate import GateConfigError
from voicelab.pipeline.config import (
    BARGE_IN_HELP,
    DEFAULT_GREETING,
    TURN_HELP,
    PipelineConfig,
    PipelineConfigError,
)
from voicelab.pipeline.options import check_engine
from voicelab.web.app import ServeError, ServeOptions, create_app
from voicelab.web.recording import DEFAULT_RUNS_DIR
from voicelab.web.session import ResourcePool


def serve(
    host: Annotated[str, typer.Option(help="address to listen on (127.0.0.1: this machine only)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8000,
    engine: Annotated[str, typer.Option(help="diffusion, ar, a checkpoint folder, openai:MODEL, "
                                        "mercury:MODEL[+diffusing] or profile:NAME[@http]")] = "diffusion",
    base_url: Annotated[str | None, typer.Option(help="HTTP engines: the server's .../v1 URL")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="HTTP engines: the NAME of the environment variable "
                                                    "holding the API key (never the key)")] = None,
    sampler: Annotated[str | None, typer.Option(help="sampler (default: the engine's own)")] = None,
    policy: Annotated[str, typer.Option(help="gate policy: final, prefix, stable:K, block, pinned[:X]")] = "pinned",
    vad: Annotated[str, typer.Option(help="silero or webrtc")] = "silero",
    stt: Annotated[str, typer.Option(help="whisper, moonshine or pocketsphinx (a live call has no fixture transcript)")] = "whisper",
    turn: Annotated[str, typer.Option(help=TURN_HELP)] = "decide",
    barge_in: Annotated[str, typer.Option(help=BARGE_IN_HELP + "; the browser's speaker pauses and resumes "
                                          "as the recorded call's does")] = "pause",
    greeting: Annotated[str, typer.Option(help="what the bot says when a session starts ('' for nothing)")] = (
        DEFAULT_GREETING),
    max_sessions: Annotated[int, typer.Option(help="concurrent browser sessions; more get a 'busy' message")] = 2,
    allow_origin: Annotated[list[str] | None, typer.Option(help="a browser origin (https://host:port) admitted "
                                                           "besides this server's own (repeatable; '*' any)")]
    = None,
    runs_dir: Annotated[Path, typer.Option(help="each session's run folder goes under this (voicelab report reads "
                                           "it)")] = DEFAULT_RUNS_DIR,
) -> None:
    """Serve the live mic demo: speak in the browser, watch the canvas resolve and the latency meter."""
    try:
        cfg = PipelineConfig(engine=engine, base_url=base_url, api_key_env=api_key_env, sampler=sampler,
                             policy=policy, vad=vad, stt=stt, turn=turn, barge_in=barge_in, greeting=greeting)
        check_engine(cfg)  # the same validation as run and sweep
        options = ServeOptions(pipeline=cfg, max_sessions=max_sessions, runs_dir=runs_dir,
                               allowed_origins=tuple(allow_origin or ()))
    except (PipelineConfigError, GateConfigError, ServeError, CheckpointError, EngineSpecError) as e:
        fail(str(e))
    if not 0 < port < 65536:
        fail(f"port: {port} is not a TCP port")
    quiet_pipecat_logs("WARNING")
    pool = ResourcePool()
    typer.echo(f"loading {cfg.engine_label()} ({cfg.sampler or 'default sampler'}) and the Piper voice…")
    try:
        pool.preload(cfg)  # fail here, with a message, rather than in the first browser session
    except Exception as e:  # CheckpointError, a missing voice package, a bad sampler name ...
        fail(f"engine: {e}")
    app = create_app(options, pool=pool)
    shown = "localhost" if host in ("127.0.0.1", "::1") else host
    typer.echo(f"voicelab live demo on http://{shown}:{port}/  (Ctrl-C to stop)")
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        pool.close()
