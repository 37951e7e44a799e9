"""`voicelab call --ray ADDRESS`: each call placed from a Ray task, so the callers of a load test can spread past
one machine while the run folder is written here, exactly as for local calls.

A task dials the agent itself (`voicelab.call.carrier.place_call`) and returns the whole CallResult (events,
recording, the line's figures); this driver writes the events in the order the calls end, as local calls write
theirs. At most `concurrency` calls are on the line at once (the load level), each reserving `cpus_per_call`
of the cluster. A task that dies (its worker lost) leaves a failed call, as a line that drops one does. The
cluster is joined by `voicelab.runs.cluster.joined`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from voicelab.call.carrier import CallOptions, CallResult, failed_call, place_call
from voicelab.fixtures.format import Fixture
from voicelab.measure.events import EventWriter
from voicelab.measure.machine_load import MachineLoad, busiest
from voicelab.runs.cluster import first_line, task_error
from voicelab.runs.machine_probe import measured


def _place(url: str, fixture: Fixture, call_id: str, opts: CallOptions) -> tuple[CallResult, MachineLoad]:
    """One call, in a Ray worker: its own event loop, no writer (the driver writes the events), and the machine's
    load as that loop and process felt it (other tasks on the machine are others, as they are to the call)."""
    return asyncio.run(measured(place_call(url, fixture, call_id, opts, None)))


def play_all_ray(ray: Any, url: str, plan: Sequence[tuple[str, Fixture]], opts: CallOptions,
                 writer: EventWriter | None, concurrency: int = 1, cpus_per_call: float = 1.0,
                 on_done: Callable[[CallResult], None] | None = None) -> tuple[list[CallResult], MachineLoad | None]:
    """Every call of the plan as a Ray task, `concurrency` on the line at once; results in plan order, and the
    run's load: the busiest call's (`machine_load.busiest`)."""
    remote = ray.remote(num_cpus=cpus_per_call, max_retries=0)(_place)
    results: dict[int, CallResult] = {}
    todo = list(enumerate(plan))
    running: dict[Any, int] = {}
    loads: list[MachineLoad | None] = []
    while todo or running:
        while todo and len(running) < concurrency:
            i, (call_id, fx) = todo.pop(0)
            running[remote.remote(url, fx, call_id, opts)] = i
        done, _ = ray.wait(list(running), num_returns=1)
        i = running.pop(done[0])
        call_id, fx = plan[i]
        try:
            result, load = ray.get(done[0])
            loads.append(load)
        except Exception as exc:  # a RayTaskError wraps the task's own exception; a dead worker is one too
            result = failed_call(url, fx, call_id, f"the caller's Ray task failed: {first_line(task_error(exc))}",
                                 opts)
        if writer is not None:
            for e in result.log.events:
                writer.write(e)
        if on_done is not None:
            on_done(result)
        results[i] = result
    return [results[i] for i in range(len(plan))], busiest(loads)
