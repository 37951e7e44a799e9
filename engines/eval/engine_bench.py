"""Engine benchmark: every engine and sampler on the same held-out prompts (or the user's own), batch 1.

    python -m engines.eval.engine_bench --json        (also: voicelab bench engines)
    python -m engines.eval.engine_bench --prompts my_prompts.jsonl   (the `engines.eval.evaluate --prompts` format)

Figures per engine/sampler:
- tokens_per_s: answer tokens (up to and including the end token) over generation wall time;
- first_commit_ms: median time from the request to the first snapshot whose contiguous
  committed prefix is non-empty (what the gate can first release);
- forwards_per_token: model forward passes per answer token;
- correctness / coherence: right intent and exact slots / a well-formed reply (engines/eval/evaluate.py) on
  the same prompts, and their wrong tool calls (`prompt_wrong_tool_calls`); with `--prompts`, also per
  expected intent (`by_intent`) and the failures;
- unseen_correct / unseen_wrong_tool_calls: on the unseen-caller set (engines/eval/unseen.py: names,
  phrasings, number and time forms the corpus does not use), beside the held-out figure so the gap shows;
  unseen_wrong_values: there, the expected tool called with a value the caller did not say (a wrong digit);
- ood_coherent / ood_correct: on the out-of-domain set (engines/shop/ood.py), the share of replies that
  are well-formed replies of the shop's grammar / that are the fallback or a clarifying question;
- wrong_tool_calls: tool calls on the out-of-domain set, where none is ever expected;
- x_ar: tokens/s as a multiple of the autoregressive engine's.

Speed is timed in rounds, every engine once per round over the same prompts, in an order that turns
each round, and each engine's tokens/s is its median round; x_ar is the median over rounds of the
round's ratio. A shared machine's speed drifts over minutes (the same AR engine timed 645 and 1127
tokens/s in two runs ten minutes apart when each engine was timed once, one after the other, which
put the diffusion engine anywhere between 2.4x and 5.6x AR); timed side by side, both engines see the
same machine and the ratio holds.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from engines.eval.evaluate import (
    Prompt,
    evaluate,
    heldout_examples,
    load_prompts,
    ood_set,
    prompt_file_error,
    unseen_set,
)
from engines.local import TINY_TOOL_FLOORS
from engines.local.engine import Engine, open_engine

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
    # the tool-call check (engines/local/samplers/tool_check.py) the other way from each model's default, side by
    # side: on for the diffusion model at its picked floor, off for the AR model
    ("diffusion", "threshold", {"tool_floor": TINY_TOOL_FLOORS["diffusion"]}),
    ("ar", "autoregressive", {"tool_floor": 0.0}),
]


WARMUP = 3  # untimed answers per engine before its timed passes


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
    rounds_tokens_per_s: list[float] = field(default_factory=list)  # one timed pass per round
    x_ar: float = float("nan")  # median over rounds of tokens/s over the AR engine's in the same round
    prompts_source: str = "heldout"  # or the --prompts file
    coherence: float = float("nan")  # on the timed prompts
    prompt_wrong_tool_calls: int = 0  # on the timed prompts
    by_intent: dict[str, dict[str, Any]] = field(default_factory=dict)  # expected intent -> n, correct, ...
    failures: list[dict[str, Any]] = field(default_factory=list)  # the timed prompts answered wrong (--prompts)
    unseen_prompts: int = 0
    unseen_correct: float = float("nan")
    unseen_wrong_tool_calls: int = 0
    unseen_wrong_values: int = 0  # the expected tool called with a value the caller did not say
    unseen_by_tag: dict[str, dict[str, Any]] = field(default_factory=dict)  # name source, number and time form


@dataclass
class _Pass:
    """One timed pass of an engine over the prompts."""

    tokens: int
    seconds: float
    forwards: int
    steps: int
    revisions: int
    firsts_ms: list[float]

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")


def timed_pass(eng: Engine, examples: list) -> _Pass:
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
            tokens += last.prefix_len + (1 if last.eos is not None else 0)
            forwards += last.forwards
        if first is not None:
            firsts.append(first / 1e6)
    return _Pass(tokens, gen_s, forwards, steps, revisions, firsts)


def _row(eng: Engine, examples: list, passes: list[_Pass], ood: list[Prompt] | None,
         unseen: list[Prompt] | None = None, keep_failures: int = 0) -> BenchRow:
    """The row of an engine from its timed passes (the median one for speed) and its answers' scores."""
    rates = [p.tokens_per_s for p in passes]
    mid = sorted(passes, key=lambda p: p.tokens_per_s)[len(passes) // 2]  # every speed column from this pass
    res = evaluate(eng, examples, keep_failures=keep_failures)
    n = len(examples)
    row = BenchRow(eng.name, eng.sampler, {}, n, round(mid.tokens_per_s, 1),
                   round(statistics.median(mid.firsts_ms), 2) if mid.firsts_ms else float("nan"),
                   round(mid.forwards / max(1, mid.tokens), 3), round(mid.steps / n, 2),
                   round(mid.seconds * 1000 / max(1, mid.forwards), 3), res.correct, round(mid.revisions / n, 2))
    row.rounds_tokens_per_s = [round(r, 1) for r in rates]
    row.coherence, row.prompt_wrong_tool_calls, row.by_intent = res.coherent, res.wrong_tool_calls, res.by_intent
    row.failures = res.failures
    if unseen:
        u = evaluate(eng, unseen, keep_failures=0)
        row.unseen_prompts, row.unseen_correct, row.unseen_wrong_tool_calls = u.n, u.correct, u.wrong_tool_calls
        row.unseen_wrong_values = u.wrong_values
        row.unseen_by_tag = u.by_tag
    if ood:
        o = evaluate(eng, ood, keep_failures=0)
        row.ood_prompts, row.ood_coherent, row.ood_correct, row.wrong_tool_calls = o.n, o.coherent, o.correct, \
            o.wrong_tool_calls
    return row


def _warm_up(eng: Engine, examples: list, n: int = WARMUP) -> None:
    for e in examples[:n]:
        eng.answer(e.messages)  # torch's first-use costs stay out of the timed passes


def bench_engine(eng: Engine, examples: list, warmup: int = WARMUP, ood: list[Prompt] | None = None,
                 rounds: int = 1) -> BenchRow:
    """One engine alone (no AR ratio): `rounds` timed passes, then its scores."""
    _warm_up(eng, examples, warmup)
    return _row(eng, examples, [timed_pass(eng, examples) for _ in range(rounds)], ood)


def run_bench(n: int = 200, ood_garbled: int = 120, threads: int = 2, rounds: int = 5,
              on_row: Callable[[BenchRow], None] | None = None, prompts: list[Prompt] | None = None,
              prompts_source: str = "", unseen: bool = True, keep_failures: int = 20) -> list[BenchRow]:
    """Every engine and sampler of DEFAULT_RUNS on the same held-out prompts (or `prompts`, the user's own),
    timed side by side in `rounds` rounds (module doc), then scored there, on the unseen-caller set and on
    the out-of-domain set."""
    if rounds < 1:
        raise ValueError(f"rounds: must be at least 1, got {rounds}")
    torch.set_num_threads(threads)
    examples: list = prompts if prompts else heldout_examples(n)
    ood = ood_set(ood_garbled) if ood_garbled > 0 else None
    unseen_prompts = unseen_set() if unseen else None
    engines = [open_engine(model, sampler, **opts) for model, sampler, opts in DEFAULT_RUNS]
    try:
        for eng in engines:
            _warm_up(eng, examples)
        passes: list[list[_Pass]] = [[] for _ in engines]
        for r in range(rounds):
            k = r % len(engines)  # each round starts with another engine
            for i in list(range(k, len(engines))) + list(range(k)):
                passes[i].append(timed_pass(engines[i], examples))
        ar = next((i for i, (_, sampler, _) in enumerate(DEFAULT_RUNS) if sampler == "autoregressive"), None)
        rows: list[BenchRow] = []
        for i, ((_, _, opts), eng) in enumerate(zip(DEFAULT_RUNS, engines, strict=True)):
            row = _row(eng, examples, passes[i], ood, unseen_prompts, keep_failures if prompts else 0)
            row.options = opts
            row.prompts_source = prompts_source or ("file" if prompts else "heldout")
            if ar is not None:
                row.x_ar = round(statistics.median(p.tokens_per_s / q.tokens_per_s
                                                   for p, q in zip(passes[i], passes[ar], strict=True)), 2)
            rows.append(row)
            if on_row is not None:
                on_row(row)
        return rows
    finally:
        for eng in engines:
            eng.close()


def write_bench(rows: list[BenchRow], path: str | Path, threads: int) -> None:
    """The JSON result with the machine it ran on."""
    meta = {"machine": {"platform": platform.platform(), "processor": platform.processor(), "threads": threads,
                        "torch": torch.__version__, "device": "cuda" if torch.cuda.is_available() else "cpu"},
            "rows": [asdict(r) for r in rows]}
    Path(path).write_text(json.dumps(meta, indent=1) + "\n")


def format_rows(rows: list[BenchRow]) -> list[str]:
    """One line per row, with the ratio to the autoregressive engine's tokens/s."""
    out = []
    for r in rows:
        ratio = "" if math.isnan(r.x_ar) else f"{r.x_ar:.2f}x AR"  # NaN: no AR engine in the run
        unseen = f"unseen {r.unseen_correct:.1%} (wrong tool calls {r.unseen_wrong_tool_calls}, wrong values " \
            f"{r.unseen_wrong_values})  " \
            if r.unseen_prompts else ""
        out.append(f"{r.engine:10s} {r.sampler:15s} {json.dumps(r.options):18s} {r.tokens_per_s:8.1f} tok/s "
                   f"{ratio:9s} first commit {r.first_commit_ms:6.1f} ms  {r.forwards_per_token:.2f} fwd/tok  "
                   f"correct {r.correctness:.1%} coherent {r.coherence:.1%} "
                   f"(wrong tool calls {r.prompt_wrong_tool_calls})  {unseen}"
                   f"ood coherent {r.ood_coherent:.1%} ok {r.ood_correct:.1%} wrong tool calls {r.wrong_tool_calls}")
    return out


def format_details(rows: list[BenchRow], max_failures: int = 10) -> list[str]:
    """Per engine row: its figures per expected intent on the timed prompts, then the prompts it got wrong."""
    out: list[str] = []
    for r in rows:
        out.append(f"{r.engine} {r.sampler} {json.dumps(r.options)} on {r.prompts_source}:")
        for intent, v in r.by_intent.items():
            out.append(f"  {intent:18s} n {v['n']:4d}  correct {v['correct']:6.1%}  coherent {v['coherent']:6.1%}  "
                       f"wrong tool calls {v['wrong_tool_calls']}")
        for f in r.failures[:max_failures]:
            out.append(f"  FAIL {f['prompt']!r} -> {f['got']!r} ({f['why']})")
        if len(r.failures) > max_failures:
            out.append(f"  ... {len(r.failures) - max_failures} more in --json")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Benchmark the engines on the same held-out prompts.")
    ap.add_argument("--n", type=int, default=200, help="held-out prompts")
    ap.add_argument("--ood-garbled", type=int, default=120,
                    help="garbled requests in the out-of-domain set (0: skip the out-of-domain set)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds, every engine once per round")
    ap.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    ap.add_argument("--out", default=None, help="also write the JSON result (with machine info) here")
    ap.add_argument("--prompts", type=Path, default=None,
                    help="time and score on this JSON-lines prompt file instead of the held-out prompts")
    ap.add_argument("--no-unseen", action="store_true", help="skip the unseen-caller set")
    a = ap.parse_args(argv)
    prompts = None
    if a.prompts is not None:
        try:
            prompts = load_prompts(a.prompts)
        except (OSError, ValueError) as e:
            raise SystemExit(f"error: {prompt_file_error(a.prompts, e)}") from None
    rows = run_bench(a.n, a.ood_garbled, a.threads, a.rounds,
                     on_row=None if a.json else lambda r: print(json.dumps(asdict(r)), flush=True),
                     prompts=prompts, prompts_source=str(a.prompts or ""), unseen=not a.no_unseen)
    if a.out:
        write_bench(rows, a.out, a.threads)
    if a.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
    else:
        print("\n".join(format_rows(rows) + (format_details(rows) if prompts else [])))



if __name__ == "__main__":
    main()
