"""The `voicelab` command line: one entry point, each command a thin wrapper over a module."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated

# pipecat logs a banner and every frame decision through loguru's default handler; the command
# line keeps warnings and errors (set LOGURU_LEVEL=DEBUG to see everything)
os.environ.setdefault("LOGURU_LEVEL", "WARNING")

import typer  # noqa: E402

from engines.errors import CheckpointError  # noqa: E402
from voicelab.cli import call, compare, mock_engine, probe, profiles, report, run, serve  # noqa: E402
from voicelab.cli.bench_turns import bench_turns  # noqa: E402
from voicelab.cli.common import fail  # noqa: E402
from voicelab.cli.fixtures import fixtures_app  # noqa: E402
from voicelab.cli.options import HintingCommand  # noqa: E402
from voicelab.cli.stt_bench import bench_stt  # noqa: E402
from voicelab.cpu_threads import CpuThreadsError, configured_threads  # noqa: E402

app = typer.Typer(help="voicelab: a voice-agent latency lab for diffusion text engines.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)


@app.callback()
def _threads() -> None:
    # VOICELAB_CPU_THREADS (voicelab.cpu_threads) also sizes torch's pool: torch reads OMP_NUM_THREADS when it is
    # first imported, which every command does after this
    try:
        n = configured_threads()
    except CpuThreadsError as e:
        fail(str(e))
    if n is not None:
        os.environ.setdefault("OMP_NUM_THREADS", str(n))


app.command("run", cls=run.RunCommand)(run.run)
app.command("serve", cls=serve.ServeCommand)(serve.serve)
app.add_typer(fixtures_app, name="fixtures")
app.command("report")(report.report)
app.command("sweep", cls=HintingCommand)(report.sweep)
app.command("compare")(compare.compare)
app.command("call")(call.call)
app.command("mock-engine")(mock_engine.mock_engine)
app.command("probe")(probe.probe)
app.command("profiles")(profiles.profiles)

bench_app = typer.Typer(help="Benchmarks (speed and memory targets live here, not in unit tests).",
                        no_args_is_help=True)
app.add_typer(bench_app, name="bench")
bench_app.command("stt")(bench_stt)
bench_app.command("turns")(bench_turns)


@bench_app.command("engines")
def bench_engines(
    n: Annotated[int, typer.Option(help="held-out prompts")] = 200,
    ood_garbled: Annotated[int, typer.Option(help="garbled requests in the out-of-domain set (0: skip it)")] = 120,
    json_out: Annotated[bool, typer.Option("--json", help="print a JSON list")] = False,
    out: Annotated[Path | None, typer.Option(help="also write the JSON result here")] = None,
    threads: Annotated[int, typer.Option(help="torch threads")] = 2,
    rounds: Annotated[int, typer.Option(help="timed rounds, every engine once per round (speed: the median)")] = 5,
    prompts: Annotated[Path | None, typer.Option(
        help='your own prompts instead of the held-out ones: JSON lines {"prompt": ..., "expect": "fallback" | '
             '{"intent": ..., "slots": {...}}} (the engines.eval.evaluate --prompts format)')] = None,
    unseen: Annotated[bool, typer.Option(help="also score the unseen-caller set (callers whose names and phrasings training never saw)")] = True,
) -> None:
    """Every engine and sampler on the same held-out prompts (or --prompts FILE): tokens/s and its ratio to AR,
    first commit, correctness, coherence and wrong tool calls (per intent and the failures with --prompts), the
    unseen-caller set beside it, out-of-domain coherence and wrong tool calls."""
    from engines.eval.evaluate import load_prompts, prompt_file_error  # plain Python: a bad file fails fast

    if n < 1 or ood_garbled < 0 or threads < 1 or rounds < 1:
        fail("--n, --threads and --rounds must be at least 1, --ood-garbled at least 0")
    user_prompts = None
    if prompts is not None:
        try:
            user_prompts = load_prompts(prompts)
        except (OSError, ValueError) as e:
            fail(prompt_file_error(prompts, e))
    from engines.eval import engine_bench as bench  # torch

    try:
        rows = bench.run_bench(n, ood_garbled, threads, rounds, prompts=user_prompts,
                               prompts_source=str(prompts or ""), unseen=unseen)
    except CheckpointError as e:
        fail(str(e))
    if out is not None:
        bench.write_bench(rows, out, threads)
    if json_out:
        typer.echo(json.dumps([asdict(r) for r in rows], indent=1))
    else:
        typer.echo("\n".join(bench.format_rows(rows) + (bench.format_details(rows) if user_prompts else [])))


@app.command("train")
def train(
    out: Annotated[Path, typer.Option(help="folder for the tiny models")] = Path("engines/tiny"),
    ar_steps: Annotated[int | None, typer.Option(help="autoregressive training steps")] = None,
    diff_steps: Annotated[int | None, typer.Option(help="diffusion adaptation steps")] = None,
    from_ar: Annotated[Path | None, typer.Option(help="adapt the diffusion model from this trained AR folder")]
    = None,
) -> None:
    """Train the tiny AR model, then adapt the diffusion model from it (CPU, about an hour)."""
    from engines.local import train as tiny_train

    cfg = tiny_train.TrainConfig()
    cfg = replace(cfg, ar_steps=ar_steps if ar_steps is not None else cfg.ar_steps,
                  diff_steps=diff_steps if diff_steps is not None else cfg.diff_steps)
    try:
        tiny_train.train(cfg, out, from_ar)
    except CheckpointError as e:
        fail(str(e))


def main() -> None:  # pragma: no cover - console entry
    app(prog_name="voicelab")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
