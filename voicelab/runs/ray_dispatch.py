"""`voicelab run --ray`: every call of a configuration as a Ray task, written back by this process.

The cluster itself is joined by `voicelab.runs.cluster.joined` and the `--ray` options are checked by
`voicelab.runs.plan.check_ray`; `voicelab.runs.calls.run_config` picks this dispatch or the local one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loguru import logger
from rich.progress import Progress

from voicelab.fixtures import Fixture, load_fixture
from voicelab.measure.events import Event, EventWriter
from voicelab.measure.machine_load import MachineLoad, busiest
from voicelab.pipeline.assembly import run_call
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.resources import Resources
from voicelab.runs.cluster import task_error
from voicelab.runs.folder import RunFolder
from voicelab.runs.machine_probe import measured
from voicelab.runs.plan import call_ids, error_row


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
            # the task's own loop and process: other tasks on this machine are others, as they are to the call
            result, machine = asyncio.run(measured(run_call(fx, cfg, res, call_id, **call_kw)))
        finally:
            res.close()
    finally:
        logger.remove(sink)
    return {"events": result.log.events, "stereo": result.stereo, "sample_rate": result.sample_rate,
            "meta": result.meta, "warnings": "".join(warnings), "machine": machine}


def run_calls_ray(ray: Any, cfg: PipelineConfig, fixtures: Sequence[Fixture], folder: RunFolder,
                   writer: EventWriter, progress: Progress | None, repeat: int = 1, cpus_per_call: float = 1.0,
                   **call_kw: Any) -> tuple[list[Event], MachineLoad | None]:
    """Every call of the plan as a Ray task (`_ray_call`, `cpus_per_call` reserved each; Ray decides how many
    play at once). The driver writes each call's WAV as it comes back and the events in plan order; a task that
    fails is an error row, as a local call's exception is. Each task measures its machine while its call plays
    (`voicelab.runs.machine_probe`); the run's load is the busiest call's (`machine_load.busiest`)."""
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
    loads: list[MachineLoad | None] = []
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
            loads.append(got.get("machine"))
        except Exception as exc:  # a RayTaskError wraps the call's own exception; a dead worker is one too
            back[i] = [error_row(call_id, task_error(exc))]
        while written in back:
            for e in back[written]:
                writer.write(e)
            out.extend(back.pop(written))
            written += 1
        if progress is not None and task is not None:
            progress.advance(task)
    return out, busiest(loads)
