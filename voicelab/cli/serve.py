"""`voicelab serve`: the live mic demo."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engines.errors import CheckpointError, EngineSpecError
from voicelab.cli import options as o
from voicelab.cli.common import fail, quiet_pipecat_logs
from voicelab.gate import GateConfigError
from voicelab.pipeline.config import PipelineConfigError
from voicelab.pipeline.options import check_engine
from voicelab.rules.turn_kinds import models_needed
from voicelab.web.options import DEFAULT_RUNS_DIR, ServeError, ServeOptions

D = o.RUN_DEFAULTS
SERVER = "server"


class ServeCommand(o.HintingCommand):
    """`voicelab serve` takes every `voicelab run` option that applies to a live call; the others say why not."""

    not_here = {
        "--clip-grid-ms": "not for a live call: the caller is a microphone, not clips on a grid",
        "--repeat": "not for a live call: each browser session is one call (replay a recorded session with "
                    "`voicelab fixtures import` and `voicelab run --repeat`)",
        "--matrix": "not for a live call: a session runs one configuration (pick it on the page)",
        "--concurrency": "not for a live call: see --max-sessions",
        "--ray": "not for a live call: sessions run in this server's process",
        "--cpus-per-task": "not for a live call: sessions run in this server's process",
        "--inject": "not for a live call: faults are rehearsed on recorded calls (`voicelab run --inject`)",
        "--wide": "not for a live call: the page shows the figures",
        "--json": "not for a live call: each session's summary.json is in its run folder under --out",
    }


def serve(
    host: Annotated[str, typer.Option(help="address to listen on (127.0.0.1: this machine only)",
                                      rich_help_panel=SERVER)] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port", rich_help_panel=SERVER)] = 8000,
    max_sessions: Annotated[int, typer.Option(help="concurrent browser sessions; more get a 'busy' message",
                                              rich_help_panel=SERVER)] = 2,
    allow_origin: Annotated[list[str] | None, typer.Option(
        help="a browser origin (https://host:port) admitted besides this server's own (repeatable; '*' any)",
        rich_help_panel=SERVER)] = None,
    engine: o.Engine = D["engine"],
    base_url: o.BaseUrl = D["base_url"],
    api_key_env: o.ApiKeyEnv = D["api_key_env"],
    sampler: o.Sampler = D["sampler"],
    step_ms: o.StepMs = D["step_ms"],
    policy: o.Policy = D["policy"],
    first_chunk_words: o.FirstChunkWords = D["first_chunk_words"],
    min_words: o.MinWords = D["min_words"],
    max_words: o.MaxWords = D["max_words"],
    max_hold_ms: o.MaxHoldMs = D["max_hold_ms"],
    speculative_tts: o.SpeculativeTts = D["speculative_tts"],
    tool_reason: o.ToolReason = D["tool_reason"],
    stt: Annotated[str, typer.Option(help="whisper, whisper-base, moonshine or pocketsphinx (a live call has "
                                          "no fixture transcript)", rich_help_panel=o.SPEECH)] = D["stt"],
    stt_early_final: o.SttEarlyFinal = D["stt_early_final"],
    stt_beam: o.SttBeam = D["stt_beam"],
    stt_lm: o.SttLm = D["stt_lm"],
    vad: o.Vad = D["vad"],
    vad_stop_ms: o.VadStopMs = D["vad_stop_ms"],
    vad_start_ms: o.VadStartMs = D["vad_start_ms"],
    turn: o.Turn = D["turn"],
    preemptive: o.Preemptive = D["preemptive"],
    greeting: o.Greeting = D["greeting"],
    keep_leading_ms: o.KeepLeadingMs = D["keep_leading_ms"],
    barge_in: o.BargeIn = D["barge_in"],
    out: Annotated[Path, typer.Option(help="each session's run folder goes under this (voicelab report reads "
                                           "it)", rich_help_panel=o.OUTPUT)] = DEFAULT_RUNS_DIR,
) -> None:
    """Serve the live mic demo: speak in the browser, watch the canvas resolve and the latency meter."""
    params = dict(locals())
    try:
        cfg = o.config_from(params)
        check_engine(cfg)  # the same validation as run and sweep
        options = ServeOptions(pipeline=cfg, max_sessions=max_sessions, runs_dir=out,
                               allowed_origins=tuple(allow_origin or ()))
    except (PipelineConfigError, GateConfigError, ServeError, CheckpointError, EngineSpecError) as e:
        fail(str(e))
    if not 0 < port < 65536:
        fail(f"port: {port} is not a TCP port")
    quiet_pipecat_logs("WARNING")
    import uvicorn  # the server and the models load only once the options are known to be good

    from voicelab.pipeline.resources import ResourcePool
    from voicelab.web.app import create_app

    pool = ResourcePool()
    turn_models = sorted(models_needed(cfg.turn, cfg.barge_in))  # what the turn-end and barge-in kinds need
    typer.echo(f"loading {cfg.engine_label()} ({cfg.sampler or 'default sampler'}), the Piper voice"
               f"{' and the turn models: ' + ', '.join(turn_models) if turn_models else ''}…")
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
