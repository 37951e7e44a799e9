"""`voicelab call URL FIXTURE...`: measure any voice agent from its audio over a telephone media stream.

Imports stay light: the carrier needs websockets and numpy only; Whisper (for the read-back) loads inside
the run, after the calls.
"""

from __future__ import annotations

import sys
from itertools import groupby
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from voicelab.cli.common import fail
from voicelab.fixtures import FixtureError
from voicelab.runs.console import _f, _pci
from voicelab.runs.folder import RunFolderError


def _pairs(items: list[str] | None, sep: str, what: str, example: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            fail(f"{what} {item!r}: expected {example}")
        out[key.strip()] = value.strip()
    return out


def _call_flags(r: dict[str, Any]) -> str:
    out = []
    if r.get("false_barge_in") is True:
        out.append("false barge-in")
    if isinstance(r.get("talk_over_ms"), int | float) and r["talk_over_ms"] > 0:
        out.append(f"talk-over {_f(r['talk_over_ms'])} ms")
    return ", ".join(out)


def print_call_tables(console: Console, rows: list[dict[str, Any]], s: dict[str, Any]) -> None:
    """One narrow table per call, then the overall figures as figure | value; a figure the audio cannot show
    is "not measured", never 0."""
    console.print(f"[bold]{s['run_id']}: per turn (from the line's audio)[/bold]")
    for call_id, turns in groupby(rows, key=lambda r: r.get("call_id")):
        t = Table(title=f"call {call_id}", title_justify="left", expand=False, pad_edge=False)
        t.add_column("turn", justify="right")
        t.add_column("expect", overflow="fold")
        for name in ("FAR\nms", "stop\nms", "recovery\nms"):
            t.add_column(name, justify="right")
        t.add_column("answer")
        t.add_column("heard", overflow="fold", ratio=3)
        t.add_column("flags", overflow="fold", ratio=1)
        for r in turns:
            ok = r.get("answer_correct")
            t.add_row(_f(r.get("turn")), _f(r.get("expect")) if r.get("expect") else "", _f(r.get("far_ms")),
                      _f(r.get("stop_latency_ms")), _f(r.get("recovery_ms")),
                      "—" if ok is None else ("ok" if ok else "wrong"), _f(r.get("readback_text")), _call_flags(r))
        console.print(t)
    line = s.get("line") or {}
    ans = s.get("answers")
    cells = [
        ("calls (failed)", f"{s['calls']} ({s.get('calls_failed', 0)})"), ("turns", _f(s["turns"])),
        ("FAR p50 / p95 ms", f"{_pci(s['far_ms'], 'p50')} / {_pci(s['far_ms'], 'p95')}"),
        ("stop p50 / p95 ms", f"{_f(s['stop_latency_ms']['p50'])} / {_f(s['stop_latency_ms']['p95'])}"),
        ("recovery p50 ms", _f(s["recovery_ms"]["p50"])),
        ("false barge-ins", _f(s["false_barge_ins"])),
        ("talk-over p95 ms", _f((s.get("talk_over_ms") or {}).get("p95"))),
        ("answers correct", "not measured" if ans is None else
         ("—" if ans["correct"] is None else f"{100 * ans['correct']:.0f} % of {ans['n']}")),
        ("line: queue delay p95 ms", _f((line.get("queue_delay_ms") or {}).get("p95"))),
        ("line: queue depth p95 ms", _f((line.get("queue_depth_ms") or {}).get("p95"))),
        ("line: agent jitter ms", _f(line.get("agent_jitter_ms"), 1)),
        ("line: caller frames late p95 ms", _f((line.get("caller_send_late_ms") or {}).get("p95"), 1)),
        ("line: clears", _f(line.get("clears"))),
        ("FAR from the WAV vs events, Δp95 ms", _f(s["truth"]["far_abs_diff_ms_p95"])),
    ]
    o = Table(title="overall", title_justify="left", expand=False, pad_edge=False)
    o.add_column("figure")
    o.add_column("value", justify="right", overflow="fold")
    for name, value in cells:
        o.add_row(name, value)
    console.print(o)
    console.print("[dim]not measured (a recording of the line cannot show them): "
                  f"{', '.join(s.get('not_measured') or [])}[/dim]")


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
    concurrency: Annotated[int, typer.Option(help="calls on the line at the same time (a load test)")] = 1,
    greeting: Annotated[bool, typer.Option(help="the agent greets at call start (turn 0 waits for it)")] = True,
    readback: Annotated[bool, typer.Option(help="after the calls, read the agent's replies back with Whisper "
                                                "tiny.en and score answers where fixtures say")] = True,
    connect_timeout_ms: Annotated[int, typer.Option(help="give up on the WebSocket handshake after this")] = 10000,
    answer_timeout_ms: Annotated[int, typer.Option(help="fail a call whose agent sent no audio this long after "
                                                        "the caller's first turn")] = 15000,
    no_reply_timeout_ms: Annotated[int, typer.Option(help="a caller turn waiting for a reply that never came "
                                                          "starts after this")] = 6000,
    max_call_ms: Annotated[int | None, typer.Option(help="end a call after this (default: the fixture's length "
                                                         "plus time for every reply)")] = None,
    stop_silence_ms: Annotated[int, typer.Option(help="false barge-in without a clear: the agent's audio stopped "
                                                      "on a backchannel and stayed silent this long")] = 800,
    barge_in_grace_ms: Annotated[int, typer.Option(help="...stopping no later than this after the backchannel "
                                                        "ended")] = 1200,
) -> None:
    """Play fixtures to a voice agent over a telephone media stream (WebSocket, 8 kHz µ-law) and measure it
    from its audio alone: FAR, stop latency, recovery, false barge-ins, talk-over, the line's own latency."""
    from voicelab.call.carrier import CallOptions, CallResult
    from voicelab.call.line_run import BargeInRule, check_url, load_line_fixtures, redact_url, run_line_calls

    try:
        check_url(url)
    except ValueError as e:
        fail(str(e))
    for name, v in (("--repeat", repeat), ("--concurrency", concurrency), ("--connect-timeout-ms", connect_timeout_ms),
                    ("--answer-timeout-ms", answer_timeout_ms), ("--no-reply-timeout-ms", no_reply_timeout_ms),
                    ("--stop-silence-ms", stop_silence_ms)):
        if v < 1:
            fail(f"{name} {v}: needs at least 1")
    if max_call_ms is not None and max_call_ms < 1000:
        fail(f"--max-call-ms {max_call_ms}: needs at least 1000")
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
        fxs = load_line_fixtures(fixtures or [])
        run_dir, results = run_line_calls(url, fxs, out, opts=opts, repeat=repeat, concurrency=concurrency,
                                          readback=readback, rule=BargeInRule(stop_silence_ms, barge_in_grace_ms),
                                          command=list(sys.argv), on_done=done)
    except (FixtureError, RunFolderError, ValueError) as e:
        fail(str(e))
    import csv
    import json

    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    with (run_dir / "turns.csv").open(encoding="utf-8") as f:
        rows = [{k: (v if v != "" else None) for k, v in r.items()} for r in csv.DictReader(f)]
    print_call_tables(console, rows, summary)
    console.print(f"run folder: {run_dir}")
    if any(r.failure for r in results):
        raise typer.Exit(1)
