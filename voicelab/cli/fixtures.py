"""``voicelab fixtures ...``: check, list and build the recorded call fixtures."""

from __future__ import annotations

from pathlib import Path

import typer

from voicelab.cli.common import fail
from voicelab.fixtures import FIXTURES_ROOT, FixtureError, check_fixture, discover, load_fixture, select

fixtures_app = typer.Typer(help="Recorded call fixtures: check, list, build.", no_args_is_help=True,
                           add_completion=False)


@fixtures_app.command("check")
def check(paths: list[Path] = typer.Argument(..., help="fixture folders, fixture.json files, or folders of them")) -> None:
    """Validate fixtures; print every problem with its file and field. Exit 0 only when all pass."""
    try:
        files = discover(paths)
    except FixtureError as e:
        fail(str(e))
    bad = 0
    for f in files:
        problems = check_fixture(f)
        if problems:
            bad += 1
            typer.echo(f"FAIL {f}")
            for p in problems:
                typer.echo(f"  {p}")
        else:
            typer.echo(f"ok   {f}")
    typer.echo(f"{len(files) - bad} of {len(files)} fixtures pass")
    if bad:
        raise typer.Exit(1)


@fixtures_app.command("list")
def list_(specs: list[str] = typer.Argument(None, help="'default', 'all' (the default), names or paths"),
         root: Path = typer.Option(FIXTURES_ROOT, help="folder holding the suite")) -> None:
    """One line per fixture: name, turns, seconds of caller audio, description."""
    try:
        for f in select(specs or ["all"], root):
            fx = load_fixture(f)
            n = len(fx.turns)
            kind = "recording" if fx.recording else f"{n} turn{'s' if n != 1 else ''}"
            typer.echo(f"{fx.name:28s} {kind:10s} {fx.caller_audio_s:5.1f} s  {fx.description}")
    except FixtureError as e:
        fail(str(e))


@fixtures_app.command("build")
def build(out: Path = typer.Option(Path("audio_fixtures"), help="where to write the suite"),
          only: list[str] = typer.Option(None, "--only", help="build just these fixtures (repeatable)")) -> None:
    """Generate the suite's clips and fixture.json files (espeak-ng and Piper callers)."""
    from voicelab.fixtures.build import BuildError, build_suite  # piper (and espeak) load only when building

    try:
        written = build_suite(out, only or None)
    except BuildError as e:
        fail(str(e))
    problems = [p for f in written for p in check_fixture(f)]
    for f in written:
        typer.echo(f"built {f}")
    if problems:
        for p in problems:
            typer.echo(f"  {p}", err=True)
        fail(f"{len(problems)} problems in the built fixtures")
