"""The tool-call check on human speech: real callers' words, none of them a request the bike shop can act on.

The Harper Valley calls (`audio_fixtures/human/calls/harper_valley/`, 100 real phone calls to a bank, Apache-2.0)
hold each turn twice: what a speech recogniser wrote and what a person transcribed. Every caller turn is given to
each tiny engine as a one-turn chat, with the tool-call check off and at its floor. A bank caller's words ("i lost
my debit card", "can you cancel the card", "i'd like to schedule an appointment") never ask the shop for a
booking, a cancellation or an order, so every tool call is a wrong one; the check's job is to turn them into
asking again. The floors themselves were picked on the corpus's validation split (engines/eval/tool_floor.py).

    .venv/bin/python benchmarks/tool_check_human.py --json benchmarks/results/tool_check_human.json \\
        --markdown benchmarks/results/tool_check_human.md
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from engines.local import TINY_TOOL_FLOORS  # noqa: E402
from engines.local.engine import open_engine  # noqa: E402

CALLS = ROOT / "audio_fixtures" / "human" / "calls" / "harper_valley"
FLOORS = TINY_TOOL_FLOORS
ROLE, ASR, HAND = 1, 6, 7  # columns of a call's tsv: turn, role, start, duration, word times, word durations, asr, hand


def caller_turns(folder: Path = CALLS) -> list[tuple[str, str]]:
    """(recogniser text, hand transcript) of every caller turn with words, call by call."""
    out = []
    for f in sorted(folder.glob("*.tsv")):
        with f.open(encoding="utf-8") as fh:
            for row in csv.reader(fh, delimiter="\t"):
                if len(row) > HAND and row[ROLE] == "caller" and row[HAND].strip():
                    out.append((row[ASR].strip(), row[HAND].strip()))
    return out


def tool_calls(engine, texts: list[str]) -> tuple[int, int, list[str]]:  # noqa: ANN001
    """(tool calls, vetoed calls, the first calls' texts) over one-turn chats of `texts`."""
    calls = vetoed = 0
    shown: list[str] = []
    for t in texts:
        gen = engine.generate([{"role": "user", "content": t}])
        for _ in gen:
            pass
        answer = "" if gen.last is None else gen.last.text()
        if answer.startswith("["):
            calls += 1
            if len(shown) < 10:
                shown.append(f"{t} -> {answer[:60]}")
        vetoed += sum(1 for s in gen.control.tool_scores if s < engine.config.tool_floor)
    return calls, vetoed, shown


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--markdown", type=Path, default=None)
    a = ap.parse_args(argv)
    turns = caller_turns()
    rows = []
    t0 = time.monotonic()
    for model, floor in FLOORS.items():
        for f in (0.0, floor):
            eng = open_engine(model, tool_floor=f)
            for source, idx in (("recogniser", 0), ("hand", 1)):
                texts = [t[idx] for t in turns if t[idx]]
                n, v, shown = tool_calls(eng, texts)
                rows.append({"engine": model, "tool_floor": f, "text": source, "turns": len(texts),
                             "tool_calls": n, "vetoed": v, "examples": shown})
                print(f"{model:9} floor {f:4} {source:10} {n:3} tool calls of {len(texts)} ({v} vetoed)")
            eng.close()
    result = {"machine": {"platform": platform.platform(), "python": platform.python_version()},
              "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "seconds": round(time.monotonic() - t0, 1),
              "calls": len(list(CALLS.glob("*.tsv"))), "rows": rows}
    if a.json:
        a.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if a.markdown:
        lines = ["# The tool-call check on human speech (Harper Valley caller turns)", "",
                 f"{result['date']}, {result['calls']} real calls; every tool call is a wrong one "
                 "(`benchmarks/tool_check_human.py`).", "",
                 "| engine | tool_floor | text | caller turns | tool calls | vetoed |", "|---|---|---|---|---|---|"]
        lines += [f"| {r['engine']} | {r['tool_floor']} | {r['text']} | {r['turns']} | {r['tool_calls']} | "
                  f"{r['vetoed']} |" for r in rows]
        a.markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
