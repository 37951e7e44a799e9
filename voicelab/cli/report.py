"""`voicelab report` and `voicelab sweep`.

Bad input ends with a one-line `error: ...` on stderr and exit status 2 (1 when sweep cells failed).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from engines.errors import CheckpointError, EngineSpecError
from voicelab.cli.common import fail
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.pipeline.options import OptionsError, check_engine, check_out_file

RUNNERS = ("pipeline", "synthetic")  # == voicelab.runs.sweep.RUNNERS (a test checks)


def report(
    runs: Annotated[list[Path], typer.Argument(help="a run folder, or a folder of runs (matrix or sweep); with "
                                                    "--decide, several")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="HTML file (default RUN/report.html, with "
                                             "--decide RUN/decision.html; with --markdown the Markdown page, "
                                             "default docs/results.md)")] = None,
    decide: Annotated[bool, typer.Option("--decide", help="rank the configurations (FAR, output rate, price, "
                                         "answers, API behaviour, audible defects) and mark the Pareto front")]
    = False,
    max_turns: Annotated[int, typer.Option(help="turn timelines drawn per run")] = 12,
    max_canvases: Annotated[int, typer.Option(help="denoising canvases drawn per run")] = 4,
    detail_runs: Annotated[int, typer.Option(help="runs drawn in detail (the rest only summarised)")] = 3,
    markdown: Annotated[bool, typer.Option("--markdown", help="write Markdown results instead (default --out "
                                           "docs/results.md) from run folders or docs/runs entries, or folders of "
                                           "them", rich_help_panel="Markdown results")] = False,
    readme: Annotated[Path | None, typer.Option(help="with --markdown: replace the table between <!-- "
                                                "results:begin --> and <!-- results:end --> in this file (rows: "
                                                "headline.json of the docs runs folder)",
                                                rich_help_panel="Markdown results")] = None,
    import_run: Annotated[Path | None, typer.Option("--import", help="with --markdown: first copy this run "
                                                    "folder's summary.json and meta.json into RUNS/NAME (RUNS: "
                                                    "the docs runs folder)", rich_help_panel="Markdown results")]
    = None,
    name: Annotated[str | None, typer.Option(help="with --import: the entry's short name",
                                             rich_help_panel="Markdown results")] = None,
) -> None:
    """Write a self-contained HTML report (plots inline; opens without a network), or with --markdown the
    results page (docs/results.md) and the README's headline table."""
    if markdown:
        if decide:
            fail("--markdown and --decide: one at a time")
        _markdown(runs, out, readme, import_run, name)
        return
    if readme is not None or import_run is not None or name is not None:
        fail("--readme, --import and --name go with --markdown")
    from rich.console import Console

    from voicelab.analysis import AnalysisError
    from voicelab.analysis.pareto import decision_report, print_decision
    from voicelab.analysis.report import build_report
    from voicelab.measure.events import EventLogError
    from voicelab.measure.truth import TruthError

    if len(runs) > 1 and not decide:
        fail("report takes one run folder (or folder of runs); several only with --decide")
    try:
        if out is not None:
            check_out_file(out)  # a folder, or a place that cannot be written: one line before any work
        if decide:
            rows, path = decision_report(runs, out, max_turns=max_turns, max_canvases=max_canvases,
                                         detail_runs=detail_runs)
            print_decision(Console(width=None if sys.stdout.isatty() else 160), rows)
        else:
            path = build_report(runs[0], out, max_turns=max_turns, max_canvases=max_canvases,
                                detail_runs=detail_runs)
    except (AnalysisError, TruthError, EventLogError, OptionsError) as exc:
        fail(str(exc))
    except OSError as exc:  # the default RUN/report.html on a read-only run folder
        fail(f"{exc.filename or runs[0]}: cannot write the report ({exc.strerror or exc})")
    typer.echo(f"report: {path}")


def _markdown(runs: list[Path], out: Path | None, readme: Path | None, import_run: Path | None,
              name: str | None) -> None:
    """`report --markdown`: optionally import a run into the docs runs folder, then write the results pages."""
    from voicelab.analysis.results_md import ResultsError, import_entry, write_results

    try:
        if import_run is not None:
            if name is None or len(runs) != 1:
                fail("--import RUN needs --name NAME and one RUNS argument: the docs runs folder (docs/runs)")
            typer.echo(f"imported: {import_entry(import_run, runs[0], name)}")
        elif name is not None:
            fail("--name goes with --import")
        for line in write_results(runs, out or Path("docs/results.md"), readme):
            typer.echo(line)
    except ResultsError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{exc.filename or out}: cannot write ({exc.strerror or exc})")


def sweep(
    out: Annotated[Path, typer.Option("--out", "-o", help="sweep folder (re-run the same command to resume)")],
    engine: Annotated[list[str] | None, typer.Option("--engine", help="engine (repeatable): diffusion, ar, "
                                                     "or a checkpoint folder")] = None,
    sampler: Annotated[list[str] | None, typer.Option("--sampler", help="sampler (repeatable); 'default' = the "
                                                      "engine's own")] = None,
    policy: Annotated[list[str] | None, typer.Option("--policy", help="gate policy (repeatable), e.g. final, "
                                                     "prefix, stable:2, block, pinned")] = None,
    shaper: Annotated[list[str] | None, typer.Option("--shaper", help="phrase shaper setting (repeatable): "
                                                     "'default' or 'min_words=2,max_hold_ms=150'")] = None,
    fixture: Annotated[list[str] | None, typer.Option("--fixture", help="fixture name or path (repeatable)")] = None,
    pool_fixtures: Annotated[bool, typer.Option(help="run all fixtures in one cell instead of one cell each")] = False,
    ray: Annotated[str | None, typer.Option("--ray", help="Ray cluster address ('auto', 'ray://host:10001'); "
                                            "'local' starts a private Ray instance")] = None,
    cpus_per_task: Annotated[float, typer.Option(help="with --ray: CPUs Ray reserves for each cell")] = 1.0,
    runner: Annotated[str, typer.Option(help="'pipeline' (real calls) or 'synthetic' (a dry run, no model)")]
    = "pipeline",
    seed: Annotated[int, typer.Option(help="seed given to every cell")] = 0,
    repeat: Annotated[int, typer.Option(help="plays of the fixture list per cell, pooled into its run folder")] = 1,
) -> None:
    """Run engines x samplers x policies x shaper settings x fixtures; resumable; ends with a Pareto plot."""
    from voicelab.analysis import AnalysisError
    from voicelab.runs import sweep as sweep_mod
    from voicelab.runs.sweep import SweepError, SweepMatrix, parse_shaper, run_sweep

    if runner not in RUNNERS:
        fail(f"--runner '{runner}': one of {', '.join(RUNNERS)}")
    try:
        matrix = SweepMatrix(
            engines=tuple(engine or ["diffusion"]),
            samplers=tuple(None if s == "default" else s for s in (sampler or ["default"])),
            policies=tuple(policy or ["prefix"]),
            shapers=tuple(parse_shaper(s) for s in (shaper or ["default"])),
            fixtures=tuple(fixture or ["default"]),
            per_fixture=not pool_fixtures,
            seed=seed,
            repeat=repeat,
        )
        if runner == "pipeline":  # every cell's engine and sampler, before the first cell runs
            for cell in matrix.cells():
                check_engine(PipelineConfig(engine=cell.engine, sampler=cell.sampler, policy=cell.policy))
        res = run_sweep(matrix, out, sweep_mod.RUNNERS[runner], ray_address=ray, cpus_per_cell=cpus_per_task,
                        echo=typer.echo)
    except (SweepError, AnalysisError, PipelineConfigError, CheckpointError, EngineSpecError) as exc:
        fail(str(exc))
    if not res.pareto.empty:
        typer.echo(res.pareto.to_string(index=False))
    if res.failed:
        for cid, why in res.failed.items():
            typer.echo(f"failed {cid}: {why}", err=True)
        fail(f"{len(res.failed)} of {len(res.cells)} cells failed; run the same command again to retry them",
                    1)
