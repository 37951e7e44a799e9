"""`voicelab run`: recorded calls through the voice pipeline, the run folder, the tables."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from typer._click import core as click_core  # typer carries its own click

from engines.errors import CheckpointError, EngineSpecError
from voicelab.cli import options as o
from voicelab.cli.call import check_junit_path, report_expectations
from voicelab.cli.common import fail, quiet_pipecat_logs
from voicelab.fixtures import FixtureError
from voicelab.gate import GateConfigError
from voicelab.pipeline.config import PipelineConfigError
from voicelab.pipeline.options import check_engine, check_out_dir
from voicelab.rules.faults import HELP as INJECT_HELP
from voicelab.rules.faults import FaultSpecError, parse_faults
from voicelab.runs.cluster import ClusterError
from voicelab.runs.folder import RunFolderError
from voicelab.runs.matrix import MATRIX_HELP, default_matrix
from voicelab.runs.plan import check_ray

D = o.RUN_DEFAULTS


def _is_matrix_name(token: str) -> bool:
    return token in ("default", "profiles") or token.startswith("profiles:")


class RunCommand(o.HintingCommand):
    """`voicelab run`'s parser: old option names get a hint, and a bare `--matrix` (last, or before another
    option or a fixture name) still means the default matrix, as when it was a flag."""

    def parse_args(self, ctx: click_core.Context, args: list[str]) -> list[str]:
        out: list[str] = []
        for i, a in enumerate(args):
            out.append(a)
            if a == "--matrix" and (i + 1 == len(args) or not _is_matrix_name(args[i + 1])):
                out.append("default")
        return super().parse_args(ctx, out)


def run(
    fixtures: Annotated[list[str] | None, typer.Argument(
        help="fixture names under audio_fixtures/ or paths; default: the list in audio_fixtures/default.txt "
             "('real' for the human recordings, 'all' for every one)")] = None,
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
    stt: o.Stt = D["stt"],
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
    clip_grid_ms: Annotated[int, typer.Option(
        help="caller clips start on this grid of the call clock (ms, a multiple of 160; 0: at their exact "
             "sample): the recogniser then hears the same samples in every run", rich_help_panel=o.SPEECH)] = 160,
    line: Annotated[str, typer.Option(
        help="the caller's audio as the agent hears it: direct (the clips as recorded) or mulaw8k (through a "
             "phone line's 8 kHz µ-law and back, as `voicelab call` sends it: compare the two)",
        rich_help_panel=o.SPEECH)] = "direct",
    barge_in: o.BargeIn = D["barge_in"],
    repeat: Annotated[int, typer.Option(
        help="play the fixture list N times per configuration, pooled into one run folder (calls r1-00-NAME, "
             "r2-00-NAME, ...): narrower intervals", rich_help_panel=o.SCALE)] = 1,
    matrix: Annotated[str | None, typer.Option(
        help=f"run a matrix of configurations and write matrix.json: {MATRIX_HELP}; --matrix alone is the "
             "default one", rich_help_panel=o.SCALE)] = None,
    concurrency: Annotated[int, typer.Option(
        help="calls played at the same time (each its own pipeline; the engine is shared): a load test",
        rich_help_panel=o.SCALE)] = 1,
    ray: Annotated[str | None, typer.Option(
        "--ray", metavar="ADDRESS", help="play the calls as Ray tasks, one call each with its own pipeline and "
        "models: a cluster address ('auto', 'host:port', 'ray://host:10001') or 'local' (a private Ray "
        "instance); this machine writes the run folder", rich_help_panel=o.SCALE)] = None,
    cpus_per_task: Annotated[float, typer.Option(help="with --ray: CPUs Ray reserves for each call",
                                                 rich_help_panel=o.SCALE)] = 1.0,
    inject: Annotated[list[str] | None, typer.Option(help=f"inject a fault (repeatable): {INJECT_HELP}",
                                                     rich_help_panel=o.SCALE)] = None,
    out: Annotated[Path, typer.Option(help="folder for run folders", rich_help_panel=o.OUTPUT)] = Path("runs"),
    wide: Annotated[bool, typer.Option(help="one row per turn and a column per figure (needs ~170 columns)",
                                       rich_help_panel=o.OUTPUT)] = False,
    json_out: Annotated[bool, typer.Option("--json", help="print the summary (a list for a matrix) as JSON on "
                                           "stdout instead of the tables", rich_help_panel=o.OUTPUT)] = False,
    junit: Annotated[Path | None, typer.Option(help="also write the fixtures' expectation checks as JUnit XML here "
                                                    "(a test case per check; a suite per run folder)",
                                               rich_help_panel=o.OUTPUT)] = None,
    fail_on_expectations: Annotated[bool, typer.Option(
        "--fail-on-expectations", help="exit 1 when an expectation check failed, 3 when no turn carried any "
        "(default: the checks never change the exit status)", rich_help_panel=o.OUTPUT)] = False,
) -> None:
    """Run recorded calls through the voice pipeline in real time; write the run folder and print tables."""
    params = dict(locals())
    from rich.console import Console

    from voicelab.runs.calls import failed_runs, run_fixtures  # loads pipecat and the models' runtimes

    quiet_pipecat_logs("ERROR")  # pipecat's DEBUG chatter stays out of the tables
    try:
        base = o.config_from(params, clip_grid_ms=clip_grid_ms, line=line)
        configs = default_matrix(base, matrix) if matrix else [base]
        faults = parse_faults(inject or [])
        if concurrency < 1:
            raise PipelineConfigError(f"--concurrency {concurrency}: needs at least 1")
        check_ray(ray, concurrency, cpus_per_task)
        for cfg in configs:  # every refusal before a model loads or a folder is made
            check_engine(cfg)
        check_junit_path(junit)
        check_out_dir(out)
        console = Console(stderr=True) if json_out else None
        root = run_fixtures(fixtures, configs, out, matrix=bool(matrix), command=list(sys.argv), repeat=repeat,
                            faults=faults, concurrency=concurrency, ray_address=ray, cpus_per_call=cpus_per_task,
                            wide=wide, tables=not json_out, console=console)
    except (FixtureError, PipelineConfigError, GateConfigError, CheckpointError, EngineSpecError, FaultSpecError,
            RunFolderError, ClusterError) as e:
        fail(str(e))
    if json_out:
        summaries = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(root.rglob("summary.json"))]
        typer.echo(json.dumps(summaries if matrix else summaries[0], indent=1))
    status = report_expectations(Console(stderr=json_out), sorted(p.parent for p in root.rglob("summary.json")),
                                 junit, fail_on_expectations)
    failed = failed_runs(root)
    if failed:
        fail(f"no turn of {', '.join(str(f) for f in failed)} went without an error (see its events.jsonl)", 1)
    if status:
        raise typer.Exit(status)
