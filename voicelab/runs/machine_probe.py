"""The probe a run keeps beside its calls: a timer on the run's event loop and the kernel's CPU counters.

`async with MachineProbe() as probe:` around a run's calls (or `start()` and `stop()` on the loop that runs them,
or `measured(main)`); `probe.load()` afterwards gives the readings and the verdict (`voicelab.measure.machine_load`,
where the rule is). The timer should fire every 10 ms; each firing
records how late it was. The CPU counters are read at the start and the end (`/proc/stat`, `/proc/self/stat`);
where they cannot be read (not Linux) the CPU share is left unknown. Where to read, which clock and how to
sleep are arguments, so a test gives it made-up readings.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from voicelab.measure.machine_load import (
    PERIOD_MS,
    CpuTicks,
    MachineLoad,
    ProcStatError,
    cpu_ticks,
    cpu_use,
    loop_lag,
)

PROC_STAT = Path("/proc/stat")
SELF_STAT = Path("/proc/self/stat")
T = TypeVar("T")


def read_ticks() -> CpuTicks | None:
    """The kernel's counters now; None where there are none (or they do not read as expected)."""
    try:
        return cpu_ticks(PROC_STAT.read_text(encoding="ascii"), SELF_STAT.read_text(encoding="ascii",
                                                                                     errors="replace"))
    except (OSError, ProcStatError):
        return None


class MachineProbe:
    """Loop lag and others' CPU while the `async with` body runs (on the loop that runs it)."""

    def __init__(self, *, period_ms: float = PERIOD_MS, ticks: Callable[[], CpuTicks | None] = read_ticks,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, cores: int | None = None) -> None:
        self._period = period_ms / 1000.0
        self._ticks, self._clock, self._sleep = ticks, clock, sleep
        self._cores = cores or os.cpu_count() or 1
        self._late_ms: list[float] = []
        self._start: CpuTicks | None = None
        self._end: CpuTicks | None = None
        self._t0 = self._t1 = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Read the counters and start the timer (on the running loop)."""
        self._start, self._t0 = self._ticks(), self._clock()
        self._task = asyncio.get_running_loop().create_task(self._tick())

    def stop(self) -> None:
        """Stop the timer and read the counters again (a second stop changes nothing)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            self._end, self._t1 = self._ticks(), self._clock()

    async def __aenter__(self) -> MachineProbe:
        self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.stop()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _tick(self) -> None:
        due = self._clock() + self._period
        while True:
            await self._sleep(max(0.0, due - self._clock()))
            now = self._clock()
            self._late_ms.append(1000.0 * (now - due))
            due += self._period
            if due <= now:  # it missed whole periods: the next firing is one period from now
                due = now + self._period

    def load(self) -> MachineLoad:
        """The readings of the finished `async with` and their verdict."""
        cpu = None if self._start is None or self._end is None else cpu_use(self._start, self._end, self._cores)
        return MachineLoad(lag=loop_lag(self._late_ms), cpu=cpu, seconds=max(0.0, self._t1 - self._t0))


async def measured(main: Awaitable[T]) -> tuple[T, MachineLoad]:
    """`main` awaited with a probe beside it: its result and the machine's load meanwhile."""
    async with MachineProbe() as probe:
        out = await main
    return out, probe.load()
