"""`voicelab run`: recorded calls in, honest latency figures out (the run folder of RUNFOLDER.md).

Each configuration runs the fixtures one call at a time, in real time, through `voicelab.pipeline`, and
writes DIR/<run_id>/ with config.json, events.jsonl (incrementally), calls/<call_id>.wav and .json,
summary.json (`voicelab.metrics.summarize`, with the WAV truth figures) and turns.csv; the parquet tables
come from `voicelab.analysis` when it is there. A matrix writes one such folder per configuration under
DIR/<matrix_id>/ plus matrix.json. Tables per turn and overall are printed with rich.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from voicelab.events import Event, EventWriter
from voicelab.fixtures import Fixture, load_fixture, select
from voicelab.gate import ShaperParams
from voicelab.metrics import summarize, turn_table
from voicelab.pipeline import PipelineConfig, PipelineConfigError, Resources, quiet_pipecat_logs, run_call


def default_matrix(base: PipelineConfig | None = None) -> list[PipelineConfig]:
    """The side-by-side of the issue: pinned diffusion, `final`, a revising sampler unpinned, AR + shaper."""
    b = base or PipelineConfig()
    return [
        replace(b, engine="diffusion", sampler="threshold", policy="pinned", label="diffusion-threshold-pinned"),
        replace(b, engine="diffusion", sampler="threshold", policy="final", label="diffusion-threshold-final"),
        replace(b, engine="diffusion", sampler="revising", policy="stable:2", label="diffusion-revising-stable2"),
        replace(b, engine="ar", sampler="autoregressive", policy="prefix", label="ar-autoregressive-prefix"),
    ]


def _utc_stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for pkg in ("torch", "pipecat-ai", "piper-tts", "numpy", "voicelab", "pocketsphinx", "onnxruntime"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_fixtures(specs: Sequence[str] | None) -> list[Fixture]:
    """Fixtures named on the command line (names under audio_fixtures/ or paths; none = the default list)."""
    paths = select(list(specs) if specs else ["default"])
    return [load_fixture(p) for p in paths]


# ---- truth from the recording ----------------------------------------------------------------------------

def truth_rows(run_dir: Path) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The WAV analyzer's rows for a run folder (`voicelab.truth`), or None and why not."""
    from voicelab.truth import TruthError, analyze_run

    try:
        return analyze_run(run_dir), None
    except TruthError as e:
        return None, f"truth analyzer: {e}"


# ---- one configuration -------------------------------------------------------------------------------------

def write_config(run_dir: Path, run_id: str, cfg: PipelineConfig, res: Resources, fixtures: Sequence[Fixture],
                 command: Sequence[str]) -> dict[str, Any]:
    desc = res.engine.describe() if hasattr(res.engine, "describe") else {}
    config = {
        "run_id": run_id, "engine": cfg.engine_label(), "engine_arg": cfg.engine, "label": cfg.slug(),
        "sampler": getattr(res.engine, "sampler", cfg.sampler), "sampler_config": desc.get("sampler_config"),
        "engine_describe": desc, "policy": cfg.policy, "shaper": cfg.to_dict()["shaper"],
        "stt": cfg.stt, "vad": cfg.vad, "vad_start_secs": cfg.vad_start_secs, "vad_stop_secs": cfg.vad_stop_secs,
        "barge_in": cfg.barge_in, "turn": cfg.turn, "keep_leading_ms": cfg.keep_leading_ms,
        "sample_rate": cfg.sample_rate, "seed": cfg.seed, "pipeline": cfg.to_dict(),
        "fixtures": [{"name": f.name, "path": str(f.path), "sha256": _sha256(f.path)} for f in fixtures],
        "command": list(command), "versions": _versions(),
        "host": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "machine": platform.machine()},
    }
    (run_dir / "config.json").write_text(json.dumps(config, indent=2, default=str), encoding="utf-8")
    return config


def _write_turns_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        path.write_text("", encoding="utf-8")
        return
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _write_tables(run_dir: Path, events: list[Event], truth: list[dict[str, Any]] | None) -> str | None:
    """events/turns/chunks .parquet (`voicelab.analysis`); a note instead of a crash if that fails."""
    from voicelab.analysis import write_parquet

    try:
        write_parquet(run_dir, truth_rows=truth, events=events)
    except Exception as e:  # events.jsonl and summary.json are already written; readers fall back to them
        return f"parquet tables not written: {type(e).__name__}: {e}"
    return None


async def _run_calls(cfg: PipelineConfig, res: Resources, fixtures: Sequence[Fixture], run_dir: Path,
                     writer: EventWriter, progress: Progress | None, **call_kw: Any) -> list[Event]:
    events: list[Event] = []
    task = None
    if progress is not None:
        task = progress.add_task(cfg.slug(), total=len(fixtures))
    for i, fx in enumerate(fixtures):
        call_id = f"{i:02d}-{fx.name}"
        if progress is not None and task is not None:
            progress.update(task, description=f"{cfg.slug()} · {fx.name}")
        try:
            result = await run_call(fx, cfg, res, call_id, calls_dir=run_dir / "calls", writer=writer, **call_kw)
            events.extend(result.log.events)
        except Exception as e:  # a broken call is an error row; the run goes on
            from voicelab.events import EventKind

            err = Event(call_id, -1, 0, str(EventKind.ERROR), {"where": "call", "message": f"{type(e).__name__}: {e}"})
            writer.write(err)
            events.append(err)
        if progress is not None and task is not None:
            progress.advance(task)
    return events


def as_config(config: PipelineConfig | Mapping[str, Any]) -> PipelineConfig:
    """A PipelineConfig from itself or a dict (engine, sampler, policy, shaper as a dict, seed, ...)."""
    if isinstance(config, PipelineConfig):
        return config
    d = dict(config)
    d.pop("fixtures", None)
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


def run_config(config: PipelineConfig | Mapping[str, Any], fixtures: Sequence[Fixture | str | Path], out_dir: Path,
               *, run_dir: Path | None = None, command: Sequence[str] = (), progress: Progress | None = None,
               resources: Resources | None = None, **call_kw: Any) -> Path:
    """Run every fixture under one configuration; return the run folder (out_dir/<run_id> unless `run_dir`).

    The folder holds config.json, events.jsonl, calls/, turns.csv, summary.json and the parquet tables.
    """
    cfg = as_config(config)
    fxs = as_fixtures(fixtures)
    if run_dir is None:
        run_dir = Path(out_dir) / f"{_utc_stamp()}-{cfg.slug()}"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "calls").mkdir(exist_ok=True)
    from loguru import logger

    sink = logger.add(str(run_dir / "pipecat.log"), level="WARNING")
    res = resources or Resources(cfg)
    run_id = run_dir.name
    try:
        config_json = write_config(run_dir, run_id, cfg, res, fxs, command)
        with EventWriter(run_dir / "events.jsonl") as writer:
            events = asyncio.run(_run_calls(cfg, res, fxs, run_dir, writer, progress, **call_kw))
    finally:
        if resources is None:
            res.close()
        logger.remove(sink)
    rows = turn_table(events)
    _write_turns_csv(run_dir / "turns.csv", rows)
    truth, note = truth_rows(run_dir)
    summary = summarize(events, {"run_id": run_id, "engine": config_json["engine"],
                                 "sampler": config_json["sampler"], "policy": cfg.policy}, truth=truth)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    notes = [n for n in (note, _write_tables(run_dir, events, truth)) if n]
    if notes:
        (run_dir / "notes.txt").write_text("\n".join(notes) + "\n", encoding="utf-8")
    return run_dir


def run_fixtures(fixture_specs: Sequence[str] | None, configs: Sequence[PipelineConfig], out: Path, *,
                 matrix: bool = False, command: Sequence[str] = (), console: Console | None = None,
                 **call_kw: Any) -> Path:
    """The main job: every configuration over the fixtures, tables printed. Returns the run (matrix) folder."""
    quiet_pipecat_logs("ERROR")
    fixtures = load_fixtures(fixture_specs)
    console = console or Console(width=None if sys.stdout.isatty() else 160)
    stamp = _utc_stamp()
    root = out / (f"{stamp}-matrix" if matrix else f"{stamp}-{configs[0].slug()}")
    summaries = []
    t0 = time.monotonic()
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} calls"),
                  TimeElapsedColumn(), console=console) as progress:
        for cfg in configs:
            run_dir = root / cfg.slug() if matrix else root
            run_config(cfg, fixtures, out, run_dir=run_dir, command=command, progress=progress, **call_kw)
            summaries.append(json.loads((run_dir / "summary.json").read_text(encoding="utf-8")))
    for cfg, s in zip(configs, summaries, strict=True):
        run_dir = root / cfg.slug() if matrix else root
        print_turns(console, turn_table(_read_events(run_dir / "events.jsonl")), title=f"{s['run_id']}: per turn")
        notes = run_dir / "notes.txt"
        if notes.is_file():
            console.print(f"[dim]{notes.read_text(encoding='utf-8').strip()}[/dim]")
    if matrix:
        (root / "matrix.json").write_text(json.dumps(summaries, indent=2), encoding="utf-8")
    print_summary(console, summaries)
    console.print(f"run folder: {root}  ({time.monotonic() - t0:.0f} s)")
    return root


def _read_events(path: Path) -> list[Event]:
    from voicelab.events import read_events

    return read_events(path)


# ---- tables ------------------------------------------------------------------------------------------------

def _f(x: Any, nd: int = 0) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def print_turns(console: Console, rows: list[dict[str, Any]], title: str = "per turn") -> None:
    t = Table(title=title, show_lines=False)
    cols = [("call", "call_id"), ("turn", "turn"), ("expect", "expect"), ("FAR ms", "far_ms"),
            ("endpt", "endpointing_ms"), ("stt", "stt_ms"), ("engine", "engine_first_commit_ms"),
            ("tts", "tts_first_audio_ms"), ("playout", "playout_ms"), ("stop ms", "stop_latency_ms"),
            ("heard err", "heard_word_errors"), ("false BI", "false_barge_in"), ("churn", "churn"),
            ("post-syn", "post_synthesis"), ("audible", "audible"), ("errors", "errors")]
    for name, _ in cols:
        t.add_column(name, justify="left" if name in ("call", "expect") else "right")
    for r in rows:
        t.add_row(*[_f(r.get(k)) for _, k in cols])
    console.print(t)


def print_summary(console: Console, summaries: Sequence[dict[str, Any]]) -> None:
    t = Table(title="overall")
    for name in ("config", "turns", "FAR p50", "FAR p95", "stop p50", "stop p95", "recovery p50", "heard err",
                 "false BI", "audible/100w", "churn", "post-syn", "1st commit p50", "tok/s", "truth FAR Δp95"):
        t.add_column(name, justify="left" if name == "config" else "right", overflow="fold",
                     no_wrap=name == "config")
    for s in summaries:
        rev = s["revisions"]
        t.add_row(" ".join(str(s.get(k) or "") for k in ("engine", "sampler", "policy")).strip() or str(s["run_id"]),
                  _f(s["turns"]), _f(s["far_ms"]["p50"]), _f(s["far_ms"]["p95"]),
                  _f(s["stop_latency_ms"]["p50"]), _f(s["stop_latency_ms"]["p95"]), _f(s["recovery_ms"]["p50"]),
                  _f(s["heard_text_word_errors"]), _f(s["false_barge_ins"]), _f(rev["audible_per_100_words"], 2),
                  _f(rev["churn"]), _f(rev["post_synthesis"]), _f(s["engine_figures"]["first_commit_ms_p50"]),
                  _f(s["engine_figures"]["tokens_per_s"]), _f(s["truth"]["far_abs_diff_ms_p95"]))
    console.print(t)

