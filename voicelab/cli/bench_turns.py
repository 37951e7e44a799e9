"""`voicelab bench turns`: dead air against false cut-offs for each turn-end strategy (voicelab.turnbench)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from voicelab.cli.common import fail, threads_option


def bench_turns(
    fixtures: Annotated[list[Path] | None, typer.Option(
        "--fixtures", help="bench your own calls: fixture folders or fixture.json files (repeat the option); "
                           "replaces the generated corpus and the bundled fixtures")] = None,
    strategy: Annotated[list[str] | None, typer.Option(
        "--strategy", help="a strategy of your own, MODULE:ATTRIBUTE (see docs/turn-bench.md); repeatable")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="output folder: turn_bench.json (every figure, curve and case), turn_bench.png")] = None,
    plot: Annotated[Path | None, typer.Option(
        "--plot", help="draw the --curve strategies' curves on the group benched (--group, or the first) to "
                       "PATH (.png or .svg): a line at 5 % false cut-offs, each curve's dead air there, the "
                       "words ceiling where computed, eot-bench's published points for orientation")] = None,
    curve: Annotated[list[str] | None, typer.Option(
        "--curve", help="a strategy to draw with --plot (repeat the option; default: every strategy benched)")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print one JSON object per strategy")] = False,
    group: Annotated[str | None, typer.Option(
        "--group", help="bench one group only and print its rows: generated, human, human-calls, human-read, bundled, real")] = None,
    limit: Annotated[int | None, typer.Option(help="only the first N generated cases (a quick look)")] = None,
    resamples: Annotated[int, typer.Option(help="bootstrap resamples for the intervals (0: none)")] = 1000,
    cache: Annotated[Path | None, typer.Option(help="score cache folder (default .cache/turnbench)")] = None,
    threads: Annotated[int | None, typer.Option(
        help="CPU threads for Whisper while filling the cache (default: VOICELAB_CPU_THREADS, else 2)")] = None,
    decision: Annotated[Path | None, typer.Option(
        help="a decision model folder (the shipped layout) to ask about the cached readings instead of the "
             "shipped model")] = None,
    mode: Annotated[str, typer.Option(
        "--mode", help="pipeline: each strategy as the pipeline runs it, on its VAD's silences (default); eot: "
                       "as LiveKit's eot-bench scores it, every 100 ms through every labelled silence, "
                       "threshold, action delay and timeout swept (docs/turn-bench.md)")] = "pipeline",
    eot_bench: Annotated[Path | None, typer.Option(
        "--eot-bench", help="with --mode eot: bench a local copy of livekit/eot-bench-data (a parquet file or a "
                            "folder of them, the published schema) instead of the lab's human groups")] = None,
    language: Annotated[str, typer.Option(
        help="with --eot-bench: the rows' language to bench (a code such as en, de; 'all' for every one)")] = "en",
) -> None:
    """Dead air after the true end of speech against false cut-offs (mid-turn pauses declared an end), each
    strategy swept over its knob on the same labelled points: the generated pause corpus, real human speech
    (meeting turns, read utterances), the bundled fixtures and the real recordings; plus false barge-ins and
    stop latency on sounds over the bot."""
    from rich.console import Console

    from voicelab.fixtures.format import FixtureError
    from voicelab.turnbench import turn_bench as bench
    from voicelab.turnbench.audio import AudioError
    from voicelab.turnbench.cases import CACHE_ROOT

    console = Console(stderr=True)
    threads = threads_option(threads)
    if limit is not None and limit < 1:
        fail("--limit must be at least 1")
    if resamples < 0:
        fail("--resamples must be >= 0")
    if plot is not None and plot.suffix.lower() not in bench.PLOT_SUFFIXES:
        fail(f"--plot {plot}: expected a .png or .svg file")
    if curve and plot is None:
        fail("--curve chooses the curves of --plot: give --plot PATH too")
    if group is not None and fixtures:
        fail("--group and --fixtures exclude each other (your fixtures are group user)")
    if mode not in bench.MODES:
        fail(f"--mode {mode!r}: expected one of {', '.join(bench.MODES)}")
    if mode == "eot":
        if strategy or plot is not None or decision is not None or limit is not None:
            fail("--mode eot scores smart-turn and silence only: --strategy, --plot, --decision and --limit "
                 "belong to --mode pipeline")
        if eot_bench is not None and (group is not None or fixtures):
            fail("--eot-bench replaces the lab's groups: give it without --group or --fixtures")
        _bench_eot(fixtures, group, eot_bench, None if language == "all" else language, out, json_out,
                   resamples, cache, threads)
        return
    if eot_bench is not None:
        fail("--eot-bench needs --mode eot")
    t_start = time.monotonic()
    try:
        strategies = bench.all_strategies(strategy or ())
        names = [s.name for s in strategies]
        for c in curve or ():
            if c not in names:
                fail(f"--curve {c!r}: not a strategy benched here (expected one of {', '.join(names)})")
        if fixtures:
            refs = bench.fixture_refs(fixtures, {}, "user")
        else:
            refs = bench.refs_for(group, limit)
        from engines.decision.model import installed  # torch: imported when the command runs, not at start-up

        if decision is not None and not installed(decision):
            fail(f"--decision {decision}: not a decision model folder (no config.json or ensemble.json)")
        docs = bench.load_scores(refs, cache or CACHE_ROOT, threads,
                                 progress=lambda s: console.print(f"[dim]{s}[/dim]"), decision=decision)
        t_bench = time.monotonic()
        result = bench.run_bench(docs, strategies, resamples=resamples,
                                 progress=lambda s: console.print(f"[dim]{s}[/dim]"))
    except (bench.TurnBenchError, FixtureError, AudioError) as e:
        fail(str(e))
    result["timing_s"] = {"scores": round(t_bench - t_start, 1), "bench": round(time.monotonic() - t_bench, 1)}
    result["command"] = "voicelab bench turns " + " ".join(sys.argv[3:])
    summary = bench.json_summary(result)
    if out is not None:
        from voicelab.runs.folder import versions

        out.mkdir(parents=True, exist_ok=True)
        doc = {**bench.strip_private(result), "summary": summary, "versions": versions()}
        (out / "turn_bench.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        bench.plot(result, out / "turn_bench.png")
        console.print(f"wrote {out / 'turn_bench.json'} and {out / 'turn_bench.png'}")
    if plot is not None:
        plot.parent.mkdir(parents=True, exist_ok=True)
        try:
            bench.plot_curves(result, plot, curve, group)
        except bench.TurnBenchError as e:
            fail(str(e))
        console.print(f"wrote {plot}")
    if json_out:
        typer.echo(json.dumps(summary, indent=1))
        return
    _print_tables(result)


def _bench_eot(fixtures: list[Path] | None, group: str | None, eot_bench: Path | None, language: str | None,
               out: Path | None, json_out: bool, resamples: int, cache: Path | None, threads: int) -> None:
    """`--mode eot`: score every labelled silence every 100 ms, sweep, print the operating points."""
    from rich.console import Console

    from voicelab.fixtures.format import FixtureError
    from voicelab.turnbench import turn_bench as bench
    from voicelab.turnbench.audio import AudioError
    from voicelab.turnbench.cases import CACHE_ROOT

    console = Console(stderr=True)
    t0 = time.monotonic()
    try:
        if eot_bench is not None:
            from voicelab.turnbench.eot_data import EotDataError, eot_bench_refs

            try:
                refs = eot_bench_refs(eot_bench, language)
            except EotDataError as e:
                fail(str(e))
            dataset = f"eot-bench-data (local copy: {eot_bench})"
        elif fixtures:
            refs, dataset = [r for r in bench.fixture_refs(fixtures, {}, "user") if r.kind == "turn"], "your fixtures"
        else:
            refs, dataset = bench.eot_refs(group), bench.HUMAN_DATASET
        if not refs:
            fail("--mode eot: no labelled turns to bench here")
        result = bench.run_eot(refs, cache or CACHE_ROOT, threads=threads, resamples=resamples, dataset=dataset,
                               progress=lambda s: console.print(f"[dim]{s}[/dim]"))
    except (bench.TurnBenchError, FixtureError, AudioError) as e:
        fail(str(e))
    result["timing_s"] = round(time.monotonic() - t0, 1)
    result["command"] = "voicelab bench turns " + " ".join(sys.argv[3:])
    rows = [*result["rows"], *result["reference"]]
    if out is not None:
        from voicelab.runs.folder import versions

        out.mkdir(parents=True, exist_ok=True)
        (out / "turn_bench_eot.json").write_text(json.dumps({**result, "versions": versions()}, indent=1) + "\n",
                                                 encoding="utf-8")
        console.print(f"wrote {out / 'turn_bench_eot.json'}")
    if json_out:
        typer.echo(json.dumps(rows, indent=1))
        return
    _print_eot(result)


def _eot_cell(value: float | None, ci: list[float] | None, pct: bool) -> str:
    if value is None:
        return "-"
    text = f"{value:.1%}" if pct else f"{value:.0f} ms"
    if ci:
        text += f" [{ci[0]:.1%}, {ci[1]:.1%}]" if pct else f" [{ci[0]:.0f}, {ci[1]:.0f}]"
    return text


def _setting_cell(s: dict[str, Any] | None) -> str:
    if not s:
        return "-"
    if "threshold" in s:
        return f"P>={s['threshold']:.2f}, delay {s['action_delay_ms']}, timeout {s['timeout_ms']}"
    return f"timeout {s['timeout_ms']}"


def _print_eot(result: dict[str, Any]) -> None:
    """The eot mode's tables: per group, each strategy's four operating points, then eot-bench's published rows."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="eot mode: every labelled silence scored every 100 ms (mean latency after the true end; "
                        "95 % bootstrap intervals); the setting reaching 5 % below each row")
    for col in ("group", "strategy", "latency at 5 %", "at 10 %", "false cut-offs at 300 ms", "at 600 ms"):
        table.add_column(col, justify="left" if col in ("group", "strategy") else "right")
    for r in [*result["rows"], *result["reference"]]:
        lat, cut = r["latency_ms_at"], r["false_cutoffs_at_ms"]
        lci, cci = r.get("latency_ms_ci_at", {}), r.get("false_cutoffs_ci_at_ms", {})
        name = r.get("system", r["strategy"]) + (" (shipped)" if r["default"] else "")
        grp = result["groups"].get(r["group"])
        label = r["group"] + (f" ({grp['pauses']} pauses, {grp['ends']} ends)" if grp else "")
        table.add_row(label, name, _eot_cell(lat["5%"], lci.get("5%"), False),
                      _eot_cell(lat["10%"], lci.get("10%"), False), _eot_cell(cut["300"], cci.get("300"), True),
                      _eot_cell(cut["600"], cci.get("600"), True))
        if r.get("setting"):
            table.add_row("", "[dim]setting[/dim]", f"[dim]{_setting_cell(r['setting']['5%'])}[/dim]",
                          f"[dim]{_setting_cell(r['setting']['10%'])}[/dim]",
                          f"[dim]{_setting_cell(r['setting']['300'])}[/dim]",
                          f"[dim]{_setting_cell(r['setting']['600'])}[/dim]")
    Console(width=max(160, Console().width)).print(table)
    for g, rows in result.get("ratios", {}).items():
        cells = ", ".join(f"{_ratio_cell(r)} at {r['at']}" for r in rows)
        Console().print(f"{g}: {rows[0]['of']} over {rows[0]['over']} (paired, same silences): {cells}")
        med = [(r["at"], r.get("median_at_setting")) for r in rows]
        Console().print(f"{g}: median dead air at the setting reaching each rate, over silence only at its false "
                        "cut-off rate: " + ", ".join(f"{m['latency_ms_median']} ms, {_ratio_cell(m)} at {at}"
                                                     for at, m in med if m))
    for g, c in result["cpu"].items():
        if c["ms_per_silence_s"] is not None:
            Console(stderr=True).print(f"[dim]{g}: smart-turn every 100 ms of silence costs {c['ms_per_silence_s']} ms "
                                       f"of compute per second of silence ({c['passes']} passes, mean "
                                       f"{c['pass_ms_mean']} ms, this machine, when the cache was filled)[/dim]")


def _ratio_cell(r: dict[str, Any] | None) -> str:
    """`0.80x [0.55, 1.20]`, or `-` where either strategy never reaches the level."""
    if r is None or r.get("ratio") is None:
        return "-"
    ci = r.get("ci")
    return f"{r['ratio']:.2f}x" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def _print_tables(result: dict[str, Any]) -> None:
    """Each main group's figures (pass times removed, then added), the fixtures at the shipped settings, the
    barge-in cases."""
    from rich.console import Console
    from rich.table import Table

    from voicelab.analysis import calibration
    from voicelab.turnbench import turn_bench as bench
    from voicelab.turnbench.curve import level_key

    console = Console(stderr=True)
    f = bench.fmt_ms
    for g in bench.summary_groups(result):
        for passes in ("passes_removed", "passes_added"):
            _curve_table(result, g, passes)
    verdict = calibration.turn_verdict(result)
    if verdict:
        Console().print(verdict)
    ratios = result.get("ratios", {})
    if ratios:
        rt = Table(title=f"the shipped rule ({bench.SHIPPED}) over each baseline, median dead air at "
                         f"{level_key(bench.RATIO_LEVEL)} false cut-offs, and at the shipped setting over the baseline at "
                         "the same false cut-off rate; same points (paired bootstrap, pass times removed)")
        rt.add_column("group")
        for base in bench.BASELINES:
            rt.add_column(f"over {base} at {level_key(bench.RATIO_LEVEL)}", justify="right")
            rt.add_column(f"over {base} at the shipped setting", justify="right")
        for g, rows in ratios.items():
            by = {r["over"]: r for r in rows}
            cells = []
            for base in bench.BASELINES:
                cells += [_ratio_cell(by.get(base)), _ratio_cell((by.get(base) or {}).get("at_shipped_setting"))]
            rt.add_row(g, *cells)
        Console().print(rt)
    other = Table(title="shipped settings on the fixtures (pass times removed): false cut-offs, dead air p50 / p95")
    other.add_column("strategy")
    groups = [g for g in result["groups"] if g not in bench.summary_groups(result)]
    for g in groups:
        other.add_column(f"{g} ({result['groups'][g]['pauses']} pauses, {result['groups'][g]['ends']} ends)",
                         justify="right")
    for e in result["strategies"]:
        cells = []
        for g in groups:
            d = e["groups"][g]["passes_removed"]["at_default"]
            cells.append(f"{d['false_cutoffs']} of {d['pauses']}, {f(d['dead_air_p50_ms'])} / {f(d['dead_air_p95_ms'])}")
        other.add_row(e["strategy"], *cells)
    if groups:
        Console().print(other)
    if not result["barge_in"]:
        return
    bi = Table(title="barge-in (pause, decide, resume; pass times added)")
    for col in ("cases", "backchannels / noises", "false barge-ins", "interruptions", "missed", "stop latency p50 / p95"):
        bi.add_column(col, justify="left" if col == "cases" else "right")
    for g, s in result["barge_in"].items():
        lat = s["stop_latency_ms"]
        bi.add_row(g, str(s["backchannels"]), str(s["false_barge_ins"]), str(s["interruptions"]),
                   str(s["missed_interruptions"]), f"{f(lat['p50'])} / {f(lat['p95'])} ms")
    Console().print(bi)
    console.print(f"[dim]scores {result['timing_s']['scores']} s (cached after the first run), "
                  f"bench {result['timing_s']['bench']} s[/dim]")


def _curve_table(result: dict[str, Any], g: str, passes: str) -> None:
    """One group's figures read off its curves (dead air at 1-10 % false cut-offs, cut-offs at 300-800 ms)."""
    from rich.console import Console
    from rich.table import Table

    from voicelab.turnbench import turn_bench as bench

    f = bench.fmt_ms
    grp = result["groups"][g]
    unheard = f" ({grp['vad_unheard']} cases the VAD never heard left out)" if grp.get("vad_unheard") else ""
    table = Table(title=f"{g}: {grp['pauses']} mid-turn pauses, {grp['ends']} true ends{unheard}; "
                        f"model pass times {passes.split('_')[1]}; dead air median / p95 (ms)")
    for col in ("strategy", "at 1 %", "at 2 %", "at 5 %", "at 10 %", "cut-offs at 300 / 500 / 800 ms",
                "shipped setting: cut-offs, dead air"):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    for e in result["strategies"]:
        r = e["groups"][g][passes]
        at = [f"{f(r['dead_air_p50_ms_at'][k])} / {f(r['dead_air_p95_ms_at'][k])}" for k in ("1%", "2%", "5%", "10%")]
        cut = " / ".join("-" if v is None else f"{v:.1%}" for v in r["false_cutoffs_at"].values())
        d = r["at_default"]
        rate = "-" if d["false_cutoff_rate"] is None else f"{d['false_cutoff_rate']:.1%}"
        table.add_row(f"{e['strategy']} ({e['knob']})", *at, cut,
                      f"{e['knob']}={d['value']}: {rate}, {f(d['dead_air_p50_ms'])} / {f(d['dead_air_p95_ms'])}")
    ceiling = result.get("words_ceiling")
    if ceiling is not None and g == "generated" and passes == "passes_removed":
        at = [f"{f(ceiling['dead_air_p50_ms_at'][k])}" for k in ("1%", "2%", "5%", "10%")]
        cut = " / ".join("-" if v is None else f"{v:.1%}" for v in ceiling["false_cutoffs_at"].values())
        table.add_row("[dim]words ceiling (reference: perfect words, no hesitation cue)[/dim]", *at, cut, "")
    Console().print(table)
