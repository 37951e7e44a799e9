"""How the main job's figures bend under load: quiet, then beside one and two busy loops, one right after the other.

    .venv/bin/python benchmarks/busy_machine.py [--loops 0,1,2] [--fixtures default] [--stt whisper]
        [--out benchmarks/results/busy_machine.json] [--runs-dir DIR] [--anyway]

Each condition plays the fixture list once through `voicelab.runs.calls.run_config` (the same `Resources`,
loaded once, for every condition) while N other processes spin (`while True: pass`, one per busy loop, started
before the calls and ended after them). Per condition, from the run's summary.json: FAR p50/p95 with intervals,
stop latency p50/p95, false cut-ins, answers correct, error rows (a call that hung or broke), and the machine
as the run measured it (`voicelab.measure.machine_load`: the verdict, the loop's lag, the share others took).
Writes the JSON and a markdown table beside it (`.md`).

It needs a quiet machine to mean anything: before the first condition it reads the kernel's counters for
`--settle-s` seconds and stops (exit 3, one line) when others already take at least `OTHERS_MIN_CORES` of a core,
unless `--anyway`. Run folders go to a temporary folder unless `--runs-dir`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from voicelab.measure.events import EventKind, read_events  # noqa: E402
from voicelab.measure.machine_load import OTHERS_MIN_CORES, cpu_use  # noqa: E402
from voicelab.runs.machine_probe import read_ticks  # noqa: E402

SPIN = (sys.executable, "-c", "while True: pass")  # one busy loop: a whole core when it gets one
EXIT_NOT_QUIET = 3


@contextmanager
def busy_loops(n: int, command: Sequence[str] = SPIN) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`n` processes running `command` for as long as the block lasts; each ended by its own pid afterwards."""
    procs = [subprocess.Popen(list(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def others_now(settle_s: float, cores: int | None = None) -> float | None:
    """The cores' worth other processes took over the next `settle_s` seconds; None without the kernel's counters."""
    start = read_ticks()
    time.sleep(settle_s)
    end = read_ticks()
    use = None if start is None or end is None else cpu_use(start, end, cores or os.cpu_count() or 1)
    return None if use is None else use.others_cores


def _stat(s: dict[str, Any], key: str, stat: str) -> Any:
    v = s.get(key)
    return v.get(stat) if isinstance(v, dict) else None


def _error_rows(run_dir: Path) -> int:
    return sum(1 for e in read_events(run_dir / "events.jsonl") if e.kind == EventKind.ERROR)


def condition_row(loops: int, run_dir: Path, wall_s: float) -> dict[str, Any]:
    """One condition's figures from its sealed run folder."""
    s = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    machine = s.get("machine") or {}
    answers = s.get("answers") or {}
    return {
        "busy_loops": loops, "calls": s.get("calls"), "turns": s.get("turns"),
        "far_ms_p50": _stat(s, "far_ms", "p50"), "far_ms_p50_ci": _stat(s, "far_ms", "p50_ci"),
        "far_ms_p95": _stat(s, "far_ms", "p95"), "far_ms_p95_ci": _stat(s, "far_ms", "p95_ci"),
        "far_n": _stat(s, "far_ms", "n"),
        "stop_latency_ms_p50": _stat(s, "stop_latency_ms", "p50"),
        "stop_latency_ms_p95": _stat(s, "stop_latency_ms", "p95"), "stop_n": _stat(s, "stop_latency_ms", "n"),
        "false_cut_ins": s.get("false_cut_ins"),
        "answers_correct": answers.get("correct"), "answers_n": answers.get("n"),
        "error_rows": _error_rows(run_dir),
        "verdict": machine.get("verdict"), "loop_lag_ms": machine.get("loop_lag_ms"),
        "others_cpu_share": machine.get("others_cpu_share"), "own_cpu_share": machine.get("own_cpu_share"),
        "cores": machine.get("cores"), "wall_s": round(wall_s, 1), "run_dir": str(run_dir),
    }


def measure(levels: Sequence[int], play: Callable[[int, Path], Path], runs_dir: Path,
            spin: Sequence[str] = SPIN) -> list[dict[str, Any]]:
    """Each level in turn: its busy loops started, the fixture list played (`play(level, run_dir)` returns the
    sealed run folder), the loops ended; a row per level."""
    rows = []
    for n in levels:
        with busy_loops(n, spin):
            t0 = time.monotonic()
            run_dir = play(n, runs_dir / f"busy-{n}")
            wall = time.monotonic() - t0
        rows.append(condition_row(n, run_dir, wall))
        print(json.dumps({k: rows[-1][k] for k in ("busy_loops", "far_ms_p50", "far_ms_p95", "false_cut_ins",
                                                  "verdict", "others_cpu_share")}), flush=True)
    return rows


def _cell(x: Any, nd: int = 0) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def _ci(x: Any) -> str:
    return f" [{x[0]:.0f}–{x[1]:.0f}]" if isinstance(x, list | tuple) and len(x) == 2 and None not in x else ""


def markdown(result: dict[str, Any]) -> str:
    """The results table: a row per condition."""
    lines = [f"# The main job on a busy machine ({result['date'][:10]}, {result['cpu_count']} cores)", "",
             f"`{result['command']}`", "",
             "| busy loops | FAR p50 ms | FAR p95 ms | stop p50 / p95 ms | false cut-ins | answers correct | errors "
             "| loop lag p50 / p95 / max ms | others' CPU | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["conditions"]:
        lag = r.get("loop_lag_ms") or {}
        answers = "—" if r["answers_correct"] is None else f"{100 * r['answers_correct']:.0f} % of {r['answers_n']}"
        others = "—" if r["others_cpu_share"] is None else f"{100 * r['others_cpu_share']:.0f} % of {r['cores']}"
        lines.append(
            f"| {r['busy_loops']} | {_cell(r['far_ms_p50'])}{_ci(r['far_ms_p50_ci'])} "
            f"| {_cell(r['far_ms_p95'])}{_ci(r['far_ms_p95_ci'])} "
            f"| {_cell(r['stop_latency_ms_p50'])} / {_cell(r['stop_latency_ms_p95'])} | {_cell(r['false_cut_ins'])} "
            f"| {answers} | {r['error_rows']} | {_cell(lag.get('p50'), 1)} / {_cell(lag.get('p95'), 1)} / "
            f"{_cell(lag.get('max'))} | {others} | {r['verdict'] or 'not measured'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loops", default="0,1,2", help="busy loops beside each condition, comma-separated, in order")
    ap.add_argument("--fixtures", default="default")
    ap.add_argument("--stt", default=None, help="the recogniser (default: the pipeline's)")
    ap.add_argument("--engine", default=None, help="the engine (default: the pipeline's)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/busy_machine.json"))
    ap.add_argument("--runs-dir", type=Path, default=None)
    ap.add_argument("--settle-s", type=float, default=5.0, help="how long the machine is watched before starting")
    ap.add_argument("--anyway", action="store_true", help="run although others already take the CPU")
    a = ap.parse_args(argv)
    try:
        levels = [int(x) for x in a.loops.split(",") if x.strip()]
    except ValueError:
        levels = []
    if not levels or min(levels) < 0:
        print(f"--loops {a.loops}: give counts of busy loops, 0 or more, comma-separated", file=sys.stderr)
        return 2
    others = others_now(a.settle_s)
    if others is not None and others >= OTHERS_MIN_CORES and not a.anyway:
        print(f"the machine is not quiet: others took {others:.2f} cores over {a.settle_s:g} s (a busy machine "
              f"from {OTHERS_MIN_CORES} cores); run this on a quiet machine, or give --anyway", file=sys.stderr)
        return EXIT_NOT_QUIET

    from voicelab.cli.common import quiet_pipecat_logs
    from voicelab.pipeline.config import PipelineConfig
    from voicelab.pipeline.resources import Resources
    from voicelab.runs.calls import load_fixtures, run_config

    quiet_pipecat_logs("ERROR")
    cfg = PipelineConfig()
    cfg = replace(cfg, **{k: v for k, v in (("stt", a.stt), ("engine", a.engine)) if v is not None})
    fixtures = load_fixtures([f.strip() for f in a.fixtures.split(",") if f.strip()])
    runs_dir = a.runs_dir or Path(tempfile.mkdtemp(prefix="voicelab-busy-"))
    res = Resources(cfg)
    try:
        rows = measure(levels, lambda _n, run_dir: run_config(cfg, fixtures, runs_dir, run_dir=run_dir, resources=res),
                       runs_dir)
    finally:
        res.close()
    result = {
        "benchmark": "busy_machine", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["benchmarks/busy_machine.py", *(argv if argv is not None else sys.argv[1:])]),
        "config": {"engine": cfg.engine, "stt": cfg.stt, "policy": cfg.policy, "turn": cfg.turn,
                   "barge_in": cfg.barge_in},
        "fixtures": [f.name for f in fixtures], "cpu_count": os.cpu_count(),
        "others_cores_before": None if others is None else round(others, 3), "conditions": rows,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    a.out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(f"wrote {a.out} and {a.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
