"""Does an engine answer the bike shop's callers correctly? Right intent and exact slot values.

Held-out prompts come from engines/corpus.py with slot combinations never seen in training. An
answer is parsed back into (intent, slots) with the reply templates' own structure, so a reply
that says the right thing with a wrong day, time, name or digit counts as wrong.

    python -m engines.evaluate --model diffusion --sampler threshold --n 500
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from engines import corpus

_PATTERNS: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = [
    ("book", re.compile(r"^\[book\(day=(\w+), time=([0-9 apm]+), name=(\w+)\)\] great \3, .+ is booked for \1 at \2\.$"),
     ("day", "time", "name")),
    ("reschedule", re.compile(r"^\[reschedule\(name=(\w+), day=(\w+), time=([0-9 apm]+)\)\] no problem \1, "
                              r"your appointment is now on \2 at \3\.$"), ("name", "day", "time")),
    ("cancel", re.compile(r"^\[cancel\(name=(\w+), day=(\w+)\)\] okay \1, your appointment on \2 is cancelled\.$"),
     ("name", "day")),
    ("order_status", re.compile(r"^\[order_status\(number=(\d+)\)\] let me check order ([0-9 ]+) for you, one moment\.$"),
     ("number", "spoken")),
    ("book_ask_name", re.compile(r"^sure, .+ on (\w+) at ([0-9 apm]+)\. what name should i put it under\?$"),
     ("day", "time")),
    ("hours", re.compile(r"^on (\w+) we are open from .+\.$|^sorry, we are closed on (\w+)\. .+$"), ("day", "day2")),
    ("readback_phone", re.compile(r"^let me read that back: ([0-9 ]+)\. is that right\?$"), ("spoken",)),
    ("readback_booking", re.compile(r"^of course\. .+ for (\w+) on (\w+) at ([0-9 apm]+), at .+\.$"),
     ("name", "day", "time")),
    ("address", re.compile(r"^we are at .+$"), ()),
    ("greeting", re.compile(r"^hello, thanks for calling .+$"), ()),
    ("small_talk", re.compile(r"^i am doing well.+$"), ()),
    ("goodbye", re.compile(r"^you are welcome\..+$"), ()),
    ("fallback", re.compile(r"^sorry, i can only help.+$"), ()),
]
# book_name_followup answers with the same booking reply as book
_REPLY_INTENT = {"book_name_followup": "book"}


def parse_answer(text: str) -> tuple[str | None, dict[str, str]]:
    """(intent, slots) read back from an answer, or (None, {}) if it fits no reply template."""
    for intent, pat, names in _PATTERNS:
        m = pat.match(text.strip())
        if m:
            slots = {k: v for k, v in zip(names, m.groups(), strict=False) if v is not None}
            if "day2" in slots:
                slots["day"] = slots.pop("day2")
            if "spoken" in slots:
                slots["number"] = slots.pop("spoken").replace(" ", "")
            return intent, slots
    return None, {}


@dataclass
class EvalResult:
    model: str
    sampler: str
    n: int
    correct: float  # right intent and exact slot values
    exact: float  # answer identical to the reference reply
    intent: float
    seconds: float
    failures: list[dict[str, Any]] = field(default_factory=list)


def expected(e: corpus.Example) -> tuple[str, dict[str, str]]:
    intent, slots = parse_answer(e.reply)
    assert intent is not None, f"reference reply fits no template: {e.reply!r}"
    return intent, slots


def evaluate(engine: Any, examples: list[corpus.Example], keep_failures: int = 20) -> EvalResult:
    ok = ex = it = 0
    fails: list[dict[str, Any]] = []
    t0 = time.monotonic()
    for e in examples:
        ans = engine.answer(e.messages)
        want_i, want_s = expected(e)
        got_i, got_s = parse_answer(ans)
        it += got_i == want_i
        good = got_i == want_i and all(got_s.get(k) == v for k, v in want_s.items())
        # the order number is both in the tool call and spoken: both must match
        if good and "number" in want_s and got_i == "order_status":
            good = ans.count(" ".join(want_s["number"])) == 1
        ok += good
        ex += ans.strip() == e.reply
        if not good and len(fails) < keep_failures:
            fails.append({"prompt": e.messages[-1]["content"], "want": e.reply, "got": ans})
    n = max(1, len(examples))
    return EvalResult(engine.name, engine.sampler, len(examples), round(ok / n, 4), round(ex / n, 4),
                      round(it / n, 4), round(time.monotonic() - t0, 1), fails)


def heldout_examples(n: int, train_n: int = 20000, corpus_seed: int = 0, heldout_seed: int = 1) -> list[corpus.Example]:
    return corpus.heldout(n, heldout_seed, corpus.generate(train_n, corpus_seed))


def main(argv: list[str] | None = None) -> None:
    from engines.engine import open_engine

    ap = argparse.ArgumentParser(description="Evaluate an engine on held-out corpus prompts.")
    ap.add_argument("--model", default="diffusion")
    ap.add_argument("--sampler", default=None)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--out", default=None, help="write the result as JSON here")
    a = ap.parse_args(argv)
    eng = open_engine(a.model, a.sampler)
    res = evaluate(eng, heldout_examples(a.n))
    js = json.dumps(asdict(res), indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(js + "\n")
    print(json.dumps({k: v for k, v in asdict(res).items() if k != "failures"}))


if __name__ == "__main__":
    main()
