"""`voicelab call --concurrency 1,2,4,8`: a load sweep, N callers at once against one agent, level by level.

At each level N the fixture list is spread over N callers: it is cycled up to a whole number of rounds of N
calls (at least one call per caller) and played with N calls on the line at a time, each call its own
WebSocket (`voicelab.call.line_run.run_line_calls`, one sealed run folder per level). The levels run one after
another, never overlapping. The sweep folder holds

    OUT/<stamp>-load-<host>/n<N>/...   one run folder per level
    OUT/<stamp>-load-<host>/matrix.json   the levels' summaries (`voicelab.runs.folder.write_matrix`)
    OUT/<stamp>-load-<host>/load.json, load.csv, load.png   FAR p50/p95, stop latency p50/p95, failed calls
                                                           and the agent's CPU against N

The agent's CPU share is measured when the agent is a process of this machine: the process listening on the
URL's port of a loopback URL, found with psutil, from the first call's dial to the last call's end (its
user+system CPU time over that wall time, in % of one core, children included). Elsewhere it is "not
measured", never 0.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import matplotlib
from rich.table import Table

from voicelab.call.carrier import CallOptions, CallResult
from voicelab.call.line_run import BargeInRule, run_line_calls
from voicelab.fixtures.format import Fixture
from voicelab.runs.folder import write_bytes, write_json, write_matrix

try:
    import psutil
except ImportError:  # optional: without it the agent's CPU is "not measured"
    psutil = None

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the file backend)

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def parse_levels(text: str) -> list[int]:
    """'1,2,4,8' -> [1, 2, 4, 8]; refuses anything but positive integers (one line naming the option)."""
    try:
        levels = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise ValueError(f"--concurrency {text!r}: expected N or a list like 1,2,4,8") from None
    if not levels or any(n < 1 for n in levels):
        raise ValueError(f"--concurrency {text!r}: every level needs at least 1 call")
    return sorted(set(levels))


def spread(fixtures: Sequence[Fixture], callers: int) -> list[Fixture]:
    """The list cycled to a whole number of rounds of `callers` calls (each caller gets at least one)."""
    if not fixtures:
        raise ValueError("no fixtures to play")
    rounds = -(-max(len(fixtures), callers) // callers)
    return [fixtures[i % len(fixtures)] for i in range(rounds * callers)]


# ---- the agent's CPU -------------------------------------------------------------------------------------

def agent_pid(url: str) -> int | None:
    """The pid of the process of this machine listening on a loopback URL's port; None when not found."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    if parts.hostname not in LOOPBACK or psutil is None:
        return None
    try:
        for c in psutil.net_connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                return int(c.pid)
    except (psutil.Error, OSError):
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User+system CPU seconds of the process and its children so far; None when it cannot be read."""
    if psutil is None:
        return None
    try:
        proc = psutil.Process(pid)
        total = sum(proc.cpu_times()[:2])
        for child in proc.children(recursive=True):
            try:
                total += sum(child.cpu_times()[:2])
            except psutil.Error:
                continue
        return float(total)
    except Exception:  # psutil missing, the process gone, no permission: not measured
        return None


@dataclass
class CpuWatch:
    """CPU time of one process from `start` to the last `mark` (the last call's end)."""

    pid: int | None
    t0: float = 0.0
    cpu0: float | None = None
    t1: float | None = None
    cpu1: float | None = None

    def start(self) -> None:
        self.t0, self.cpu0 = time.monotonic(), None if self.pid is None else cpu_seconds(self.pid)

    def mark(self) -> None:
        if self.pid is not None and self.cpu0 is not None:
            self.t1, self.cpu1 = time.monotonic(), cpu_seconds(self.pid)

    def share_pct(self) -> float | None:
        """% of one core over the calls' wall time; None: not measured."""
        if self.cpu0 is None or self.cpu1 is None or self.t1 is None or self.t1 <= self.t0:
            return None
        return round(100.0 * (self.cpu1 - self.cpu0) / (self.t1 - self.t0), 1)


# ---- one level, the sweep ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class LevelRow:
    """One line of the load table."""

    concurrency: int
    calls: int
    calls_failed: int
    turns: int
    far_p50_ms: float | None
    far_p95_ms: float | None
    stop_p50_ms: float | None
    stop_p95_ms: float | None
    false_barge_ins: int | None
    agent_cpu_pct: float | None  # % of one core; None: not measured
    calls_wall_s: float
    run: str


def _p(stats: Any, key: str) -> float | None:
    if not isinstance(stats, dict):
        return None
    v = stats.get(key)
    if isinstance(v, dict):  # a figure with an interval: {"value": ..., ...}
        v = v.get("value")
    return None if v is None else round(float(v), 1)


def level_row(n: int, summary: dict[str, Any], cpu: CpuWatch, run: Path) -> LevelRow:
    wall = 0.0 if cpu.t1 is None else cpu.t1 - cpu.t0
    return LevelRow(concurrency=n, calls=int(summary.get("calls") or 0),
                    calls_failed=int(summary.get("calls_failed") or 0), turns=int(summary.get("turns") or 0),
                    far_p50_ms=_p(summary.get("far_ms"), "p50"), far_p95_ms=_p(summary.get("far_ms"), "p95"),
                    stop_p50_ms=_p(summary.get("stop_latency_ms"), "p50"),
                    stop_p95_ms=_p(summary.get("stop_latency_ms"), "p95"),
                    false_barge_ins=summary.get("false_barge_ins"), agent_cpu_pct=cpu.share_pct(),
                    calls_wall_s=round(wall, 1), run=run.name)


def load_sweep(url: str, fixtures: Sequence[Fixture], levels: Sequence[int], out: Path, *,
               opts: CallOptions | None = None, readback: bool = True, rule: BargeInRule | None = None,
               command: Sequence[str] = (), pid: int | None = None,
               on_done: Callable[[CallResult], None] | None = None, ray: Any = None,
               cpus_per_call: float = 1.0) -> tuple[Path, list[LevelRow]]:
    """Every level of `levels` in turn against the agent at `url`; the sweep folder and its table. `ray`: the
    joined Ray module, the calls placed from Ray tasks (`run_line_calls`)."""
    host = (urlsplit(url).hostname or "agent").replace(".", "-")
    root = Path(out) / f"{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-load-{host}"
    pid = pid if pid is not None else agent_pid(url)
    rows: list[LevelRow] = []
    summaries: list[dict[str, Any]] = []
    for n in levels:
        cpu = CpuWatch(pid)

        def done(r: CallResult, cpu: CpuWatch = cpu) -> None:
            cpu.mark()  # the last call's end closes the window (the read-back after it is the lab's, not the agent's)
            if on_done is not None:
                on_done(r)

        cpu.start()
        run_dir, _ = run_line_calls(url, spread(fixtures, n), out, opts=opts, concurrency=n, readback=readback,
                                    rule=rule, command=command, run_dir=root / f"n{n}", on_done=done, ray=ray,
                                    cpus_per_call=cpus_per_call)
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        summaries.append({**summary, "cell_id": f"n{n}", "label": f"{n} at once"})
        rows.append(level_row(n, summary, cpu, run_dir))
    write_matrix(root, summaries)
    write_load_files(root, rows, url_shown=str(summaries[0].get("engine", "")) if summaries else "", pid=pid)
    return root, rows


def write_load_files(root: Path, rows: Sequence[LevelRow], url_shown: str = "", pid: int | None = None) -> None:
    """load.json, load.csv and load.png of a sweep folder."""
    write_json(root / "load.json", {"agent": url_shown, "agent_pid": pid,
                                    "agent_cpu": "% of one core, process and children, over the calls"
                                    if pid is not None else "not measured", "levels": [asdict(r) for r in rows]})
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(asdict(rows[0]).keys()) if rows else ["concurrency"])
    w.writeheader()
    for r in rows:
        w.writerow(asdict(r))
    write_bytes(root / "load.csv", buf.getvalue().encode("utf-8"))
    write_bytes(root / "load.png", load_plot(rows, title=url_shown))


def load_plot(rows: Sequence[LevelRow], title: str = "") -> bytes:
    """FAR and stop latency p50/p95 (ms, left) and failed calls (right) against N, as PNG bytes."""
    ns = [r.concurrency for r in rows]
    fig, (ax, ax_f) = plt.subplots(1, 2, figsize=(9, 3.6), gridspec_kw={"width_ratios": [3, 1.3]})
    for key, label, style in (("far_p50_ms", "FAR p50", "-o"), ("far_p95_ms", "FAR p95", "--o"),
                              ("stop_p50_ms", "stop p50", "-s"), ("stop_p95_ms", "stop p95", "--s")):
        pts = [(n, getattr(r, key)) for n, r in zip(ns, rows, strict=True) if getattr(r, key) is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.set_xlabel("calls at once (N)")
    ax.set_ylabel("ms")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax_f.bar([str(n) for n in ns], [r.calls_failed for r in rows], color="tab:red")
    ax_f.set_ylim(0, max([r.calls_failed for r in rows] + [1]) + 0.5)
    ax_f.yaxis.get_major_locator().set_params(integer=True)
    ax_f.set_xlabel("calls at once (N)")
    ax_f.set_ylabel("failed calls")
    cpu = ", ".join(f"N={r.concurrency}: {r.agent_cpu_pct:g} %" for r in rows if r.agent_cpu_pct is not None)
    fig.suptitle(f"{title}  agent CPU (% of one core): {cpu or 'not measured'}", fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def load_table(rows: Sequence[LevelRow]) -> Table:
    """The sweep as one rich table: a line per level; a figure without values is "—", CPU "not measured"."""
    def f(v: float | int | None) -> str:
        return "—" if v is None else f"{v:g}"

    t = Table(title="load: calls at once against one agent", title_justify="left", expand=False, pad_edge=False)
    for name in ("N", "calls (failed)", "turns", "FAR p50 / p95 ms", "stop p50 / p95 ms", "false barge-ins",
                 "agent CPU % of a core", "calls s"):
        t.add_column(name, justify="right")
    for r in rows:
        t.add_row(str(r.concurrency), f"{r.calls} ({r.calls_failed})", str(r.turns),
                  f"{f(r.far_p50_ms)} / {f(r.far_p95_ms)}", f"{f(r.stop_p50_ms)} / {f(r.stop_p95_ms)}",
                  f(r.false_barge_ins), "not measured" if r.agent_cpu_pct is None else f(r.agent_cpu_pct),
                  f(r.calls_wall_s))
    return t
