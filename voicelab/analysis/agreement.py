"""Do two runs score a fixture's expectations alike, turn by turn?

`voicelab compare` pairs two runs' turns by (fixture, turn, repetition), as it pairs figures. A turn's verdict is
what its expectations say of the reply: the shop's answer (`answer_correct`) where the fixture gives one, and
every check of the words (`says_any`, `says_all`, `matches`, `not_says`: the `expectations` column) where it
gives any; the turn passes when all of them pass. Two runs agree on a turn when both scored it and their
verdicts are the same. In process (`voicelab run`) the words are the bot's text; over the line
(`voicelab call`) they are what the lab read back from the agent's audio, so the share of agreeing turns says
how far a line run's scores can stand in for the in-process ones (docs/phone-line.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from voicelab.analysis.pairing import Key, turn_keys


@dataclass(frozen=True)
class ExpectationVerdict:
    passed: bool
    words: str  # what the scores were made on (the bot's text, or the read-back words)


@dataclass(frozen=True)
class Disagreement:
    key: Key
    a: ExpectationVerdict
    b: ExpectationVerdict


@dataclass(frozen=True)
class Agreement:
    paired: int  # turns both runs scored
    agree: int
    only_a: int  # turns one run scored and the other did not (no reply heard, say)
    only_b: int
    disagreements: tuple[Disagreement, ...]

    @property
    def share(self) -> float | None:
        return self.agree / self.paired if self.paired else None

    def line(self) -> str:
        """The one line compare prints."""
        if not self.paired:
            return "expectations: no turn scored in both runs"
        unpaired = f"; scored in one run only: {self.only_a} (A), {self.only_b} (B)" if self.only_a or self.only_b \
            else ""
        return (f"expectations: the two runs agree on {self.agree} of {self.paired} turns scored in both "
                f"({100 * self.agree / self.paired:.0f} %){unpaired}")


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def verdict(row: dict[str, Any]) -> ExpectationVerdict | None:
    """A turn's verdict from its row (answer_correct, expectations, answer_text), None when nothing scored it."""
    parts: list[bool] = []
    if not _missing(row.get("answer_correct")):
        parts.append(bool(row["answer_correct"]))
    cell = row.get("expectations")
    if not _missing(cell) and cell:
        parts += [bool(r.get("passed")) for r in json.loads(cell)]
    if not parts:
        return None
    words = row.get("answer_text")
    return ExpectationVerdict(all(parts), "" if _missing(words) else str(words))


def verdicts(rows: Sequence[dict[str, Any]], fixture_of: Callable[[str], str]) -> dict[Key, ExpectationVerdict]:
    """Every scored turn's verdict by its pairing key (`voicelab.analysis.pairing`); backchannels are never
    scored."""
    answered = [r for r in rows if r.get("expect") != "no_interrupt"]
    keys = turn_keys(((str(r["call_id"]), int(r["turn"])) for r in answered), fixture_of)
    return {k: v for k, r in zip(keys, answered, strict=True) if (v := verdict(r)) is not None}


def agreement(a: dict[Key, ExpectationVerdict], b: dict[Key, ExpectationVerdict]) -> Agreement:
    both = sorted(a.keys() & b.keys())
    differ = tuple(Disagreement(k, a[k], b[k]) for k in both if a[k].passed != b[k].passed)
    return Agreement(paired=len(both), agree=len(both) - len(differ), only_a=len(a.keys() - b.keys()),
                     only_b=len(b.keys() - a.keys()), disagreements=differ)
