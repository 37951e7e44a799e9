"""``voicelab fixtures ...``: check, list, build and import the recorded call fixtures."""

from __future__ import annotations

from pathlib import Path

import typer

from voicelab.cli.common import fail
from voicelab.fixtures import FIXTURES_ROOT, FixtureError, check_fixture, discover, load_fixture, select
from voicelab.fixtures.segment import DEFAULT_MAX_PAUSE_S

fixtures_app = typer.Typer(help="Recorded call fixtures: check, list, build, import.", no_args_is_help=True,
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
            for turn, why in fx.guesses:  # imported fixtures say which rules were guessed
                typer.echo(f"{'':28s} turn {turn}: guessed: {why}")
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


@fixtures_app.command("import")
def import_(
    sources: list[Path] = typer.Argument(..., help="recordings (stereo caller+agent, or the caller alone; WAV, "
                                         "FLAC, OGG...), run folders of `voicelab run` / `serve` / `call`, or "
                                         "folders of them"),
    out: Path = typer.Option(..., "--out", help="folder to write the fixtures into (one folder per call)"),
    name: str = typer.Option(None, "--name", help="fixture name (a prefix when several calls are imported)"),
    caller_channel: str = typer.Option("auto", "--caller-channel",
                                       help="stereo files: left, right, or auto (the agent speaks first)"),
    max_pause: float = typer.Option(DEFAULT_MAX_PAUSE_S, "--max-pause",
                                    help="a silence shorter than this stays inside a caller turn (seconds)"),
    text: Path = typer.Option(None, "--text", help="known transcripts: one a line (one recording) or JSON "
                              "{\"name\": [\"turn 0\", ...]}; otherwise Whisper reads them"),
    expect_fallback: bool = typer.Option(False, "--expect-fallback", help="recordings outside the shop's "
                                         "business: every turn that gets a reply expects the fallback answer"),
    sounds: bool = typer.Option(True, "--sounds/--no-sounds", help="non-speech sounds over the agent become "
                                "backchannel-like turns (expect no_interrupt)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace the fixtures already in --out"),
) -> None:
    """Turn recorded calls and live sessions into reactive fixtures (see docs/own-calls.md)."""
    if caller_channel not in ("left", "right", "auto"):
        fail(f"--caller-channel {caller_channel!r}: choose left, right or auto")
    if not 0.05 <= max_pause <= 10.0:
        fail(f"--max-pause {max_pause:g}: expected seconds between 0.05 and 10")
    # the models (Silero through pipecat, Whisper through ctranslate2) load only when importing
    from rich.console import Console
    from rich.progress import Progress

    from voicelab.fixtures.importer import ImportOptions, ImportProblem, import_sources, read_texts

    try:
        opts = ImportOptions(caller_channel=caller_channel, max_pause_s=max_pause, name=name,
                             texts=read_texts(text) if text is not None else None, text_file=text,
                             expect_fallback=expect_fallback, sounds=sounds, overwrite=overwrite)
        console = Console(stderr=True)  # progress on the terminal only: stdout and logs stay clean
        with Progress(console=console, transient=True, disable=not console.is_terminal) as bar:
            task = bar.add_task("importing", total=None)

            def step(path: str, i: int, n: int) -> None:
                bar.update(task, total=n, completed=i, description=f"{i + 1}/{n} {Path(path).name}")

            written = import_sources(sources, out, opts, progress=step)
    except ImportProblem as e:
        fail(str(e))
    for folder in written:
        fx = load_fixture(folder)
        asr = sum(t.text_source == "asr" for t in fx.turns)
        n = len(fx.turns)
        typer.echo(f"imported {folder}: {n} turn{'s' * (n != 1)}, {asr} machine-read, {len(fx.guesses)} guessed")
    typer.echo(f"{len(written)} fixtures in {out}; play them with: voicelab run {out}")
