"""`voicelab bench stt`: the recognisers side by side on the suite's caller turns (voicelab.speech.bench)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from voicelab.cli.common import fail

SYSTEMS = ("whisper", "whisper+lm", "moonshine", "pocketsphinx")  # == voicelab.speech.SYSTEMS (a test checks)


def bench_stt(
    fixtures: Annotated[list[str] | None, typer.Argument(help="fixture names (default: every fixture)")] = None,
    systems: Annotated[str, typer.Option(help=f"comma-separated, of {', '.join(SYSTEMS)}")]
    = ",".join(SYSTEMS),
    threads: Annotated[int, typer.Option(help="CPU threads for Whisper and Moonshine")] = 2,
    out: Annotated[Path | None, typer.Option(help="also write the JSON result (summary and every turn) here")]
    = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the summary as a JSON list")] = False,
) -> None:
    """Word error rate and time per pass of each recogniser on every caller turn, split into synthetic and real
    voices: the measurement behind the default STT."""
    from rich.console import Console
    from rich.table import Table

    from voicelab.fixtures.format import FixtureError
    from voicelab.runs.folder import versions, write_json
    from voicelab.speech import bench
    from voicelab.speech.whisper import RecognizerError

    if threads < 1:
        fail("--threads must be at least 1")
    console = Console(stderr=True)
    try:
        names = bench.parse_systems(systems)
        utts = bench.suite_utterances(fixtures or None)
        rows = bench.run_bench(names, utts, threads, progress=lambda s: console.print(f"[dim]{s}: done[/dim]"))
    except (bench.BenchError, FixtureError, RecognizerError) as e:
        fail(str(e))
    doc = bench.bench_document(rows, threads, "voicelab bench stt " + " ".join(sys.argv[3:]))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_json(out, {**doc, "versions": versions()})
    summary = bench.summarise(rows)
    if json_out:
        typer.echo(json.dumps(doc["summary"], indent=1))
        return
    table = Table(title=f"recognisers on {len(utts)} caller turns (whole clips, {threads} threads)")
    for col in ("system", "voices", "turns", "WER mean", "WER corpus", "ms p50", "ms p95"):
        table.add_column(col, justify="left" if col in ("system", "voices") else "right")
    for s in summary:
        table.add_row(s.system, s.suite, str(s.n), f"{s.wer_mean:.1%}", f"{s.wer_corpus:.1%}", f"{s.ms_p50:.0f}",
                      f"{s.ms_p95:.0f}")
    Console().print(table)
