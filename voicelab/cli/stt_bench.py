"""`voicelab bench stt`: the recognisers side by side on recorded speech (voicelab.sttbench.recogniser_bench)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from voicelab.cli.common import fail, threads_option

# == voicelab.sttbench.recogniser_bench's SYSTEMS and GROUPS (a test checks): the CLI starts without the recognisers
SYSTEMS = ("whisper", "whisper+lm", "whisper-base", "whisper-base+lm", "moonshine", "pocketsphinx")
GROUPS = ("synthetic", "real", "human", "human-digits")


def bench_stt(
    fixtures: Annotated[list[str] | None, typer.Argument(help="fixture names (default: every group)")] = None,
    systems: Annotated[str, typer.Option(help=f"comma-separated, of {', '.join(SYSTEMS)}")]
    = ",".join(SYSTEMS),
    data: Annotated[list[Path] | None, typer.Option(
        help="a folder of recordings (wav, flac, ogg; any rate, mono or stereo) with DIR/transcripts.tsv (file "
             "stem, tab, reference text); its rows replace the default groups unless fixtures or "
             "--group are given")] = None,
    suite: Annotated[str | None, typer.Option(help="the suite name of the --data rows (default: the folder's "
                                                   "name)")] = None,
    group: Annotated[list[str] | None, typer.Option(
        help=f"bench only these of {', '.join(GROUPS)} (repeatable or comma-separated; default: all, the human "
             "set's groups when audio_fixtures/human/ holds them)")] = None,
    threads: Annotated[int | None, typer.Option(
        help="CPU threads for Whisper and Moonshine (default: VOICELAB_CPU_THREADS, else 2)")] = None,
    out: Annotated[Path | None, typer.Option(help="also write the JSON result (summary and every turn) here")]
    = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the summary as a JSON list")] = False,
) -> None:
    """Word error rate and time per pass of each recogniser on every caller turn and recording, split into
    synthetic, real and human voices: the measurement behind the default STT (marked in the output)."""
    from rich.console import Console
    from rich.table import Table

    from voicelab.analysis import calibration
    from voicelab.fixtures.format import FixtureError
    from voicelab.runs.folder import versions, write_json
    from voicelab.speech.whisper import RecognizerError
    from voicelab.sttbench import recogniser_bench as bench

    threads = threads_option(threads)
    console = Console(stderr=True)
    try:
        names = bench.parse_systems(systems)
        utts = bench.bench_utterances(fixtures or (), data or (), suite, group or ())
        rows = bench.run_bench(names, utts, threads, progress=lambda s: console.print(f"[dim]{s}: done[/dim]"))
    except (bench.SttBenchError, FixtureError, RecognizerError) as e:
        fail(str(e))
    summary = bench.summarise(rows)
    doc = bench.bench_document(rows, threads, "voicelab bench stt " + " ".join(sys.argv[3:]), summary)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_json(out, {**doc, "versions": versions()})
    if json_out:
        typer.echo(json.dumps(doc["summary"], indent=1))
        return
    default = bench.default_system()
    table = Table(title=f"recognisers on {len(utts)} utterances (whole clips, {threads} threads)",
                  caption=f"* the pipeline's default recogniser ({default})" if default else None)
    for col in ("system", "voices", "n", "WER mean", "WER corpus", "95% CI", "ms p50", "ms p95"):
        table.add_column(col, justify="left" if col in ("system", "voices") else "right",
                         no_wrap=col in ("system", "voices", "95% CI"))
    for s in summary:
        ci = f"{s.wer_corpus_ci[0] * 100:.1f}-{s.wer_corpus_ci[1] * 100:.1f}" if s.wer_corpus_ci else "-"
        table.add_row(f"{s.system} *" if s.default else s.system, s.suite, str(s.n), f"{s.wer_mean:.1%}",
                      f"{s.wer_corpus:.1%}", ci, f"{s.ms_p50:.0f}", f"{s.ms_p95:.0f}",
                      style="bold" if s.default else None)
    Console().print(table)
    verdict = calibration.stt_verdict([asdict(s) for s in summary])
    if verdict:
        Console().print(verdict)
