"""`--turn listen`'s three knobs fitted on one human group and judged on the others, in the eot mode.

Each human group of the turn bench (phone calls `human-calls`, meetings `human`, read speech `human-read`) is
scored as `voicelab bench turns --mode eot` scores it (smart-turn every 100 ms through every labelled silence,
the same cache). On each group the policy's setting with the least mean latency at 5 % false cut-offs is fitted
(`voicelab.turnbench.eot.fitted_setting`, eot-bench's operating point); that one setting is then judged on
every group (`voicelab.turnbench.eot.judged`): its false cut-off rate there, its mean and median dead air, and
silence only set to the same false cut-off rate on the same silences, with paired bootstrap intervals of the
ratios. On its own group the figures are in-sample; on the others they are what a caller of that kind would get
from the setting. `shipped` judges the setting `--turn listen` runs by default (`DEFAULT_POLICY`).

    python benchmarks/turn_listen_fit.py --json benchmarks/results/turn_listen_fit.json

Needs the eot mode's score cache (`voicelab bench turns --mode eot` fills it; the script fills what it lacks).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import voicelab.turnbench.eot as eot
import voicelab.turnbench.turn_bench as tb
from voicelab.rules.listen_through import DEFAULT_POLICY
from voicelab.turnbench.cases import CACHE_ROOT


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--resamples", type=int, default=1000)
    a = ap.parse_args(argv)
    from voicelab.turnbench.eot_scores import score_refs  # pipecat, onnxruntime

    cases = score_refs(tb.eot_refs(None), CACHE_ROOT)
    by_group = {g: [c for c in cases if c.group == g] for g in dict.fromkeys(c.group for c in cases)}
    doc = {"command": "python benchmarks/turn_listen_fit.py " + " ".join(sys.argv[1:] if argv is None else argv),
           "budget": eot.CUTOFF_BUDGETS[0],
           "fits": eot.fit_and_judge(by_group, eot.CUTOFF_BUDGETS[0], a.resamples),
           "shipped": {"setting": DEFAULT_POLICY.to_dict(),
                       "judged": {g: eot.judged(DEFAULT_POLICY, c, a.resamples) for g, c in by_group.items()}},
           "machine": f"{platform.machine()}, {os.cpu_count()} cores, no GPU",
           "date": datetime.now(UTC).date().isoformat()}
    a.json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    for fit, f in doc["fits"].items():  # type: ignore[union-attr]
        for g, j in f["judged"].items():
            print(f"fitted on {fit} {f['setting']} judged on {g}: cut {j['false_cutoff_rate']:.3f} "
                  f"median {j['latency_ms_median']} mean {j['latency_ms_mean']} silence {j['silence_only_ms_at_same_rate']}"
                  f" ratio median {j['ratio_median']} {j['ratio_median_ci']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
