"""Pick the tool-call check's floor (engines/local/samplers/tool_check.py) on the validation split.

    python -m engines.eval.tool_floor --model diffusion --out engines/tiny/stages/tool_floor_diffusion.json

Every answer of the split is decoded with the check on but vetoing nothing, and the score of each tool call is
kept: the least probability the model gives a token of the call. The right calls are the held-out requests'
tool calls scored correct; the wrong ones are the garbled requests' tool calls (a clarifying question or the
fallback was right). The floor is the midpoint of the gap between the highest wrong score and the lowest right
one, so that it sits as far from both as the split allows; where the two overlap there is no gap and the command
says so. Only the validation split is read (never the unseen, held-out or out-of-domain test sets).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any

from engines.eval.evaluate import heldout_prompts, validation_examples, validation_garbled
from engines.shop.answers import score_reply

MIN_FLOOR = 1e-9  # on, so every span is scored, and below any score, so none is vetoed


@dataclass(frozen=True)
class Scored:
    prompt: str
    answer: str
    score: float
    correct: bool
    wrong_tool_call: bool


def floor_between(right: list[float], wrong: list[float]) -> float | None:
    """The midpoint between the highest wrong score and the lowest right one (None: they overlap)."""
    if not right:
        return None
    hi_wrong = max(wrong, default=0.0)
    lo_right = min(right)
    if hi_wrong >= lo_right:
        return None
    return round((hi_wrong + lo_right) / 2, 2)


def scored_calls(engine: Any, prompts: list[Any]) -> list[Scored]:
    """Each answer's tool-call score, with the check on and vetoing nothing (answers without a call are left out)."""
    out = []
    for p in prompts:
        gen = engine.generate(p.messages, tool_floor=MIN_FLOOR)
        for _ in gen:
            pass
        if gen.control.tool_scores and gen.last is not None:
            answer = gen.last.text()
            s = score_reply(answer, p.expect)
            out.append(Scored(p.messages[-1]["content"], answer, round(gen.control.tool_scores[0], 4), s.correct,
                              s.wrong_tool_call))
    return out


def main(argv: list[str] | None = None) -> None:
    from engines.local.engine import open_engine

    ap = argparse.ArgumentParser(description="Pick the tool-call check's floor on the validation split.")
    ap.add_argument("--model", default="diffusion")
    ap.add_argument("--n", type=int, default=300, help="held-out validation prompts")
    ap.add_argument("--garbled", type=int, default=500, help="garbled validation requests")
    ap.add_argument("--out", default=None, help="write every scored call and the floor here (JSON)")
    a = ap.parse_args(argv)
    eng = open_engine(a.model)
    right = [c for c in scored_calls(eng, heldout_prompts(validation_examples(a.n))) if c.correct]
    wrong = [c for c in scored_calls(eng, validation_garbled(a.garbled)) if c.wrong_tool_call]
    floor = floor_between([c.score for c in right], [c.score for c in wrong])
    res = {"model": a.model, "n": a.n, "garbled": a.garbled, "floor": floor,
           "right_calls": len(right), "lowest_right": sorted(c.score for c in right)[:5],
           "wrong_calls": len(wrong), "wrong": [c.__dict__ for c in sorted(wrong, key=lambda c: -c.score)],
           "lowest_right_calls": [c.__dict__ for c in sorted(right, key=lambda c: c.score)[:5]]}
    if a.out:
        with open(a.out, "w") as f:
            f.write(json.dumps(res, indent=1) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k not in ("wrong", "lowest_right_calls")}))
    if floor is None:
        raise SystemExit(f"error: {a.model}: the right and wrong tool calls' scores overlap; no floor separates them")


if __name__ == "__main__":
    main()
