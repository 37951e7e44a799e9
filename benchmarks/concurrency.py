"""FAR against the number of calls played at once: where this machine's cores saturate.

    .venv/bin/python benchmarks/concurrency.py [--levels 1,2,4,8] [--fixtures single_question,...]
        [--stt transcript] [--out benchmarks/results/concurrency.json] [--runs-dir DIR]

For each level N, `voicelab.runs.calls.run_config` plays the fixture list N times over (`repeat=N`) with
`concurrency=N`, so N calls are in flight for the whole level (same plan as `voicelab run --repeat N
--concurrency N`). One `Resources` is loaded once and shared by every level, as one `voicelab run` shares it
by all its calls: the engine steps in its one worker thread, the Piper voice is serialized, each call has
its own pipeline, recorder, scheduler, VAD and turn analyzer (and its own pocketsphinx decoder).

Per level: FAR p50 / p95 / n from the run's summary.json, the worst fixture-player lag (how late the event
loop fed the caller's audio: the first sign of saturation), the process's CPU seconds per wall second, and
the load average before and after. The figures are noisy while other jobs share the machine: the load
average is recorded with each. Run folders go to a temporary folder (outputs, never committed) unless
`--runs-dir`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DEFAULT_FIXTURES = ("single_question", "hr_question_close", "ulaw_noisy_hours", "telephone_8k")
LAG_SATURATED_MS = 50.0  # the player fed audio this late: calls no longer run in real time


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _calls_lag_ms(run_dir: Path) -> list[float]:
    return [float(json.loads(p.read_text(encoding="utf-8")).get("player_max_lag_ms") or 0.0)
            for p in sorted((run_dir / "calls").glob("*.json"))]


def measure_level(n: int, cfg: Any, res: Any, fixtures: list[Any], runs_dir: Path) -> dict[str, Any]:
    """Play the fixture list n times over, n calls at a time; the level's figures."""
    from voicelab.runs.calls import run_config

    load_before = os.getloadavg()
    cpu0, t0 = _cpu_s(), time.monotonic()
    run_dir = run_config(cfg, fixtures, runs_dir, run_dir=runs_dir / f"concurrency-{n}", resources=res, repeat=n,
                         concurrency=n)
    wall = time.monotonic() - t0
    cpu = _cpu_s() - cpu0
    s = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    lags = _calls_lag_ms(run_dir)
    far = s.get("far_ms") or {}
    return {
        "concurrency": n, "calls": len(lags), "turns": s.get("turns"),
        "far_ms_p50": far.get("p50"), "far_ms_p95": far.get("p95"), "far_n": far.get("n"),
        "far_ms_p50_ci": far.get("p50_ci"),
        "endpointing_ms_p50": (s.get("breakdown_ms") or {}).get("endpointing", {}).get("p50")
        if isinstance(s.get("breakdown_ms"), dict) else None,
        "player_lag_ms_max": round(max(lags), 1) if lags else None,
        "player_lag_ms_median": round(sorted(lags)[len(lags) // 2], 1) if lags else None,
        "errors": s.get("errors"), "wall_s": round(wall, 1), "process_cpu_s": round(cpu, 1),
        "process_cores_busy": round(cpu / wall, 2) if wall > 0 else None,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "run_dir": str(run_dir),
    }


def saturation(levels: list[dict[str, Any]]) -> dict[str, Any]:
    """The first level where the player lagged past LAG_SATURATED_MS or FAR p50 rose by more than half over
    the single-call level; None when no level did."""
    base = next((lv for lv in levels if lv["concurrency"] == 1), None)
    for lv in levels:
        late = (lv["player_lag_ms_max"] or 0.0) > LAG_SATURATED_MS
        slower = (base is not None and base["far_ms_p50"] and lv["far_ms_p50"]
                  and lv["far_ms_p50"] > 1.5 * base["far_ms_p50"])
        if late or slower:
            why = [w for w, hit in (("player lag", late), ("FAR p50 +50 %", slower)) if hit]
            return {"concurrency": lv["concurrency"], "why": why}
    return {"concurrency": None, "why": ["no level saturated"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--levels", default="1,2,4,8", help="concurrency levels, comma-separated")
    ap.add_argument("--fixtures", default=",".join(DEFAULT_FIXTURES))
    ap.add_argument("--stt", default="transcript", help="transcript keeps STT out of the budget")
    ap.add_argument("--engine", default="diffusion")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/concurrency.json"))
    ap.add_argument("--runs-dir", type=Path, default=None)
    ap.add_argument("--max-load", type=float, default=None,
                    help="skip the levels above 4 when the 1-minute load average exceeds this before them")
    a = ap.parse_args(argv)
    levels = sorted({int(x) for x in a.levels.split(",") if x.strip()})
    if not levels or levels[0] < 1:
        print(f"--levels {a.levels}: give positive counts", file=sys.stderr)
        return 2

    from voicelab.cli.common import quiet_pipecat_logs
    from voicelab.pipeline.config import PipelineConfig
    from voicelab.pipeline.resources import Resources
    from voicelab.runs.calls import load_fixtures

    quiet_pipecat_logs("ERROR")
    cfg = PipelineConfig(engine=a.engine, stt=a.stt)
    fixtures = load_fixtures([f.strip() for f in a.fixtures.split(",") if f.strip()])
    runs_dir = a.runs_dir or Path(tempfile.mkdtemp(prefix="voicelab-concurrency-"))
    res = Resources(cfg)
    out: list[dict[str, Any]] = []
    skipped: list[int] = []
    try:
        for n in levels:
            if n > 4 and a.max_load is not None and os.getloadavg()[0] > a.max_load:
                skipped.append(n)
                continue
            lv = measure_level(n, cfg, res, fixtures, runs_dir)
            if not lv["far_n"]:
                print(f"concurrency {n}: no timed reply (see {lv['run_dir']}/events.jsonl)", file=sys.stderr)
                return 1
            out.append(lv)
            print(json.dumps({k: lv[k] for k in ("concurrency", "calls", "far_ms_p50", "far_ms_p95", "far_n",
                                                 "player_lag_ms_max", "process_cores_busy", "loadavg_before")}),
                  flush=True)
    finally:
        res.close()
    result = {
        "benchmark": "concurrency", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["benchmarks/concurrency.py", *(argv if argv is not None else sys.argv[1:])]),
        "config": {"engine": a.engine, "stt": a.stt, "policy": cfg.policy, "turn": cfg.turn,
                   "barge_in": cfg.barge_in, "greeting": bool(cfg.greeting.strip())},
        "fixtures": [f.name for f in fixtures], "cpu_count": os.cpu_count(),
        "levels": out, "skipped_levels": skipped, "saturation": saturation(out),
        "note": ("each level plays the fixture list N times with N calls in flight (run_config repeat=N, "
                 "concurrency=N) in one process; FAR per timed reply from summary.json; player lag = how late "
                 "the event loop fed caller audio; figures are noisy on a shared machine: see each level's "
                 "load average"),
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {a.out}; saturation: {result['saturation']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
