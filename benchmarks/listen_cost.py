"""What `--turn listen` costs: the CPU time of one smart-turn pass (every thread of this process: onnxruntime's
own threads included) and its wall time, at the instants the kind scores through a silence, on the phone
calls' true ends; at one pass per 100 ms, the compute per second of silence.

    .venv/bin/python benchmarks/listen_cost.py --cases 4 --json benchmarks/results/listen_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from voicelab.pcm import as_heard
from voicelab.rules.listen_through import STEP_MS
from voicelab.turnbench.audio import SR
from voicelab.turnbench.phone_calls import load
from voicelab.turnbench.scores import MAX_SMART_S, Models


def measure(n_cases: int, instants: int) -> dict[str, object]:
    smart = Models().smart()
    cpu, wall = [], []
    for case in load()[:n_cases]:
        heard = as_heard(case.audio)
        end = next(p for p in case.points if p.kind == "end")
        for k in range(1, instants + 1):
            t = round((end.t_s + k * STEP_MS / 1000.0) * SR)
            seg = heard[max(0, t - round(MAX_SMART_S * SR)):t].astype(np.float32)
            c0, w0 = time.process_time(), time.perf_counter()
            smart._predict_endpoint(seg)
            cpu.append((time.process_time() - c0) * 1000.0)
            wall.append((time.perf_counter() - w0) * 1000.0)
    per_s = 1000.0 / STEP_MS
    return {"passes": len(cpu), "cpu_ms_per_pass": {"p50": round(float(np.median(cpu)), 1),
                                                    "mean": round(float(np.mean(cpu)), 1)},
            "wall_ms_per_pass": {"p50": round(float(np.median(wall)), 1), "mean": round(float(np.mean(wall)), 1)},
            "cpu_ms_per_silence_s": round(float(np.mean(cpu)) * per_s),
            "wall_ms_per_silence_s": round(float(np.mean(wall)) * per_s),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, no GPU",
            "load_avg_1min_at_end": round(os.getloadavg()[0], 2), "date": datetime.now(UTC).date().isoformat(),
            "command": f"python benchmarks/listen_cost.py --cases {n_cases} --instants {instants}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=4)
    ap.add_argument("--instants", type=int, default=15)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    out = measure(a.cases, a.instants)
    text = json.dumps(out, indent=1)
    print(text)
    if a.json is not None:
        a.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
