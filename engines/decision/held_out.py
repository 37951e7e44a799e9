"""Decision models side by side on callers' turns from a source they were not trained on.

For each model folder: on every turn of the held-out source (default `harper_valley`, real bank calls that no
model here trains on) the share of whole turns judged complete and of cut prefixes judged cut off (the labelling
rule of engines/decision/conversation.py), and, separately, P(complete) where the caller paused and went on (the
ambiguous `stops`, in no accuracy); the same on the held-out dialogues of the trained conversational sources; the
hand-written probe (engines/decision/probe.py); P(complete) on a fixed list of fragments; parameters, file size
and the CPU time of one judgement (1 thread, batch 1, as the live path asks).

    python -m engines.decision.held_out engines/tiny/decision engines/tiny/decision_conversation \
        --json benchmarks/results/decision_conversation_eval.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from engines.decision import probe as decision_probe
from engines.decision.conversation import DATA, STANDALONE, cut_prefixes, is_heldout
from engines.decision.model import DecisionModel, load_decision_model
from engines.decision.transcripts import SOURCES, TranscriptTurn, read
from engines.errors import CheckpointError

# out-of-shop fragments (cut off) and whole turns (complete) a caller says, with the answer they need
FRAGMENTS: tuple[tuple[str, bool], ...] = (
    ("can we", False), ("do you", False), ("my daughter", False), ("on my", False),
    ("could you read that back", True), ("sorry i meant thursday", True), ("thank you", True), ("okay bye", True),
    ("bye bye", True), ("will we ever forget it", True), ("go forward 10 meters", True),
)


def labelled_sets(turns: Sequence[TranscriptTurn], whole: frozenset[str]) -> dict[str, list[str]]:
    """Distinct whole turns, cut prefixes and pause prefixes (where the caller stopped and went on) of `turns`."""
    complete = sorted({t.text for t in turns})
    cut = sorted({p for t in turns for p in cut_prefixes(t, whole)})
    pauses = sorted({" ".join(t.text.split()[:k]) for t in turns for k in t.stops})
    return {"complete": complete, "cut": cut, "pause": pauses}


def _share(ps: list[float], complete: bool) -> float | None:
    return round(sum((p >= 0.5) == complete for p in ps) / len(ps), 4) if ps else None


def score_sets(dm: DecisionModel, sets: dict[str, list[str]]) -> dict:
    """Accuracy on whole turns and on cut prefixes, P(complete) at pauses; the cut prefixes judged complete."""
    p = {k: dm.p_yes_batch([("turn_complete", x, None) for x in v]) for k, v in sets.items()}
    wrong_cut = sorted(((pi, x) for pi, x in zip(p["cut"], sets["cut"], strict=True) if pi >= 0.5), reverse=True)
    wrong_whole = sorted((pi, x) for pi, x in zip(p["complete"], sets["complete"], strict=True) if pi < 0.5)
    return {
        "n_complete": len(sets["complete"]), "accuracy_complete": _share(p["complete"], True),
        "n_cut": len(sets["cut"]), "accuracy_cut": _share(p["cut"], False),
        "balanced_accuracy": round(((_share(p["complete"], True) or 0) + (_share(p["cut"], False) or 0)) / 2, 4),
        "n_pause": len(sets["pause"]), "pause_judged_complete": _share(p["pause"], True),
        "worst_cut_judged_complete": [[x, round(pi, 3)] for pi, x in wrong_cut[:8]],
        "worst_complete_judged_cut": [[x, round(pi, 3)] for pi, x in wrong_whole[:8]],
    }


def latency_ms(dm: DecisionModel, texts: Sequence[str], n: int = 300) -> dict:
    """CPU time of one live judgement (batch 1) on 1 thread: median and 95th percentile."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        items = [texts[i % len(texts)] for i in range(n)]
        for x in items[:20]:
            dm.ask("turn_complete", x)
        ms = sorted(dm.ask("turn_complete", x).ms for x in items)
    finally:
        torch.set_num_threads(threads)
    return {"n": n, "p50": round(statistics.median(ms), 3), "p95": round(ms[int(0.95 * (n - 1))], 3), "threads": 1}


def evaluate(folder: Path, turns: Sequence[TranscriptTurn], source: str) -> dict:
    dm = load_decision_model(folder)
    whole = frozenset(t.text for t in turns)
    held = [t for t in turns if t.source == source]
    trained = [t for t in turns if t.source != source and is_heldout(t.dialog)]
    sets = labelled_sets(held, whole)
    fr = dm.p_yes_batch([("turn_complete", x, None) for x, _ in FRAGMENTS])
    return {
        "folder": str(folder),
        "params": sum(p.numel() for p in dm.model.parameters()),
        "model_bytes": (folder / "model.safetensors").stat().st_size,
        "held_out_source": {"source": source, "n_dialogs": len({t.dialog for t in held}), **score_sets(dm, sets)},
        "held_out_dialogs_of_other_sources": {
            s: score_sets(dm, labelled_sets([t for t in trained if t.source == s], whole))
            for s in sorted({t.source for t in trained})},
        "probe": decision_probe.score(dm),
        "fragments": [{"text": x, "expected_complete": e, "p_complete": round(p, 4)}
                      for (x, e), p in zip(FRAGMENTS, fr, strict=True)],
        "latency_ms": latency_ms(dm, sets["complete"] + sets["cut"]),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Decision models on callers' turns from a source held out of training.")
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--source", default="harper_valley", choices=SOURCES, help="the held-out source")
    ap.add_argument("--data", type=Path, default=DATA, help="the derived callers' turns file")
    ap.add_argument("--json", type=Path, help="write the figures here")
    a = ap.parse_args(argv)
    if not a.data.is_file():
        sys.exit(f"error: --data {a.data}: no such file")
    try:
        turns = read(a.data)
    except ValueError as e:
        sys.exit(f"error: {e}")
    if not any(t.source == a.source for t in turns):
        sys.exit(f"error: --source {a.source}: no turns of it in {a.data}")
    rows = []
    for folder in a.folders:
        try:
            rows.append(evaluate(folder, turns, a.source))
        except (CheckpointError, OSError) as e:
            sys.exit(f"error: {folder}: not a decision model ({e})")
        r = rows[-1]["held_out_source"]
        print(f"{folder}: {a.source} complete {r['accuracy_complete']:.1%} of {r['n_complete']}, cut {r['accuracy_cut']:.1%}"
              f" of {r['n_cut']}; probe {rows[-1]['probe']['accuracy']:.1%}", flush=True)
    result = {"command": "python -m engines.decision.held_out " + " ".join(sys.argv[1:] if argv is None else argv),
              "data": str(a.data), "standalone_answers_left_out": len(STANDALONE),
              "measured_utc": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()), "models": rows}
    if a.json:
        a.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
