"""Engine benchmark: every engine and sampler on the same held-out prompts, batch 1.

    python -m engines.bench --json        (also: voicelab bench engines)

Figures per engine/sampler:
- tokens_per_s: answer tokens (up to and including the end token) over generation wall time;
- first_commit_ms: median time from the request to the first snapshot whose contiguous
  committed prefix is non-empty (what the gate can first release);
- forwards_per_token: model forward passes per answer token;
- correctness: right intent and exact slots (engines/evaluate.py) on the same prompts;
- ood_coherent / ood_correct: on the out-of-domain set (engines/ood.py), the share of replies that
  are well-formed replies of the shop's grammar / that are the fallback or a clarifying question;
- wrong_tool_calls: tool calls on the out-of-domain set, where none is ever expected.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from engines.engine import Engine, open_engine
from engines.evaluate import Prompt, evaluate, heldout_examples, ood_set

DEFAULT_RUNS = [
    ("diffusion", "threshold", {}),
    ("diffusion", "threshold", {"cache": "none"}),
    ("diffusion", "threshold", {"block_size": 8, "steps_per_block": 4}),
    ("diffusion", "threshold", {"block_size": 48}),
    ("diffusion", "threshold", {"threshold": 0.7}),
    ("diffusion", "threshold", {"threshold": 0.5}),
    ("diffusion", "low_confidence", {}),
    ("diffusion", "revising", {}),
    ("ar", "autoregressive", {}),
]


@dataclass
class BenchRow:
    engine: str
    sampler: str
    options: dict[str, Any]
    prompts: int
    tokens_per_s: float
    first_commit_ms: float
    forwards_per_token: float
    steps_per_answer: float
    ms_per_forward: float
    correctness: float
    revisions_per_answer: float
    ood_prompts: int = 0
    ood_coherent: float = float("nan")
    ood_correct: float = float("nan")
    wrong_tool_calls: int = 0


def bench_engine(eng: Engine, examples: list, warmup: int = 3, ood: list[Prompt] | None = None) -> BenchRow:
    for e in examples[:warmup]:
        eng.answer(e.messages)
    tokens = forwards = steps = revisions = 0
    gen_s = 0.0
    firsts: list[float] = []
    for e in examples:
        gen = eng.generate(e.messages)
        t0 = time.monotonic_ns()
        first = None
        last = None
        for snap in gen:
            last = snap
            steps += 1
            revisions += len(snap.revised)
            if first is None and snap.prefix_len > 0:
                first = snap.t_ns - t0
        gen_s += (time.monotonic_ns() - t0) / 1e9
        if last is not None:
            n = last.prefix_len + (1 if last.eos is not None else 0)
            tokens += n
            forwards += last.forwards
        if first is not None:
            firsts.append(first / 1e6)
    res = evaluate(eng, examples, keep_failures=0)
    n = len(examples)
    row = BenchRow(eng.name, eng.sampler, {}, n, round(tokens / gen_s, 1),
                   round(statistics.median(firsts), 2) if firsts else float("nan"),
                   round(forwards / max(1, tokens), 3), round(steps / n, 2),
                   round(gen_s * 1000 / max(1, forwards), 3), res.correct, round(revisions / n, 2))
    if ood:
        o = evaluate(eng, ood, keep_failures=0)
        row.ood_prompts, row.ood_coherent, row.ood_correct, row.wrong_tool_calls = o.n, o.coherent, o.correct, \
            o.wrong_tool_calls
    return row


def run_bench(n: int = 200, ood_garbled: int = 120, threads: int = 2,
              on_row: Callable[[BenchRow], None] | None = None) -> list[BenchRow]:
    """Every engine and sampler of DEFAULT_RUNS on the same held-out (and out-of-domain) prompts."""
    torch.set_num_threads(threads)
    examples = heldout_examples(n)
    ood = ood_set(ood_garbled) if ood_garbled > 0 else None
    rows: list[BenchRow] = []
    for model, sampler, opts in DEFAULT_RUNS:
        eng = open_engine(model, sampler, **opts)
        row = bench_engine(eng, examples, ood=ood)
        row.options = opts
        rows.append(row)
        eng.close()
        if on_row is not None:
            on_row(row)
    return rows


def write_bench(rows: list[BenchRow], path: str | Path, threads: int) -> None:
    """The JSON result with the machine it ran on."""
    meta = {"machine": {"platform": platform.platform(), "processor": platform.processor(), "threads": threads,
                        "torch": torch.__version__, "device": "cuda" if torch.cuda.is_available() else "cpu"},
            "rows": [asdict(r) for r in rows]}
    Path(path).write_text(json.dumps(meta, indent=1) + "\n")


def format_rows(rows: list[BenchRow]) -> list[str]:
    """One line per row, with the ratio to the autoregressive engine's tokens/s."""
    ar = next((r for r in rows if r.sampler == "autoregressive"), None)
    out = []
    for r in rows:
        ratio = f"{r.tokens_per_s / ar.tokens_per_s:.2f}x AR" if ar else ""
        out.append(f"{r.engine:10s} {r.sampler:15s} {json.dumps(r.options):18s} {r.tokens_per_s:8.1f} tok/s "
                   f"{ratio:9s} first commit {r.first_commit_ms:6.1f} ms  {r.forwards_per_token:.2f} fwd/tok  "
                   f"correct {r.correctness:.1%}  ood coherent {r.ood_coherent:.1%} ok {r.ood_correct:.1%} "
                   f"wrong tool calls {r.wrong_tool_calls}")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Benchmark the engines on the same held-out prompts.")
    ap.add_argument("--n", type=int, default=200, help="held-out prompts")
    ap.add_argument("--ood-garbled", type=int, default=120,
                    help="garbled requests in the out-of-domain set (0: skip the out-of-domain set)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    ap.add_argument("--out", default=None, help="also write the JSON result (with machine info) here")
    a = ap.parse_args(argv)
    rows = run_bench(a.n, a.ood_garbled, a.threads,
                     on_row=None if a.json else lambda r: print(json.dumps(asdict(r)), flush=True))
    if a.out:
        write_bench(rows, a.out, a.threads)
    print(json.dumps([asdict(r) for r in rows], indent=1) if a.json else "\n".join(format_rows(rows)))


if __name__ == "__main__":
    main()
