"""Was the machine busy while a run lasted? The verdict from a run's own readings, as plain Python.

Two readings (taken by `voicelab.runs.machine_probe`, which only gathers them):
- the event loop's lag: how late a timer that should fire every 10 ms fires (ms; p50, p95, max): what the
  run's own loop felt, whoever caused it;
- the CPU others took: from the kernel's counters at the start and the end of the run, the machine's busy time
  (`/proc/stat`'s first line: user, nice, system, irq, softirq and steal, the time a hypervisor gave to other
  guests) less this process's own (`/proc/self/stat`: its threads' user and system time and that of the
  children it waited for), as a share of all the machine's cores over the run.

The verdict (docs/metrics.md, "how to read a busy run"; the thresholds in docs/decisions/busy-machine.md):
busy when others took at least `OTHERS_MIN_CORES` of a core on average *and* the run felt it: less than
`IDLE_MIN_CORES` of a core was left idle, or the loop's p95 lag reached `LAG_P95_MS`. Otherwise quiet. Without
the kernel's counters (not Linux) the lag alone decides. A run's own heavy work makes its loop late too, but
with nobody else on the machine it stays quiet: the verdict is about the machine, not the configuration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

QUIET, BUSY = "quiet", "busy"
VERDICTS = (QUIET, BUSY)
PERIOD_MS = 10.0  # the probe's timer
OTHERS_MIN_CORES = 0.25  # others' CPU that counts: well above an idle machine's services (a few hundredths)
IDLE_MIN_CORES = 1.0  # less idle than a whole core: a turn end's recogniser, engine and synthesis share one
LAG_P95_MS = 10.0  # half of the 20 ms audio frame the pipeline and the phone line move audio in
STAT_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system . . irq softirq steal ("cpu" line, after the name)
STAT_ALL_FIELDS = 8  # user .. steal; guest and guest_nice are already inside user and nice


class ProcStatError(ValueError):
    """A /proc text that does not read as the kernel writes it; one line."""


@dataclass(frozen=True)
class CpuTicks:
    """Clock ticks since boot: the machine's busy and total time over all its cores, and this process's own."""

    busy: int
    total: int
    own: int


def parse_proc_stat(text: str) -> tuple[int, int]:
    """(busy, total) ticks from /proc/stat's aggregate "cpu" line."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            try:
                fields = [int(x) for x in parts[1:1 + STAT_ALL_FIELDS]]
            except ValueError:
                break
            if len(fields) < 4:
                break
            fields += [0] * (STAT_ALL_FIELDS - len(fields))  # old kernels stop before steal
            return sum(fields[i] for i in STAT_BUSY_FIELDS), sum(fields)
    raise ProcStatError("/proc/stat: no aggregate 'cpu' line of numbers")


def parse_self_stat(text: str) -> int:
    """This process's ticks from /proc/self/stat: utime, stime, cutime, cstime (fields 14-17; the command name,
    field 2, is in parentheses and may hold spaces, so fields are counted after its closing one)."""
    times = text[text.rfind(")") + 1:].split()[11:15]
    if len(times) < 4 or not all(t.isdigit() for t in times):
        raise ProcStatError("/proc/self/stat: no utime, stime, cutime and cstime after the command name")
    return sum(int(t) for t in times)


def cpu_ticks(proc_stat: str, self_stat: str) -> CpuTicks:
    busy, total = parse_proc_stat(proc_stat)
    return CpuTicks(busy, total, parse_self_stat(self_stat))


@dataclass(frozen=True)
class CpuUse:
    """The machine's CPU over a run, as shares of all its cores (0 to 1): others' and this process's own."""

    others: float
    own: float
    cores: int

    @property
    def others_cores(self) -> float:
        return self.others * self.cores

    @property
    def idle_cores(self) -> float:
        return max(0.0, 1.0 - self.others - self.own) * self.cores


def cpu_use(start: CpuTicks, end: CpuTicks, cores: int) -> CpuUse | None:
    """Shares of the machine between two readings; None when no tick passed (nothing to say)."""
    total = end.total - start.total
    if total <= 0 or cores < 1:
        return None
    own = min(max(end.own - start.own, 0) / total, 1.0)
    busy = min(max(end.busy - start.busy, 0) / total, 1.0)
    return CpuUse(others=max(busy - own, 0.0), own=own, cores=cores)


@dataclass(frozen=True)
class LoopLag:
    """How late the probe's timer fired, ms."""

    p50_ms: float
    p95_ms: float
    max_ms: float
    n: int


def loop_lag(late_ms: Sequence[float]) -> LoopLag | None:
    """p50, p95 (linear between order statistics) and max of the timer's lateness; None without a sample."""
    vals = sorted(max(0.0, float(x)) for x in late_ms)
    if not vals:
        return None
    return LoopLag(_percentile(vals, 50), _percentile(vals, 95), vals[-1], len(vals))


def _percentile(ordered: Sequence[float], q: float) -> float:
    """Linear between order statistics (as `voicelab.measure.metrics.percentile`), kept inside its bracket."""
    at = (len(ordered) - 1) * q / 100.0
    lo = int(at)
    hi = min(lo + 1, len(ordered) - 1)
    x, y = ordered[lo], ordered[hi]
    return min(max(x + (y - x) * (at - lo), x), y)


@dataclass(frozen=True)
class MachineLoad:
    """What a run measured of its machine, and the verdict."""

    lag: LoopLag | None
    cpu: CpuUse | None
    seconds: float

    @property
    def verdict(self) -> str | None:
        """"quiet" or "busy"; None when neither reading was taken."""
        lag_high = self.lag is not None and self.lag.p95_ms >= LAG_P95_MS
        if self.cpu is None:
            return None if self.lag is None else BUSY if lag_high else QUIET
        crowded = self.cpu.idle_cores < IDLE_MIN_CORES
        return BUSY if self.cpu.others_cores >= OTHERS_MIN_CORES and (crowded or lag_high) else QUIET

    def to_json(self) -> dict[str, Any]:
        """summary.json's `machine` (and config.json's `machine_load`)."""
        lag = self.lag
        return {
            "verdict": self.verdict,
            "loop_lag_ms": None if lag is None else {"p50": round(lag.p50_ms, 2), "p95": round(lag.p95_ms, 2),
                                                     "max": round(lag.max_ms, 2), "n": lag.n},
            "others_cpu_share": None if self.cpu is None else round(self.cpu.others, 3),
            "own_cpu_share": None if self.cpu is None else round(self.cpu.own, 3),
            "cores": None if self.cpu is None else self.cpu.cores,
            "seconds": round(self.seconds, 1),
        }


def busiest(loads: Sequence[MachineLoad | None]) -> MachineLoad | None:
    """The load of a run whose calls each measured their own machine (calls played as Ray tasks, each with its
    own loop and process): the busiest call's. A run is busy when any of its calls was, and its figures are
    read as that call's machine allows; None when no call measured anything."""
    seen = [m for m in loads if m is not None and m.verdict is not None]
    if not seen:
        return None
    return max(seen, key=lambda m: (m.verdict == BUSY, m.cpu.others if m.cpu else 0.0,
                                    m.lag.p95_ms if m.lag else 0.0))


def verdict_of(machine: Any) -> str | None:
    """The verdict of a summary.json `machine` value; None when the run did not measure it (an older run)."""
    v = machine.get("verdict") if isinstance(machine, Mapping) else None
    return v if v in VERDICTS else None


def machine_text(machine: Any) -> str:
    """One line of a summary.json `machine` value: "busy: loop lag p95 14 ms, others took 52 % of 2 cores"."""
    verdict = verdict_of(machine)
    if verdict is None:
        return "not measured"
    parts = []
    lag = machine.get("loop_lag_ms")
    if isinstance(lag, Mapping) and isinstance(lag.get("p95"), int | float):
        parts.append(f"loop lag p95 {lag['p95']:.0f} ms (max {lag.get('max', 0):.0f})")
    share, cores = machine.get("others_cpu_share"), machine.get("cores")
    if isinstance(share, int | float) and isinstance(cores, int):
        parts.append(f"others took {100 * share:.0f} % of {cores} cores")
    return f"{verdict}: {', '.join(parts)}" if parts else verdict


def mismatch(a: Any, b: Any, a_name: str, b_name: str) -> str | None:
    """Why two runs' figures cannot be set against each other: one was measured on a busy machine and the other
    on a quiet one (their summary.json `machine` values `a`, `b`). None when they can: both quiet, both busy, or
    either not measured."""
    va, vb = verdict_of(a), verdict_of(b)
    if {va, vb} != {QUIET, BUSY}:
        return None
    (busy_name, busy), quiet_name = ((a_name, a), b_name) if va == BUSY else ((b_name, b), a_name)
    return (f"{busy_name} ran on a busy machine ({machine_text(busy).removeprefix('busy: ')}) and {quiet_name} on a "
            "quiet one: a difference may be the machine's; rerun it on a quiet machine, or give --allow-busy")
