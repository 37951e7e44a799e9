"""`voicelab compare RUN_A RUN_B [RUN_C ...]`: each run against the baseline A, figure by figure.

Exit status: 0; 1 when `--fail-on` finds a regression beyond its threshold with confidence; 3 when a figure
that `--fail-on` gates cannot be decided (too few samples, not measured, or measured in neither run), so a gate
never passes on no evidence, and when one run was measured on a busy machine and the other on a quiet one
(`voicelab.measure.machine_load`; `--allow-busy` goes on); 2 for bad input. `--junit FILE` writes the gates as JUnit test cases (a failure for
exit 1's, an error for exit 3's; `voicelab.measure.junit`), with the same exit status.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from voicelab.cli.common import fail

RESAMPLES = 2000  # == voicelab.measure.intervals.RESAMPLES (a test checks); read here without loading scipy

EXIT_REGRESSION = 1
SHOWN_DISAGREEMENTS = 10  # turns whose expectation verdicts differ, printed under the table
EXIT_UNDECIDED = 3


def refuse_busy_against_quiet(runs: list[Path], summaries: list[dict[str, Any]]) -> None:
    """Exit 3 with a line per run measured on a busy machine against a baseline on a quiet one (or the reverse)."""
    from voicelab.measure.machine_load import mismatch

    refused = [m for path, s in zip(runs[1:], summaries[1:], strict=True)
               if (m := mismatch(summaries[0].get("machine"), s.get("machine"), str(runs[0]), str(path)))]
    for line in refused:
        typer.echo(f"cannot decide: {line}", err=True)
    if refused:
        raise typer.Exit(EXIT_UNDECIDED)


def compare(
    runs: Annotated[list[Path], typer.Argument(help="run folders: the first is the baseline A, each other one is "
                                                    "compared with it")],
    fail_on: Annotated[str | None, typer.Option("--fail-on", help="regressions that fail the command, e.g. "
                                                "'far_p95:+50ms,audible:+0' (exit 1 when the interval's lower "
                                                "bound of the regression exceeds the threshold)")] = None,
    html_out: Annotated[Path | None, typer.Option("--html", help="also write an HTML page here")] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="with --fail-on: also write each gate as a JUnit "
                                               "test case here (a regression a failure, a gate the runs cannot "
                                               "decide an error); the exit status is the same")] = None,
    resamples: Annotated[int, typer.Option(help="bootstrap resamples per figure")] = RESAMPLES,
    seed: Annotated[int, typer.Option(help="bootstrap seed")] = 0,
    allow_busy: Annotated[bool, typer.Option("--allow-busy", help="compare a run measured on a busy machine with "
                                             "one measured on a quiet machine (without it: exit 3, no verdict)")]
    = False,
) -> None:
    """Differences with 95 % intervals (paired by fixture turn) and a verdict per figure.

    No verdict (exit 3, one line that says why) when one run was measured on a busy machine and the other on a
    quiet one: a difference between them may be the machine's (docs/metrics.md, how to read a busy run).
    `--allow-busy` compares them anyway."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from voicelab.analysis import AnalysisError, load_run
    from voicelab.analysis.compare import (
        BETTER,
        COLUMNS,
        WORSE,
        CompareError,
        compare_runs,
        gates,
        parse_fail_on,
        regressions,
        row_cells,
        undecided,
        write_html,
    )
    from voicelab.measure.events import EventLogError
    from voicelab.runs.console import busy_lines

    if len(runs) < 2:
        fail("compare needs at least two run folders (the baseline first)")
    if junit is not None and fail_on is None:
        fail(f"--junit {junit}: needs --fail-on (its gates are the test cases)")
    try:
        thresholds = parse_fail_on(fail_on) if fail_on is not None else {}
        data = [load_run(r) for r in runs]
    except (CompareError, AnalysisError, EventLogError) as exc:
        fail(str(exc))
    if not allow_busy:
        refuse_busy_against_quiet(runs, [d.summary for d in data])
    comparisons = [compare_runs(data[0], b, seed=seed, n_resamples=resamples) for b in data[1:]]
    console = Console(width=None if sys.stdout.isatty() else 140)
    for line in busy_lines([d.summary for d in data]):
        console.print(f"[dim]note: busy machine: {escape(line)}[/dim]", highlight=False)
    style = {BETTER: "green", WORSE: "red"}
    for c in comparisons:
        t = Table(title=f"{c.b_label} ({c.b}) against {c.a_label} ({c.a})")
        for name in COLUMNS:
            t.add_column(name, justify="left" if name in ("figure", "verdict") else "right")
        for r in c.rows:
            cells = row_cells(r)
            t.add_row(*cells[:-1], f"[{style[r.verdict]}]{r.verdict}[/]" if r.verdict in style else r.verdict)
        console.print(t)
        for note in c.notes:
            console.print(f"[dim]note: {note}[/dim]")
        if c.expectations is not None:  # the turns' expectation verdicts, A against B
            console.print(c.expectations.line())
            for d in c.expectations.disagreements[:SHOWN_DISAGREEMENTS]:
                fx, turn, rep = d.key
                console.print(f"  {fx} turn {turn}{f' (repeat {rep + 1})' if rep else ''}: "
                              f"A {'passed' if d.a.passed else 'failed'} on {d.a.words!r}, "
                              f"B {'passed' if d.b.passed else 'failed'} on {d.b.words!r}")
    failures = regressions(comparisons, thresholds)
    if html_out is not None:
        console.print(f"html: {write_html(html_out, comparisons, failures)}")
    if junit is not None:
        from voicelab.measure.junit import Suite, gate_cases, write

        suite = Suite("compare", tuple(gate_cases(gates(comparisons, thresholds))))
        try:
            console.print(f"junit: {write(junit, [suite])}")
        except OSError as exc:
            fail(f"--junit {junit}: cannot write: {exc.strerror or exc}")
    if failures:
        for f in failures:
            typer.echo(f"regression: {f}", err=True)
        raise typer.Exit(EXIT_REGRESSION)
    unknown = undecided(comparisons, thresholds)
    if unknown:
        for u in unknown:
            typer.echo(f"cannot decide: {u}", err=True)
        raise typer.Exit(EXIT_UNDECIDED)
