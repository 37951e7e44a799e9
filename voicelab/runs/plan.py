"""The calls of a run: which fixtures play under which call ids, the checks of how they are to play
(`--repeat`, `--ray`) made before anything loads, and the row a broken call leaves."""

from __future__ import annotations

from collections.abc import Sequence

from voicelab.fixtures import Fixture
from voicelab.measure.events import Event, EventKind
from voicelab.pipeline.config import PipelineConfigError


def call_ids(fixtures: Sequence[Fixture], repeat: int = 1) -> list[tuple[str, Fixture]]:
    """(call_id, fixture) in playing order: the list once per repetition; with repeat > 1 the ids carry it
    (r1-00-NAME, r2-00-NAME, ...), so N repetitions pool into one run folder."""
    if repeat < 1:
        raise PipelineConfigError(f"--repeat {repeat}: needs at least 1")
    return [(f"{f'r{r}-' if repeat > 1 else ''}{i:02d}-{fx.name}", fx)
            for r in range(1, repeat + 1) for i, fx in enumerate(fixtures)]


def check_ray(address: str | None, concurrency: int = 1, cpus_per_call: float = 1.0) -> None:
    """`voicelab run --ray ADDRESS`: the options that go with it, one line each (the cluster is joined later)."""
    if address is None:
        return
    if not address.strip():
        raise PipelineConfigError("--ray '': needs an address ('local', 'auto', 'host:port' or 'ray://host:10001')")
    if concurrency != 1:
        raise PipelineConfigError(f"--ray {address} --concurrency {concurrency}: on Ray the cluster decides how many "
                                  "calls play at once (--cpus-per-task sets what each one reserves); leave "
                                  "--concurrency out")
    if not cpus_per_call > 0:
        raise PipelineConfigError(f"--cpus-per-task {cpus_per_call}: needs more than 0")


def error_row(call_id: str, exc: BaseException) -> Event:
    """The row a call that broke leaves in place of its events (turn -1, t 0, where "call")."""
    return Event(call_id, -1, 0, str(EventKind.ERROR), {"where": "call", "message": f"{type(exc).__name__}: {exc}"})
