"""`voicelab call URL FIXTURE...`: measure any voice agent from its audio over a telephone media stream.

Imports stay light: the carrier needs websockets and numpy only; Whisper (for the read-back) loads inside
the run, after the calls.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from voicelab.cli.common import fail
from voicelab.fixtures import FixtureError
from voicelab.measure.figures import figure
from voicelab.runs.console import (
    BUSY_MARK,
    fmt,
    is_busy,
    print_busy,
    print_figures,
    print_turns,
    summary_figures,
)
from voicelab.runs.folder import RunFolderError

if TYPE_CHECKING:  # typing only: the call modules load once the arguments are checked
    from voicelab.call.carrier import CallOptions, CallResult
    from voicelab.call.line_run import BargeInRule
    from voicelab.fixtures.format import Fixture


def _pairs(items: list[str] | None, sep: str, what: str, example: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            fail(f"{what} {item!r}: expected {example}")
        out[key.strip()] = value.strip()
    return out


def call_figures(s: dict[str, Any]) -> list[tuple[str, str]]:
    """The overall table of a line run: the catalogue's overall figures a line measures (answers scored as the
    per-turn rows are), then the line's own figures. A figure the audio cannot show is "not measured", never 0."""
    line = s.get("line") or {}
    answers = {"answers correct", "answers coherent", "expectations passed"}
    cells = [(name, "not measured" if name in answers and s.get("answers") is None else value)
             for name, value in summary_figures(s, line=True)]
    return [
        ("calls (failed)", f"{s['calls']} ({s.get('calls_failed', 0)})"), *cells,
        ("talk-over p95 ms", fmt((s.get("talk_over_ms") or {}).get("p95"))),
        ("line: queue delay p95 ms", fmt((line.get("queue_delay_ms") or {}).get("p95"))),
        ("line: queue depth p95 ms", fmt((line.get("queue_depth_ms") or {}).get("p95"))),
        ("line: agent jitter ms", fmt(line.get("agent_jitter_ms"), 1)),
        ("line: caller frames late p95 ms", fmt((line.get("caller_send_late_ms") or {}).get("p95"), 1)),
        ("line: clears", fmt(line.get("clears"))),
    ]


def print_call_tables(console: Console, rows: list[dict[str, Any]], s: dict[str, Any]) -> None:
    """One narrow table per call from the run's per-turn rows (the catalogue's columns, as `voicelab run`
    prints them; the read-back words and the expectations' checks where there are any), then the overall
    figures as figure | value."""
    print_turns(console, rows, title=f"{s['run_id']}: per turn (from the line's audio)")
    print_figures(console, call_figures(s), title="overall" + (BUSY_MARK if is_busy(s) else ""))
    print_busy(console, [s])
    console.print("[dim]not measured (a recording of the line cannot show them): "
                  f"{', '.join(s.get('not_measured') or [])}[/dim]")


def read_turn_rows(run_dir: Path) -> list[dict[str, Any]]:
    """The run's per-turn rows, typed: turns.parquet (what the summary was made from, with the line's columns),
    else turns.csv read back by the catalogue's column types."""
    parquet = run_dir / "turns.parquet"
    if parquet.is_file():
        import pyarrow.parquet as pq  # loaded once the calls are over

        return [dict(r) for r in pq.read_table(parquet).to_pylist()]
    import csv

    with (run_dir / "turns.csv").open(encoding="utf-8") as f:
        return [{k: _typed(k, v) for k, v in r.items()} for r in csv.DictReader(f)]


def _typed(column: str, text: str | None) -> Any:
    """A turns.csv cell as its column's type (the catalogue's dtype; a line run's millisecond columns are
    numbers), None for an empty cell."""
    if text is None or text == "":
        return None
    try:
        f = figure(column)
    except KeyError:
        return text
    if f.dtype == "bool":
        return text == "True"
    if f.dtype in ("int32", "int64"):
        return int(float(text))
    if f.dtype == "float64" or f.unit == "ms":
        return float(text)
    return text


EXIT_EXPECTATIONS_FAILED = 1  # --fail-on-expectations: a check failed (as compare's regression)
EXIT_NO_CHECKS = 3  # --fail-on-expectations with not one check: undecided (as compare's gate without samples)


def failed_calls(run_dir: Path) -> dict[str, str]:
    """call id -> failure of each call of a line run that failed on the line (calls/ID.json `status`)."""
    import json

    out = {}
    for meta in sorted((run_dir / "calls").glob("*.json")):
        doc = json.loads(meta.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and doc.get("status") == "failed":
            out[meta.stem] = str(doc.get("failure") or "failed")
    return out


def report_expectations(console: Console, run_dirs: list[Path], junit: Path | None, gate: bool) -> int:
    """`--junit FILE` and `--fail-on-expectations` of `voicelab run` and `voicelab call`: a JUnit suite per run
    folder (a case per expectation check, an error per call that failed on the line; voicelab.measure.junit)
    and the exit status the gate asks for: 0 without `gate`; else 1 when a check failed, 3 when the runs
    carried no check at all (nothing to gate), 0 when every check passed."""
    import json

    from voicelab.measure.junit import FAILED, run_suite, totals, write

    if junit is None and not gate:
        return 0
    suites = [run_suite(json.loads((d / "summary.json").read_text(encoding="utf-8")), read_turn_rows(d),
                        failed_calls(d)) for d in run_dirs]
    tests, failures, errors = totals(suites)
    if junit is not None:
        try:
            console.print(f"junit: {write(junit, suites)} ({tests - errors} checks, {failures} failed; "
                          f"{errors} calls failed)")
        except OSError as e:
            fail(f"--junit {junit}: cannot write: {e.strerror or e}")
    if not gate:
        return 0
    for s in suites:
        for c in s.cases:
            if c.outcome == FAILED:
                typer.echo(f"expectation failed: {s.name}: {c.classname} {c.name}: {c.message}", err=True)
    if failures:
        return EXIT_EXPECTATIONS_FAILED
    if tests - errors == 0:
        typer.echo("cannot decide: --fail-on-expectations, but no turn carried expectations", err=True)
        return EXIT_NO_CHECKS
    return 0


def check_junit_path(junit: Path | None) -> None:
    """Refuse a --junit that cannot be a file before any call is made."""
    if junit is not None and junit.is_dir():
        fail(f"--junit {junit}: a folder; give a file name (e.g. {junit / 'junit.xml'})")


def call(
    url: Annotated[str, typer.Argument(help="the agent's media-stream endpoint: ws://HOST:PORT/PATH or wss://...")],
    fixtures: Annotated[list[str] | None, typer.Argument(
        help="fixture names under audio_fixtures/, lists (default, real) or paths; default: the default list")]
    = None,
    header: Annotated[list[str] | None, typer.Option(
        help="an HTTP header of the WebSocket handshake, 'Name: value' (repeatable; e.g. a bearer token)")] = None,
    param: Annotated[list[str] | None, typer.Option(
        help="a custom parameter sent in the start message, key=value (repeatable)")] = None,
    out: Annotated[Path, typer.Option(help="folder for run folders")] = Path("runs"),
    repeat: Annotated[int, typer.Option(help="play the fixture list N times, pooled into one run folder")] = 1,
    concurrency: Annotated[str, typer.Option(help="calls on the line at the same time (a load test); a list "
                                                  "like 1,2,4,8 sweeps: one run folder per level, a table and "
                                                  "load.png")] = "1",
    ray: Annotated[str | None, typer.Option(
        "--ray", metavar="ADDRESS", help="place each call from a Ray task, so the callers spread over a cluster: "
        "a cluster address ('auto', 'host:port', 'ray://host:10001') or 'local'; this machine writes the run "
        "folder and reads the replies back")] = None,
    cpus_per_task: Annotated[float, typer.Option(help="with --ray: CPUs Ray reserves for each call")] = 1.0,
    greeting: Annotated[bool, typer.Option(help="the agent greets at call start (turn 0 waits for it)")] = True,
    readback: Annotated[bool, typer.Option(help="after the calls, read the agent's replies back with Whisper "
                                                "base and score answers where fixtures say")] = True,
    listen: Annotated[bool, typer.Option(help="a fixture with a scenario chooses each line from the agent's last "
                                              "reply (docs/scenarios.md); --no-listen plays its turns in order")] = True,
    connect_timeout_ms: Annotated[int, typer.Option(help="give up on the WebSocket handshake after this")] = 10000,
    answer_timeout_ms: Annotated[int, typer.Option(help="fail a call whose agent sent no audio this long after "
                                                        "the caller's first turn")] = 15000,
    no_reply_timeout_ms: Annotated[int, typer.Option(help="a caller turn waiting for a reply that never came "
                                                          "starts after this")] = 6000,
    max_call_ms: Annotated[int | None, typer.Option(help="end a call after this (default: the fixture's length "
                                                         "plus time for every reply)")] = None,
    stop_silence_ms: Annotated[int, typer.Option(help="false barge-in without a clear: the agent's audio stopped "
                                                      "on a backchannel and stayed silent this long")] = 2000,
    barge_in_grace_ms: Annotated[int, typer.Option(help="...stopping no later than this after the backchannel "
                                                        "ended")] = 1200,
    junit: Annotated[Path | None, typer.Option(help="also write the fixtures' expectation checks as JUnit XML here: "
                                                    "a test case per check, an error per call that failed")] = None,
    fail_on_expectations: Annotated[bool, typer.Option(
        "--fail-on-expectations", help="exit 1 when an expectation check failed, 3 when no turn carried any "
        "(default: the checks never change the exit status)")] = False,
) -> None:
    """Play fixtures to a voice agent over a telephone media stream (WebSocket, 8 kHz µ-law) and measure it
    from its audio alone: FAR, stop latency, recovery, false barge-ins, talk-over, the line's own latency."""
    from voicelab.call.carrier import CallOptions
    from voicelab.call.line_run import BargeInRule, check_url, load_line_fixtures, redact_url
    from voicelab.call.load import parse_levels

    try:
        check_url(url)
        levels = parse_levels(concurrency)
    except ValueError as e:
        fail(str(e))
    for name, v in (("--repeat", repeat), ("--concurrency", levels[0]), ("--connect-timeout-ms", connect_timeout_ms),
                    ("--answer-timeout-ms", answer_timeout_ms), ("--no-reply-timeout-ms", no_reply_timeout_ms),
                    ("--stop-silence-ms", stop_silence_ms)):
        if v < 1:
            fail(f"{name} {v}: needs at least 1")
    if max_call_ms is not None and max_call_ms < 1000:
        fail(f"--max-call-ms {max_call_ms}: needs at least 1000")
    check_junit_path(junit)
    if ray is not None and not ray.strip():
        fail("--ray '': needs an address ('local', 'auto', 'host:port' or 'ray://host:10001')")
    if not cpus_per_task > 0:
        fail(f"--cpus-per-task {cpus_per_task}: needs more than 0")
    opts = CallOptions(headers=_pairs(header, ":", "--header", "'Name: value'"),
                       params=_pairs(param, "=", "--param", "key=value"),
                       connect_timeout_s=connect_timeout_ms / 1000, answer_timeout_s=answer_timeout_ms / 1000,
                       no_reply_timeout_s=no_reply_timeout_ms / 1000, greeting=greeting,
                       max_call_s=None if max_call_ms is None else max_call_ms / 1000)
    console = Console(width=None if sys.stdout.isatty() else 100)
    shown = redact_url(url)

    def done(r: CallResult) -> None:
        if r.failure:
            typer.echo(f"error: {r.call_id}: {shown}: {r.failure}", err=True)
        else:
            console.print(f"{r.call_id}: {len(r.log.utterances)} caller turns, {r.duration_s:.1f} s")

    try:
        fxs = load_line_fixtures(fixtures or [])  # a bad fixture stops the run before a cluster is joined
    except (FixtureError, ValueError) as e:
        fail(str(e))
    with ExitStack() as stack:
        cluster = None if ray is None else _join(stack, ray, console)
        run_dir, results, status = _calls(url, fxs, levels, out, opts, repeat, readback, listen, junit,
                                          fail_on_expectations, BargeInRule(stop_silence_ms, barge_in_grace_ms),
                                          console, done, cluster, cpus_per_task)
    if any(r.failure for r in results):
        raise typer.Exit(1)
    if status:
        raise typer.Exit(status)


def _join(stack: ExitStack, address: str, console: Console) -> Any:
    """This process as a driver of the Ray cluster, before any call or folder (one line if it cannot)."""
    from voicelab.runs.cluster import ClusterError, joined

    try:
        return stack.enter_context(joined(address, None, echo=console.print))
    except ClusterError as e:
        fail(str(e))


def _calls(url: str, fxs: list[Fixture], levels: list[int], out: Path, opts: CallOptions, repeat: int,
           readback: bool, listen: bool, junit: Path | None, fail_on_expectations: bool, rule: BargeInRule,
           console: Console, done: Callable[[CallResult], None], cluster: Any,
           cpus_per_task: float) -> tuple[Path, list[CallResult], int]:
    """The calls of one level or a sweep of levels, their tables and the expectations' gate."""
    from voicelab.call.line_run import run_line_calls
    from voicelab.call.load import load_sweep, load_table

    try:
        if len(levels) > 1:  # a load sweep: one run folder per level, then one table and load.png
            root, levels_run = load_sweep(url, fxs * repeat, levels, out, opts=opts, readback=readback, rule=rule,
                                          command=list(sys.argv), on_done=done, ray=cluster,
                                          cpus_per_call=cpus_per_task)
            console.print(load_table(levels_run))
            console.print(f"load folder: {root} (load.png, load.csv, one run folder per level)")
            status = report_expectations(console, sorted(p.parent for p in root.rglob("summary.json")), junit,
                                         fail_on_expectations)
            raise typer.Exit(1 if any(r.calls_failed for r in levels_run) else status)
        run_dir, results = run_line_calls(url, fxs, out, opts=opts, repeat=repeat, concurrency=levels[0],
                                          readback=readback, rule=rule, command=list(sys.argv), on_done=done,
                                          listen=listen, ray=cluster, cpus_per_call=cpus_per_task)
    except (FixtureError, RunFolderError, ValueError) as e:
        fail(str(e))
    import json

    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    print_call_tables(console, read_turn_rows(run_dir), summary)
    if summary.get("tasks"):  # scenario calls: did the caller get what it called for?
        console.print("tasks: " + ", ".join(f"{cid} {o}" for cid, o in summary["tasks"]["by_call"].items()))
    console.print(f"run folder: {run_dir}")
    return run_dir, results, report_expectations(console, [run_dir], junit, fail_on_expectations)
