"""Recorded calls in, honest latency figures out: the main job behind `voicelab run`.

Each configuration runs the fixtures one call at a time (or `concurrency` at a time, or, with `ray_address`,
as Ray tasks of one call each), in real time, through `voicelab.pipeline`, into a run folder written by
`voicelab.runs.folder` (summary.json from `voicelab.measure.metrics.summarize`, with the WAV truth figures,
written last as the seal). A matrix writes one run folder per configuration under
DIR/<matrix_id>/ plus matrix.json. Tables per turn and overall are printed with rich.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack, nullcontext
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loguru import logger
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from engines.protocol import EngineLike
from voicelab.analysis.price import price_summary
from voicelab.analysis.tables import write_parquet
from voicelab.fixtures import Fixture, load_fixture, select
from voicelab.gate import ShaperParams
from voicelab.measure.events import Event, EventKind, EventWriter, read_events
from voicelab.measure.metrics import summarize, turn_table
from voicelab.measure.truth import TruthError, analyze_run
from voicelab.pipeline.assembly import run_call
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.pipeline.options import check_engine
from voicelab.pipeline.resources import Resources, open_engine_for
from voicelab.rules.faults import outcomes
from voicelab.runs.cluster import joined, task_error
from voicelab.runs.folder import CONFIG, EVENTS, SUMMARY, RunFolder, write_matrix

MATRIX_HELP = ("default (pinned and final diffusion, a revising sampler unpinned, AR + shaper), profiles (every "
               "engine timing profile x {pinned, final}) or profiles:NAME,NAME (those profiles only)")


def default_matrix(base: PipelineConfig | None = None, name: str = "default") -> list[PipelineConfig]:
    """The side-by-side of the issue: pinned diffusion, `final`, a revising sampler unpinned, AR + shaper;
    `name` "profiles[:NAME,NAME]" gives `profile_matrix` instead (MATRIX_HELP)."""
    b = base or PipelineConfig()
    kind, _, names = name.partition(":")
    if kind == "profiles":
        return profile_matrix(b, [n.strip() for n in names.split(",") if n.strip()] or None)
    if name != "default":
        raise PipelineConfigError(f"--matrix '{name}': unknown matrix (one of: {MATRIX_HELP})")
    return [
        replace(b, engine="diffusion", sampler="threshold", policy="pinned", label="diffusion-threshold-pinned"),
        replace(b, engine="diffusion", sampler="threshold", policy="final", label="diffusion-threshold-final"),
        replace(b, engine="diffusion", sampler="revising", policy="stable:2", label="diffusion-revising-stable2"),
        # the same with speculative synthesis (issue 11.3): confident drafts synthesized early, held audio
        replace(b, engine="diffusion", sampler="revising", policy="stable:2", speculative_tts=0.9,
                label="diffusion-revising-stable2-spec0.9"),
        replace(b, engine="ar", sampler="autoregressive", policy="prefix", label="ar-autoregressive-prefix"),
    ]


def profile_matrix(base: PipelineConfig, names: Sequence[str] | None = None) -> list[PipelineConfig]:
    """Every timing profile (engines/simulated/profiles.py; or those named) under `pinned` and under `final`: what the
    gate is worth once the engine is slow (first_token_to_audio_ms separates the two).

    A diffusion profile's drafts are all visible and wrong in places until its block settles (a revising
    stream, engines/simulated/reveal.py), so `pinned` uses the block frontier there (`pinned:block`, DESIGN.md §2);
    plain `pinned` (prefix) would speak a first draft's wrong words.
    """
    from engines.simulated.profiles import PROFILES, get_profile

    chosen = [get_profile(n) for n in names] if names else list(PROFILES.values())
    return [replace(base, engine=f"profile:{p.name}", sampler=None, label=None,
                    policy=("pinned:block" if p.kind == "diffusion" else "pinned") if pinned else "final")
            for p in chosen for pinned in (True, False)]


def _utc_stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_fixtures(specs: Sequence[str] | None) -> list[Fixture]:
    """Fixtures named on the command line (names under audio_fixtures/ or paths; none = the default list)."""
    paths = select(list(specs) if specs else ["default"])
    return [load_fixture(p) for p in paths]


# ---- truth from the recording ----------------------------------------------------------------------------

def truth_rows(run_dir: Path) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The WAV analyzer's rows for a run folder (`voicelab.measure.truth`), or None and why not."""
    try:
        return analyze_run(run_dir), None
    except TruthError as e:
        return None, f"truth analyzer: {e}"


# ---- one configuration -------------------------------------------------------------------------------------

def config_record(cfg: PipelineConfig, engine: EngineLike, fixtures: Sequence[Fixture]) -> dict[str, Any]:
    """What config.json says of a configuration (the writer adds versions, host and command)."""
    desc = engine.describe()
    return {
        "engine": cfg.engine_label(), "engine_arg": cfg.engine, "label": cfg.slug(),
        "sampler": engine.sampler, "sampler_config": desc.get("sampler_config"),
        "engine_describe": desc, "policy": cfg.policy, "shaper": cfg.to_dict()["shaper"],
        "stt": cfg.stt, "vad": cfg.vad, "vad_start_secs": cfg.vad_start_secs, "vad_stop_secs": cfg.vad_stop_secs,
        "barge_in": cfg.barge_in, "turn": cfg.turn, "keep_leading_ms": cfg.keep_leading_ms,
        "sample_rate": cfg.sample_rate, "seed": cfg.seed, "pipeline": cfg.to_dict(),
        "fixtures": [{"name": f.name, "path": str(f.path), "sha256": _sha256(f.path)} for f in fixtures],
    }


def finish_run(folder: RunFolder, events: list[Event], meta: Mapping[str, Any],
               extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """turns.csv, the truth figures, the Parquet tables, then summary.json (the seal). Returns the summary.
    `extra` adds figures only some runs have (a live session's client-side figures)."""
    folder.write_turns_csv(turn_table(events))
    truth, note = truth_rows(folder.path)
    summary = summarize(events, {"run_id": folder.run_id, **dict(meta)}, truth=truth)
    summary["price"] = price_summary(events, json.loads((folder.path / CONFIG).read_text(encoding="utf-8")))
    summary.update(extra or {})
    notes = [n for n in (note, _write_tables(folder.path, events, truth)) if n]
    folder.write_notes(notes)
    folder.seal(summary)
    return summary


def _write_tables(run_dir: Path, events: list[Event], truth: list[dict[str, Any]] | None) -> str | None:
    """events/turns/chunks .parquet; a note instead of a crash if that fails (summary.json still seals)."""
    try:
        write_parquet(run_dir, truth_rows=truth, events=events)
    except Exception as e:
        return f"parquet tables not written: {type(e).__name__}: {e}"
    return None


def check_ray(address: str | None, concurrency: int = 1, cpus_per_call: float = 1.0) -> None:
    """`voicelab run --ray ADDRESS`: the options that go with it, one line each (the cluster is joined later)."""
    if address is None:
        return
    if not address.strip():
        raise PipelineConfigError("--ray '': needs an address ('local', 'auto', 'host:port' or 'ray://host:10001')")
    if concurrency != 1:
        raise PipelineConfigError(f"--ray {address} --concurrency {concurrency}: on Ray the cluster decides how many "
                                  "calls play at once (--cpus-per-call sets what each one reserves); leave "
                                  "--concurrency out")
    if not cpus_per_call > 0:
        raise PipelineConfigError(f"--cpus-per-call {cpus_per_call}: needs more than 0")


def call_ids(fixtures: Sequence[Fixture], repeat: int = 1) -> list[tuple[str, Fixture]]:
    """(call_id, fixture) in playing order: the list once per repetition; with repeat > 1 the ids carry it
    (r1-00-NAME, r2-00-NAME, ...), so N repetitions pool into one run folder."""
    if repeat < 1:
        raise PipelineConfigError(f"--repeat {repeat}: needs at least 1")
    return [(f"{f'r{r}-' if repeat > 1 else ''}{i:02d}-{fx.name}", fx)
            for r in range(1, repeat + 1) for i, fx in enumerate(fixtures)]


async def _run_calls(cfg: PipelineConfig, res: Resources, fixtures: Sequence[Fixture], folder: RunFolder,
                     writer: EventWriter, progress: Progress | None, repeat: int = 1, concurrency: int = 1,
                     **call_kw: Any) -> list[Event]:
    """Every call of the plan, `concurrency` at a time (each its own pipeline; the engine is shared and steps
    in its one worker thread). Events come back in plan order."""
    task = None
    plan = call_ids(fixtures, repeat)
    if progress is not None:
        task = progress.add_task(cfg.slug(), total=len(plan))
    slots = asyncio.Semaphore(concurrency)

    async def one(call_id: str, fx: Fixture) -> list[Event]:
        async with slots:
            if progress is not None and task is not None:
                progress.update(task, description=f"{cfg.slug()} · {fx.name}")
            try:
                result = await run_call(fx, cfg, res, call_id, writer=writer, own_decoder=concurrency > 1,
                                        **call_kw)
                folder.write_call(call_id, result.stereo, result.sample_rate, result.meta)
                out = result.log.events
            except Exception as e:  # a broken call is an error row; the run goes on
                err = _error_row(call_id, e)
                writer.write(err)
                out = [err]
            if progress is not None and task is not None:
                progress.advance(task)
            return out

    per_call = await asyncio.gather(*(one(call_id, fx) for call_id, fx in plan))
    return [e for events in per_call for e in events]


def _error_row(call_id: str, exc: BaseException) -> Event:
    return Event(call_id, -1, 0, str(EventKind.ERROR), {"where": "call", "message": f"{type(exc).__name__}: {exc}"})


def _ray_call(cfg: PipelineConfig, fixture_path: str, call_id: str, call_kw: Mapping[str, Any]) -> dict[str, Any]:
    """One call as a Ray task: its own Resources and pipeline, played exactly as a local call (`run_call`).
    Returns what the driver writes: the call's events, its stereo WAV, sample rate and meta, and the warnings
    logged meanwhile (for the run's pipecat.log)."""
    warnings: list[str] = []
    logger.remove()  # pipecat's DEBUG chatter costs time in a real-time pipeline (the CLI drops it too)
    sink = logger.add(lambda m: warnings.append(str(m)), level="WARNING")
    try:
        fx = load_fixture(Path(fixture_path))
        res = Resources(cfg)
        try:
            result = asyncio.run(run_call(fx, cfg, res, call_id, **call_kw))
        finally:
            res.close()
    finally:
        logger.remove(sink)
    return {"events": result.log.events, "stereo": result.stereo, "sample_rate": result.sample_rate,
            "meta": result.meta, "warnings": "".join(warnings)}


def _run_calls_ray(ray: Any, cfg: PipelineConfig, fixtures: Sequence[Fixture], folder: RunFolder,
                   writer: EventWriter, progress: Progress | None, repeat: int = 1, cpus_per_call: float = 1.0,
                   **call_kw: Any) -> list[Event]:
    """Every call of the plan as a Ray task (`_ray_call`, `cpus_per_call` reserved each; Ray decides how many
    play at once). The driver writes each call's WAV as it comes back and the events in plan order; a task that
    fails is an error row, as a local call's exception is."""
    call_kw.pop("concurrency", None)
    plan = call_ids(fixtures, repeat)
    task = progress.add_task(f"{cfg.slug()} · Ray", total=len(plan)) if progress is not None else None
    remote = ray.remote(num_cpus=cpus_per_call, max_retries=0)(_ray_call)
    refs = [remote.remote(cfg, str(fx.path), call_id, call_kw) for call_id, fx in plan]
    index = {ref: i for i, ref in enumerate(refs)}
    back: dict[int, list[Event]] = {}
    out: list[Event] = []
    pending = list(refs)
    written = 0  # calls whose events are in events.jsonl: a prefix of the plan
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        i = index[done[0]]
        call_id = plan[i][0]
        try:
            got = ray.get(done[0])
            folder.write_call(call_id, got["stereo"], got["sample_rate"], got["meta"])
            if got["warnings"]:
                logger.opt(raw=True).log("WARNING", got["warnings"])
            back[i] = list(got["events"])
        except Exception as exc:  # a RayTaskError wraps the call's own exception; a dead worker is one too
            back[i] = [_error_row(call_id, task_error(exc))]
        while written in back:
            for e in back[written]:
                writer.write(e)
            out.extend(back.pop(written))
            written += 1
        if progress is not None and task is not None:
            progress.advance(task)
    return out


def as_config(config: PipelineConfig | Mapping[str, Any]) -> PipelineConfig:
    """A PipelineConfig from itself or a dict (engine, sampler, policy, shaper as a dict, seed, ...)."""
    if isinstance(config, PipelineConfig):
        return config
    d = dict(config)
    d.pop("fixtures", None)
    d.pop("repeat", None)  # a count of plays, not a pipeline setting (run_config's `repeat`)
    shaper = d.pop("shaper", None) or {}
    known = {f for f in PipelineConfig.__dataclass_fields__ if f != "shaper"}
    unknown = sorted(set(d) - known)
    if unknown:
        raise PipelineConfigError(f"config: unknown field(s) {', '.join(unknown)}")
    return PipelineConfig(shaper=shaper if isinstance(shaper, ShaperParams) else ShaperParams(**shaper), **d)


def as_fixtures(fixtures: Sequence[Fixture | str | Path]) -> list[Fixture]:
    out: list[Fixture] = []
    specs = [f for f in fixtures if not isinstance(f, Fixture)]
    loaded = {str(s): load_fixtures([str(s)]) for s in specs}
    for f in fixtures:
        out.extend([f] if isinstance(f, Fixture) else loaded[str(f)])
    return out


def _driver_record(cfg: PipelineConfig, fixtures: Sequence[Fixture]) -> dict[str, Any]:
    """config_record for a run whose calls load their engines elsewhere (Ray tasks): the engine opened here
    only to describe it."""
    engine = open_engine_for(cfg)
    try:
        return config_record(cfg, engine, fixtures)
    finally:
        engine.close()


def run_config(config: PipelineConfig | Mapping[str, Any], fixtures: Sequence[Fixture | str | Path], out_dir: Path,
               *, run_dir: Path | None = None, command: Sequence[str] = (), progress: Progress | None = None,
               resources: Resources | None = None, repeat: int = 1, ray_address: str | None = None,
               cpus_per_call: float = 1.0, ray_init: Mapping[str, Any] | None = None, **call_kw: Any) -> Path:
    """Run every fixture under one configuration, `repeat` times over; return the sealed run folder
    (out_dir/<run_id> unless `run_dir`).

    `ray_address` plays the calls as Ray tasks (`voicelab.runs.cluster.joined`: 'local' starts a private
    instance, `ray_init` its ray.init arguments), each loading its own Resources with `cpus_per_call` reserved;
    this process writes the run folder, the same as a local run's plus "ray" and "cpus_per_call" in config.json.
    """
    cfg = as_config(config)
    fxs = as_fixtures(fixtures)
    call_ids(fxs, repeat)  # a bad repeat count fails before anything loads
    check_ray(ray_address, call_kw.get("concurrency", 1), cpus_per_call)
    if ray_address is not None and resources is not None:
        raise PipelineConfigError(f"--ray {ray_address}: every call loads its own resources on its worker; "
                                  "`resources` does not apply")
    if resources is None:
        check_engine(cfg)  # a wrong engine/sampler pair or a broken trace: one line, before anything loads
    if run_dir is None:
        run_dir = Path(out_dir) / f"{_utc_stamp()}-{cfg.slug()}"
    with ExitStack() as stack:  # what is loaded or joined here is let go before the figures are computed
        play: Callable[[RunFolder, EventWriter], list[Event]]
        if ray_address is None:
            res = resources or Resources(cfg)  # before the folder: a model that fails to load leaves no folder
            if resources is None:
                stack.callback(res.close)
            record = config_record(cfg, res.engine, fxs)

            def play(folder: RunFolder, writer: EventWriter) -> list[Event]:
                return asyncio.run(_run_calls(cfg, res, fxs, folder, writer, progress, repeat, **call_kw))
        else:
            ray = stack.enter_context(joined(ray_address, ray_init))  # before the folder: no cluster, no folder
            record = {**_driver_record(cfg, fxs), "ray": ray_address, "cpus_per_call": cpus_per_call}

            def play(folder: RunFolder, writer: EventWriter) -> list[Event]:
                return _run_calls_ray(ray, cfg, fxs, folder, writer, progress, repeat, cpus_per_call, **call_kw)
        folder = RunFolder.create(run_dir)
        stack.callback(logger.remove, logger.add(str(run_dir / "pipecat.log"), level="WARNING"))
        config_json = folder.write_config({**record, "repeat": repeat}, command)
        with folder.events_writer() as writer:
            events = play(folder, writer)
    finish_run(folder, events, {"engine": config_json["engine"], "sampler": config_json["sampler"],
                                "policy": cfg.policy})
    return run_dir


def run_fixtures(fixture_specs: Sequence[str] | None, configs: Sequence[PipelineConfig], out: Path, *,
                 matrix: bool = False, command: Sequence[str] = (), console: Console | None = None,
                 repeat: int = 1, ray_address: str | None = None, cpus_per_call: float = 1.0,
                 ray_init: Mapping[str, Any] | None = None, **call_kw: Any) -> Path:
    """The main job: every configuration over the fixtures, tables printed. Returns the run (matrix) folder.
    With `ray_address` the cluster is joined once, before any folder is made, and every configuration's calls
    run on it (`run_config`)."""
    fixtures = load_fixtures(fixture_specs)
    check_ray(ray_address, call_kw.get("concurrency", 1), cpus_per_call)
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    stamp = _utc_stamp()
    root = out / (f"{stamp}-matrix" if matrix else f"{stamp}-{configs[0].slug()}")
    summaries = []
    t0 = time.monotonic()
    ray_kw = {"ray_address": ray_address, "cpus_per_call": cpus_per_call, "ray_init": ray_init} if ray_address else {}
    with joined(ray_address, ray_init, echo=console.print) if ray_address else nullcontext(), \
            Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} calls"),
                     TimeElapsedColumn(), console=console) as progress:
        for cfg in configs:
            run_dir = root / cfg.slug() if matrix else root
            run_config(cfg, fixtures, out, run_dir=run_dir, command=command, progress=progress, repeat=repeat,
                       **ray_kw, **call_kw)
            summaries.append(json.loads((run_dir / SUMMARY).read_text(encoding="utf-8")))
    for cfg, s in zip(configs, summaries, strict=True):
        run_dir = root / cfg.slug() if matrix else root
        print_turns(console, turn_table(read_events(run_dir / EVENTS)), title=f"{s['run_id']}: per turn")
        notes = run_dir / "notes.txt"
        if notes.is_file():
            console.print(f"[dim]{notes.read_text(encoding='utf-8').strip()}[/dim]")
        print_faults(console, outcomes(read_events(run_dir / EVENTS)))
    if matrix:
        write_matrix(root, summaries)
    print_summary(console, summaries)
    console.print(f"run folder: {root}  ({time.monotonic() - t0:.0f} s)")
    return root


# ---- tables ------------------------------------------------------------------------------------------------

def _f(x: Any, nd: int = 0) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def _pci(stats: Mapping[str, Any] | None, key: str) -> str:
    """'p50 [lo–hi]': a percentile with its bootstrap 95 % interval (just the figure when there is none)."""
    stats = stats or {}
    ci = stats.get(f"{key}_ci")
    fig = _f(stats.get(key))
    return fig if not ci or ci[0] is None else f"{fig} [{ci[0]:.0f}–{ci[1]:.0f}]"


def print_turns(console: Console, rows: list[dict[str, Any]], title: str = "per turn") -> None:
    t = Table(title=title, show_lines=False)
    cols = [("call", "call_id"), ("turn", "turn"), ("expect", "expect"), ("FAR ms", "far_ms"),
            ("endpt", "endpointing_ms"), ("stt", "stt_ms"), ("engine", "engine_first_commit_ms"),
            ("tts", "tts_first_audio_ms"), ("playout", "playout_ms"), ("stop ms", "stop_latency_ms"),
            ("heard err", "heard_word_errors"), ("false BI", "false_barge_in"), ("false pause", "false_pause"),
            ("churn", "churn"), ("post-syn", "post_synthesis"), ("audible", "audible"), ("answer ok", "answer_correct"),
            ("coherent", "coherent"), ("errors", "errors")]
    for name, _ in cols:
        t.add_column(name, justify="left" if name in ("call", "expect") else "right")
    for r in rows:
        t.add_row(*[_f(r.get(k)) for _, k in cols])
    console.print(t)


def print_faults(console: Console, rows: list[dict[str, Any]]) -> None:
    """The injected faults (`--inject`) and what handled each; nothing when none fired."""
    if not rows:
        return
    t = Table(title="injected faults")
    for name in ("call", "fault", "where", "t s", "handled by", "bot heard after"):
        t.add_column(name)
    for r in rows:
        t.add_row(r["call_id"], r["fault"], r["where"], _f(r["t_s"], 2), r["handled_by"], _f(r["bot_heard_after"]))
    console.print(t)


def failed_runs(root: Path) -> list[Path]:
    """Run folders at or below root where every turn logged an error (or the calls broke before any turn)."""
    out = []
    for events_file in sorted(Path(root).rglob(EVENTS)):
        events = read_events(events_file)
        rows = turn_table(events)
        broken = any(e.kind == EventKind.ERROR for e in events)
        if (rows and all(r.get("errors") for r in rows)) or (not rows and broken):
            out.append(events_file.parent)
    return out


def _answer_cells(s: Mapping[str, Any]) -> tuple[str, str, str]:
    """'answer acc' (correct of the replies the fixtures score, with n), 'coherent' (of all replies) and tool
    calls executed/confirmed/refused, for the overall table: FAR beside whether the answers were right."""
    a = s.get("answers") or {}
    tools = s.get("tool_calls") or {}
    acc = "—" if a.get("correct") is None else f"{100 * a['correct']:.1f} % of {a.get('n')}"
    coh = "—" if a.get("coherent") is None else f"{100 * a['coherent']:.1f} %"
    return acc, coh, (f"{_f(tools.get('executed'))}/{_f(tools.get('confirmed'))}/{_f(tools.get('refused'))}"
                      if tools else "—")


def print_summary(console: Console, summaries: Sequence[dict[str, Any]]) -> None:
    t = Table(title="overall")
    for name in ("config", "turns", "FAR p50", "FAR p95", "stop p50", "stop p95", "recovery p50", "heard err",
                 "false BI", "false pauses", "audible/100w", "churn", "post-syn", "answer acc", "coherent",
                 "tools run/conf/ref", "1st commit p50", "tok/s", "truth FAR Δp95"):
        t.add_column(name, justify="left" if name == "config" else "right", overflow="fold",
                     no_wrap=name == "config")
    for s in summaries:
        rev = s["revisions"]
        t.add_row(" ".join(str(s.get(k) or "") for k in ("engine", "sampler", "policy")).strip() or str(s["run_id"]),
                  _f(s["turns"]), _pci(s["far_ms"], "p50"), _pci(s["far_ms"], "p95"),
                  _pci(s["stop_latency_ms"], "p50"), _pci(s["stop_latency_ms"], "p95"),
                  _pci(s["recovery_ms"], "p50"),
                  _f(s["heard_text_word_errors"]), _f(s["false_barge_ins"]), _f(s.get("false_pauses")),
                  _f(rev["audible_per_100_words"], 2),
                  _f(rev["churn"]), _f(rev["post_synthesis"]), *_answer_cells(s),
                  _f(s["engine_figures"]["first_commit_ms_p50"]),
                  _f(s["engine_figures"]["tokens_per_s"]), _f(s["truth"]["far_abs_diff_ms_p95"]))
    console.print(t)

