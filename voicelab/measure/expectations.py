"""What a fixture expects a reply to say, for any agent: phrases heard or not heard, a pattern over the words.

A fixture turn's `expect_reply` is the shop's answer (`"fallback"` or `{"intent", "slots"}`, scored by
`engines.shop.answers`) and/or these checks, in one object:

- `says_any`: a list of phrases; one of them must be heard;
- `says_all`: a list of phrases; every one must be heard;
- `matches`: a regular expression searched in the normalised heard words;
- `not_says`: a list of phrases none of which may be heard.

Words are compared as a listener hears them (`voicelab.speech.text.spoken_form`: lower case, no punctuation,
numbers as digits, "we're" as "we are"), phrases and reply alike; a tool span (`engines.tool_span`) is never spoken and
is left out. A phrase is heard when its words occur in a row, on word boundaries ("open" is not heard in
"reopened"). The words are what the lab heard the agent say (`voicelab call`: the read-back) or the bot's reply
(`voicelab run`).

Each check gives one result (`CheckResult`: check, want, passed, detail); a turn's results are stored as a JSON
array in the `expectations` column of turns.csv and turns.parquet (`to_json`, `from_json`), one JUnit test case
each. Plain Python: no pipecat, no torch, no numpy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from engines.shop.answers import parse_expect
from engines.tool_span import strip_spans
from voicelab.speech.text import spoken_form

CHECKS = ("says_any", "says_all", "matches", "not_says")
SHOP_KEYS = ("intent", "slots")
_PHRASE_LISTS = ("says_any", "says_all", "not_says")


class ExpectationError(ValueError):
    """An expect_reply that cannot be scored; the message names the key and what is wrong, in one line."""


@dataclass(frozen=True)
class Expectations:
    """The checks of one turn (phrases as written in the fixture; normalised when compared)."""

    says_any: tuple[str, ...] = ()
    says_all: tuple[str, ...] = ()
    matches: str | None = None
    not_says: tuple[str, ...] = ()

    @property
    def checks(self) -> tuple[str, ...]:
        """The checks this turn has, in CHECKS order."""
        return tuple(c for c in CHECKS if getattr(self, c))


@dataclass(frozen=True)
class CheckResult:
    """One check against one reply: what was wanted, whether it passed, and what was heard, in a few words."""

    check: str
    want: list[str] | str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def normalise(text: str) -> str:
    """Heard or written words in the comparison form, as a listener hears them (`spoken_form`: "we're" is
    "we are"); a tool span is dropped (it is never spoken)."""
    return spoken_form(strip_spans(text, " "))


def problems(expect_reply: Any) -> list[str]:
    """What is wrong with an expect_reply, one line each ('says_any: an empty list'); [] when it is fine."""
    if expect_reply is None:
        return []
    if isinstance(expect_reply, str):
        return _shop_problems(expect_reply, "")
    if not isinstance(expect_reply, Mapping):
        return [f"expected 'fallback' or an object, got {type(expect_reply).__name__}"]
    out = [f"{k}: unknown key (expected {', '.join((*SHOP_KEYS, *CHECKS))})" for k in sorted(expect_reply)
           if k not in SHOP_KEYS and k not in CHECKS and not str(k).startswith("_")]
    if not any(k in expect_reply for k in (*SHOP_KEYS, *CHECKS)):
        return out or [f"expected the shop's intent and slots and/or any of {', '.join(CHECKS)}"]
    if any(k in expect_reply for k in SHOP_KEYS):
        out += _shop_problems({k: expect_reply[k] for k in SHOP_KEYS if k in expect_reply}, "")
    for key in _PHRASE_LISTS:
        if key in expect_reply:
            out += [f"{key}: {p}" for p in _phrase_list_problems(expect_reply[key])]
    if "matches" in expect_reply:
        pattern = expect_reply["matches"]
        if not isinstance(pattern, str) or not pattern:
            out.append(f"matches: expected a regular expression (a non-empty string), got {pattern!r}")
        else:
            try:
                re.compile(pattern)
            except re.error as e:
                out.append(f"matches: {pattern!r} does not compile: {e}")
    return out


def _shop_problems(expect: Any, prefix: str) -> list[str]:
    try:
        parse_expect(expect)
    except ValueError as e:
        return [f"{prefix}{e}"]
    return []


def _phrase_list_problems(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        return [f"expected a list of phrases (strings), got {value!r}"]
    if not value:
        return ["an empty list (give at least one phrase, or leave the key out)"]
    return [f"{p!r} has no words to hear" for p in value if not normalise(p)]


def shop_expect(expect_reply: Any) -> str | dict[str, Any] | None:
    """The shop's part of an expect_reply ('fallback' or {intent, slots}), None when it has none."""
    if isinstance(expect_reply, str):
        return expect_reply
    if isinstance(expect_reply, Mapping) and any(k in expect_reply for k in SHOP_KEYS):
        return {k: expect_reply[k] for k in SHOP_KEYS if k in expect_reply}
    return None


def parse(expect_reply: Any) -> Expectations | None:
    """The checks of an expect_reply, None when it has none; ExpectationError (the first problem) when bad."""
    found = problems(expect_reply)
    if found:
        raise ExpectationError(found[0])
    if not isinstance(expect_reply, Mapping) or not any(k in expect_reply for k in CHECKS):
        return None
    return Expectations(says_any=tuple(expect_reply.get("says_any") or ()),
                        says_all=tuple(expect_reply.get("says_all") or ()),
                        matches=expect_reply.get("matches"), not_says=tuple(expect_reply.get("not_says") or ()))


def says(words: str, phrase: str) -> bool:
    """Whether normalised `words` hold the phrase's words in a row, on word boundaries."""
    p = normalise(phrase)
    return bool(p) and f" {p} " in f" {words} "


def check(heard: str, exp: Expectations) -> list[CheckResult]:
    """Every check of `exp` against the heard words (raw or normalised: they are normalised here)."""
    words = normalise(heard)
    out = []
    if exp.says_any:
        hit = [p for p in exp.says_any if says(words, p)]
        out.append(CheckResult("says_any", list(exp.says_any), bool(hit),
                               f"heard {hit[0]!r}" if hit else f"heard none of {_quoted(exp.says_any)}"))
    if exp.says_all:
        missing = [p for p in exp.says_all if not says(words, p)]
        out.append(CheckResult("says_all", list(exp.says_all), not missing,
                               f"missing {_quoted(missing)}" if missing else "heard every phrase"))
    if exp.matches:
        m = re.search(exp.matches, words)
        out.append(CheckResult("matches", exp.matches, m is not None,
                               f"matched {m.group(0)!r}" if m is not None else "no match"))
    if exp.not_says:
        heard_ = [p for p in exp.not_says if says(words, p)]
        out.append(CheckResult("not_says", list(exp.not_says), not heard_,
                               f"heard {_quoted(heard_)}" if heard_ else "heard none"))
    return out


def _quoted(phrases: Sequence[str]) -> str:
    return ", ".join(repr(p) for p in phrases)


def score(heard: str | None, expect_reply: Any) -> str | None:
    """The turn's `expectations` cell: the JSON array of its results (nothing heard counts as ""), or None when
    the turn has no checks."""
    exp = parse(expect_reply)
    if exp is None:
        return None
    return to_json(check(heard or "", exp))


def to_json(results: Sequence[CheckResult]) -> str:
    return json.dumps([r.to_dict() for r in results], ensure_ascii=False, separators=(",", ":"))


def from_json(cell: str | None) -> list[dict[str, Any]]:
    """The results of an `expectations` cell ([] for none)."""
    return list(json.loads(cell)) if cell else []


def tally(cell: str | None) -> tuple[int, int]:
    """(passed, checked) of an `expectations` cell."""
    results = from_json(cell)
    return sum(1 for r in results if r.get("passed")), len(results)


def cell_text(cell: str | None) -> str:
    """A console cell: '2/3 failed not_says' (passed/checked, then the failed checks), '' for a turn without
    checks."""
    results = from_json(cell)
    if not results:
        return ""
    failed = [str(r["check"]) for r in results if not r.get("passed")]
    head = f"{len(results) - len(failed)}/{len(results)}"
    return f"{head} failed {', '.join(failed)}" if failed else f"{head} ok"
