"""Hand-written caller turns for the decision model's `turn_complete` question, outside the generator.

Held-out figures drawn from `engines.decision.corpus` share the generator's habits (every cut-off it writes
ends on a function word, every complete turn is about the bike shop), so they cannot show what a model
learnt from those habits. These 40 turns are written by hand from principles, not from the bundled fixtures:
20 complete everyday sentences beyond the shop and 20 cut-offs, most ending on a content word (a verb
before its object, a modifier before its noun, a clause before its request, a preface with an unseen
vocative).

    python -m engines.decision.probe                       # the shipped model
    python -m engines.decision.probe OUT1 OUT2 --json benchmarks/results/decision_probe.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from engines.decision.model import DEFAULT_FOLDER, DecisionModel, load_decision_model
from engines.errors import CheckpointError

PROBE: tuple[tuple[str, bool], ...] = (
    ("my car broke down on the motorway", True), ("we are going to the beach this weekend", True),
    ("she said the package never arrived", True), ("the train was late again this morning", True),
    ("could you send me the invoice by email", True), ("i forgot my password", True),
    ("is the museum open on bank holidays", True), ("how far is it to the station", True),
    ("the weather has been terrible all week", True), ("i think we should leave now", True),
    ("my son starts school next month", True), ("they painted the whole house blue", True),
    ("can you recommend a good restaurant", True), ("that sounds like a great idea", True),
    ("sorry i did not catch that", True), ("no thanks i am all set", True),
    ("what do you charge for a new saddle", True), ("my neighbour borrowed my ladder", True),
    ("i would rather come back later", True), ("the children loved the show", True),
    ("and so my fellow travellers", False), ("ladies and gentlemen of the jury", False),
    ("well the thing about my old", False), ("i was hoping you could recommend", False),
    ("my brother and his", False), ("when the weather gets warmer and", False),
    ("if the part arrives before friday", False), ("because the last time i came in", False),
    ("could you please tell", False), ("i need to replace the", False), ("what i really wanted", False),
    ("so the reason my", False), ("my wife wants a new", False), ("as soon as the shop", False),
    ("dear customers", False), ("now listen my friends", False), ("we were wondering whether", False),
    ("after we spoke last week", False), ("the problem with the rear", False), ("although the brakes work", False),
)


def score(dm: DecisionModel) -> dict:
    """Accuracy on the probe turns (P(complete) >= 0.5 is "complete"), and the turns it got wrong."""
    p = dm.p_yes_batch([("turn_complete", t, None) for t, _ in PROBE])
    wrong = [t for pi, (t, e) in zip(p, PROBE, strict=True) if (pi >= 0.5) != e]
    complete = [pi >= 0.5 for pi, (_, e) in zip(p, PROBE, strict=True) if e]
    cut = [pi < 0.5 for pi, (_, e) in zip(p, PROBE, strict=True) if not e]
    return {"n": len(PROBE), "accuracy": round(1 - len(wrong) / len(PROBE), 4),
            "complete_judged_complete": round(sum(complete) / len(complete), 4),
            "cut_offs_judged_cut_off": round(sum(cut) / len(cut), 4), "wrong": wrong}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Score decision models on the hand-written probe turns.")
    ap.add_argument("folders", nargs="*", type=Path, default=[DEFAULT_FOLDER])
    ap.add_argument("--json", type=Path, help="write the scores here (one entry per folder)")
    a = ap.parse_args(argv)
    rows = []
    for folder in a.folders:
        try:
            dm = load_decision_model(folder)
        except (CheckpointError, OSError) as e:
            sys.exit(f"error: {folder}: not a decision model ({e})")
        log = folder / "train_log.json"
        cmd = json.loads((folder / "eval.json").read_text()).get("command") if (folder / "eval.json").exists() else None
        rows.append({"folder": str(folder), "command": cmd,
                     "train_config": json.loads(log.read_text()).get("train_config") if log.exists() else None,
                     **score(dm)})
        print(f"{folder}: {rows[-1]['accuracy']:.1%} of {len(PROBE)} (complete {rows[-1]['complete_judged_complete']:.0%}, "
              f"cut-offs {rows[-1]['cut_offs_judged_cut_off']:.0%})")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
