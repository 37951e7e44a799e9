"""Recorded calls in, honest latency figures out: the main job behind `voicelab run`.

Each configuration runs the fixtures one call at a time (or `concurrency` at a time, or, with `ray_address`,
as Ray tasks of one call each), in real time, through `voicelab.pipeline`, into a run folder written by
`voicelab.runs.folder` (summary.json from `voicelab.measure.metrics.summarize`, with the WAV truth figures,
written last as the seal). A matrix (`voicelab.runs.matrix`) writes one run folder per configuration under
DIR/<matrix_id>/ plus matrix.json. Calls play here (`_run_calls`) or on Ray (`voicelab.runs.ray_dispatch`);
the tables per turn and overall are printed by `voicelab.runs.console`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loguru import logger
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from engines.protocol import EngineLike
from voicelab.analysis.price import price_summary
from voicelab.analysis.tables import parquet_tables
from voicelab.fixtures import Fixture, load_fixture, select
from voicelab.gate import ShaperParams
from voicelab.measure.events import Event, EventKind, EventWriter, read_events
from voicelab.measure.machine_load import MachineLoad
from voicelab.measure.metrics import summarize, turn_table
from voicelab.measure.truth import TruthError, analyze_run
from voicelab.pipeline.assembly import run_call
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.pipeline.options import check_engine
from voicelab.pipeline.resources import Resources, open_engine_for
from voicelab.rules.faults import outcomes
from voicelab.runs.cluster import joined
from voicelab.runs.console import print_faults, print_summary, print_turns
from voicelab.runs.folder import CONFIG, EVENTS, SUMMARY, RunFolder, write_matrix
from voicelab.runs.machine_probe import measured
from voicelab.runs.plan import call_ids, check_ray, error_row
from voicelab.runs.ray_dispatch import run_calls_ray


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
               extra: Mapping[str, Any] | None = None, machine: MachineLoad | None = None) -> dict[str, Any]:
    """turns.csv, the truth figures, the Parquet tables, then summary.json (the seal). Returns the summary.
    `extra` adds figures only some runs have (a live session's client-side figures); `machine` is the probe's
    reading (`voicelab.runs.machine_probe`; None: not measured), in config.json and summary.json."""
    load = None if machine is None else machine.to_json()
    folder.add_to_config({"machine_load": load})
    folder.write_turns_csv(turn_table(events))
    truth, note = truth_rows(folder.path)
    summary = summarize(events, {"run_id": folder.run_id, **dict(meta)}, truth=truth)
    summary["price"] = price_summary(events, json.loads((folder.path / CONFIG).read_text(encoding="utf-8")))
    summary["machine"] = load
    summary.update(extra or {})
    notes = [n for n in (note, _write_tables(folder, events, truth)) if n]
    folder.write_notes(notes)
    folder.seal(summary)
    return summary


def _write_tables(folder: RunFolder, events: list[Event], truth: list[dict[str, Any]] | None) -> str | None:
    """events/turns/chunks .parquet; a note instead of a crash if that fails (summary.json still seals)."""
    try:
        folder.write_tables(parquet_tables(folder.path, truth_rows=truth, events=events))
    except Exception as e:
        return f"parquet tables not written: {type(e).__name__}: {e}"
    return None


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
                err = error_row(call_id, e)
                writer.write(err)
                out = [err]
            if progress is not None and task is not None:
                progress.advance(task)
            return out

    per_call = await asyncio.gather(*(one(call_id, fx) for call_id, fx in plan))
    return [e for events in per_call for e in events]


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
        play: Callable[[RunFolder, EventWriter], tuple[list[Event], MachineLoad | None]]
        if ray_address is None:
            res = resources or Resources(cfg)  # before the folder: a model that fails to load leaves no folder
            if resources is None:
                stack.callback(res.close)
            record = config_record(cfg, res.engine, fxs)

            def play(folder: RunFolder, writer: EventWriter) -> tuple[list[Event], MachineLoad | None]:
                return asyncio.run(measured(_run_calls(cfg, res, fxs, folder, writer, progress, repeat, **call_kw)))
        else:
            ray = stack.enter_context(joined(ray_address, ray_init))  # before the folder: no cluster, no folder
            record = {**_driver_record(cfg, fxs), "ray": ray_address, "cpus_per_call": cpus_per_call}

            def play(folder: RunFolder, writer: EventWriter) -> tuple[list[Event], MachineLoad | None]:
                # each Ray task measures its own call's machine: the run's load is the busiest call's
                return run_calls_ray(ray, cfg, fxs, folder, writer, progress, repeat, cpus_per_call, **call_kw)
        folder = RunFolder.create(run_dir)
        stack.callback(logger.remove, logger.add(str(run_dir / "pipecat.log"), level="WARNING"))
        config_json = folder.write_config({**record, "repeat": repeat}, command)
        with folder.events_writer() as writer:
            events, machine = play(folder, writer)
    finish_run(folder, events, {"engine": config_json["engine"], "sampler": config_json["sampler"],
                                "policy": cfg.policy}, machine=machine)
    return run_dir


def run_fixtures(fixture_specs: Sequence[str] | None, configs: Sequence[PipelineConfig], out: Path, *,
                 matrix: bool = False, command: Sequence[str] = (), console: Console | None = None,
                 repeat: int = 1, ray_address: str | None = None, cpus_per_call: float = 1.0,
                 ray_init: Mapping[str, Any] | None = None, wide: bool = False, tables: bool = True,
                 **call_kw: Any) -> Path:
    """The main job: every configuration over the fixtures, tables printed (`wide`: one column per figure;
    `tables` False: none, for `--json`). Returns the run (matrix) folder.
    With `ray_address` the cluster is joined once, before any folder is made, and every configuration's calls
    run on it (`run_config`)."""
    fixtures = load_fixtures(fixture_specs)
    check_ray(ray_address, call_kw.get("concurrency", 1), cpus_per_call)
    console = console or Console(width=None if sys.stdout.isatty() or not wide else 200)
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
        if not tables:
            break
        print_turns(console, turn_table(read_events(run_dir / EVENTS)), title=f"{s['run_id']}: per turn", wide=wide)
        notes = run_dir / "notes.txt"
        if notes.is_file():
            console.print(f"[dim]{notes.read_text(encoding='utf-8').strip()}[/dim]")
        print_faults(console, outcomes(read_events(run_dir / EVENTS)))
    if matrix:
        write_matrix(root, summaries)
    if tables:
        print_summary(console, summaries, wide=wide)
    console.print(f"run folder: {root}  ({time.monotonic() - t0:.0f} s)")
    return root


# ---- afterwards -------------------------------------------------------------------------------------------

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
