"""`voicelab run`: recorded calls through the voice pipeline, the run folder, the tables."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import typer
from typer.core import TyperCommand

from engines.errors import CheckpointError, EngineSpecError
from engines.simulated.profiles import PROFILES
from voicelab.cli.common import fail, quiet_pipecat_logs
from voicelab.fixtures import FixtureError
from voicelab.gate import GateConfigError, ShaperParams
from voicelab.pipeline.config import (
    DEFAULT_GREETING,
    STT_HELP,
    TURN_HELP,
    PipelineConfig,
    PipelineConfigError,
)
from voicelab.pipeline.options import check_engine, check_out_dir
from voicelab.rules.faults import HELP as INJECT_HELP
from voicelab.rules.faults import FaultSpecError, parse_faults
from voicelab.rules.tool_reason import TOOL_REASON_HELP
from voicelab.runs.cluster import ClusterError
from voicelab.runs.folder import RunFolderError
from voicelab.runs.run import MATRIX_HELP, check_ray, default_matrix, failed_runs, run_fixtures
from voicelab.speech.caller_lm import DEFAULT_LM_WEIGHT


def _is_matrix_name(token: str) -> bool:
    return token in ("default", "profiles") or token.startswith("profiles:")


class RunCommand(TyperCommand):
    """`voicelab run`'s parser: a bare `--matrix` (last, or before another option or a fixture name) still
    means the default matrix, as when it was a flag."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        out: list[str] = []
        for i, a in enumerate(args):
            out.append(a)
            if a == "--matrix" and (i + 1 == len(args) or not _is_matrix_name(args[i + 1])):
                out.append("default")
        return super().parse_args(ctx, out)


def run(
    fixtures: list[str] = typer.Argument(None, help="fixture names under audio_fixtures/ or paths; default: "
                                                    "the list in audio_fixtures/default.txt ('all' for every one)"),
    engine: str = typer.Option("diffusion", help="diffusion, ar, a checkpoint folder, replay:TRACE.jsonl, "
                                                 "openai:MODEL, mercury:MODEL[+diffusing], profile:NAME[@http] "
                                                 f"(profiles: {', '.join(PROFILES)}; `voicelab profiles`)"),
    base_url: str = typer.Option(None, help="HTTP engines: the server's .../v1 URL (a vLLM, llama.cpp, Ollama or "
                                            "`voicelab mock-engine` server; default: the provider's own)"),
    api_key_env: str = typer.Option(None, help="HTTP engines: the NAME of the environment variable holding the API "
                                               "key (the key itself is never written to the run folder)"),
    sampler: str = typer.Option(None, help="threshold, low_confidence, revising, autoregressive (default: the "
                                           "engine's own)"),
    policy: str = typer.Option("pinned", help="gate policy: final, prefix, stable:K, block, pinned, pinned:X"),
    stt: str = typer.Option("whisper", help=STT_HELP),
    stt_early_final: bool = typer.Option(False, help="Whisper: start the final pass at the VAD's first silent frame "
                                                     "instead of its confirmed stop (stop_secs later); off by "
                                                     "measurement: it can cut a soft last sound"),
    stt_beam: int = typer.Option(1, help="Whisper's beam size (1: greedy, the default by measurement; a beam "
                                              "repeats short sentences and writes words into breaths)"),
    stt_lm: float = typer.Option(DEFAULT_LM_WEIGHT, help="Whisper: re-rank its 5 best readings by the callers' "
                                 "language model at this weight (0: greedy, no model; the default was chosen on "
                                 "clips the suite never plays)"),
    vad: str = typer.Option("silero", help="silero or webrtc"),
    clip_grid_ms: int = typer.Option(160, help="caller clips start on this grid of the call clock (ms, a multiple "
                                               "of 160; 0: at their exact sample): the recogniser then hears the "
                                               "same samples in every run"),
    out: Path = typer.Option(Path("runs"), help="folder for run folders"),
    matrix: str = typer.Option(None, help=f"run a matrix of configurations and write matrix.json: {MATRIX_HELP}; "
                                          "--matrix alone is the default one"),
    repeat: int = typer.Option(1, help="play the fixture list N times per configuration, pooled into one run "
                                       "folder (calls r1-00-NAME, r2-00-NAME, ...): narrower intervals"),
    barge_in: str = typer.Option("pause", help="pause (the VAD pauses the bot; it then stops for good or "
                                                 "resumes), vad (any speech stops the bot) or words:N (N words "
                                                 "heard while the bot talks; backchannels pass)"),
    greeting: str = typer.Option(DEFAULT_GREETING, help="what the bot says at call start ('' for nothing)"),
    turn: str = typer.Option("decide", help=TURN_HELP),
    preemptive: bool = typer.Option(False, help="with --turn decide: start the engine at the VAD stop on the words "
                                                "heard so far; the reply is held until the turn is confirmed "
                                                "and regenerated if the final words differ"),
    vad_stop_secs: float = typer.Option(0.2, help="VAD silence before speech counts as stopped (pipecat's default; "
                                                  "0.12 can cut a soft last consonant)"),
    vad_start_secs: float = typer.Option(0.2, help="VAD speech before it counts as started"),
    first_chunk_words: int = typer.Option(2, help="phrase shaper: words in a short first chunk"),
    min_words: int = typer.Option(4, help="phrase shaper: words before a clause cut"),
    max_words: int = typer.Option(14, help="phrase shaper: longest chunk in words"),
    max_hold_ms: float = typer.Option(250.0, help="phrase shaper: longest wait for a cut"),
    keep_leading_ms: float = typer.Option(20.0, help="Piper leading silence kept per chunk (-1: keep all)"),
    speculative_tts: float = typer.Option(None, metavar="THRESHOLD",
                                          help="speculative synthesis for revising samplers: text not committed "
                                               "yet whose positions' confidence is >= THRESHOLD (0-1] goes to "
                                               "TTS early; its audio plays only if the gate commits it "
                                               "unchanged, else it is dropped unheard"),
    step_ms: float = typer.Option(None, metavar="MS",
                                  help="tiny models and checkpoint folders: each sampler step takes at least MS "
                                       "of wall time, so the tiny model stands in for a real model's step time (an "
                                       "8B model on a GPU: tens of ms); its answers do not change"),
    tool_reason: str = typer.Option("words", help=f"destructive tool calls need a reason: {TOOL_REASON_HELP}"),
    inject: list[str] = typer.Option(None, help=f"inject a fault (repeatable): {INJECT_HELP}"),
    concurrency: int = typer.Option(1, help="calls played at the same time (each its own pipeline; the engine "
                                            "is shared): a load test"),
    ray: str = typer.Option(None, "--ray", metavar="ADDRESS",
                            help="play the calls as Ray tasks, one call each with its own pipeline and models: a "
                                 "cluster address ('auto', 'host:port', 'ray://host:10001') or 'local' (a private "
                                 "Ray instance); this machine writes the run folder"),
    cpus_per_call: float = typer.Option(1.0, help="with --ray: CPUs Ray reserves for each call"),
) -> None:
    """Run recorded calls through the voice pipeline in real time; write the run folder and print tables."""
    quiet_pipecat_logs("ERROR")  # pipecat's DEBUG chatter stays out of the tables
    try:
        shaper = ShaperParams(min_words=min_words, max_words=max_words, max_hold_ms=max_hold_ms,
                              first_min_words=first_chunk_words)
        base = PipelineConfig(engine=engine, base_url=base_url, api_key_env=api_key_env, sampler=sampler,
                              policy=policy, shaper=shaper, stt=stt, stt_beam=stt_beam, stt_lm=stt_lm,
                              stt_early_final=stt_early_final, vad=vad, clip_grid_ms=clip_grid_ms,
                              barge_in=barge_in, turn=turn, vad_stop_secs=vad_stop_secs, greeting=greeting,
                              preemptive=preemptive,
                              vad_start_secs=vad_start_secs,
                              keep_leading_ms=None if keep_leading_ms < 0 else keep_leading_ms,
                              speculative_tts=speculative_tts, tool_reason=tool_reason, step_ms=step_ms)
        configs = default_matrix(base, matrix) if matrix else [base]
        faults = parse_faults(inject or [])
        if concurrency < 1:
            raise PipelineConfigError(f"--concurrency {concurrency}: needs at least 1")
        check_ray(ray, concurrency, cpus_per_call)
        for cfg in configs:  # every refusal before a model loads or a folder is made
            check_engine(cfg)
        check_out_dir(out)
        root = run_fixtures(fixtures, configs, out, matrix=bool(matrix), command=list(sys.argv), repeat=repeat,
                            faults=faults, concurrency=concurrency, ray_address=ray, cpus_per_call=cpus_per_call)
    except (FixtureError, PipelineConfigError, GateConfigError, CheckpointError, EngineSpecError, FaultSpecError,
            RunFolderError, ClusterError) as e:
        fail(str(e))
    failed = failed_runs(root)
    if failed:
        fail(f"no turn of {', '.join(str(f) for f in failed)} went without an error (see its events.jsonl)", 1)
