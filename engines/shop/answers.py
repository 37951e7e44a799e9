"""Is a reply right, and is it even a well-formed reply? Answer scoring for the bike shop's engines.

A reply is *coherent* when it is one response of the business's grammar (`engines.shop.corpus.REPLIES`,
the templates the corpus generator writes) with consistent slots: the hours quoted are the
shop's hours for that day, a booking is on a day the workshop is open at one of its slots, the
order number spoken is the one in the tool call. It is *correct* when it is coherent and has the
expected intent and exact slot values; a caller who should get the fallback may also get a short
clarifying question, never a tool call.

Also here, for the pipeline's "tool calls need a reason" rule: whether a caller's words support a
tool call (`tool_call_supported`) and the engine's own confidence on the tool span of a final
snapshot (`tool_span_confidence`). Plain Python, no torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engines.shop import business as B
from engines.shop import corpus
from engines.snapshot import Snapshot
from engines.tool_span import OPEN, parse_span, span_end, span_name

# a caller who should get the fallback may get either of these (never a tool call)
NON_ANSWERS = frozenset({"fallback", "clarify"})
# corpus intents that answer with another intent's reply
_REPLY_INTENT = {"book_name_followup": "book"}


@dataclass(frozen=True)
class Expect:
    """What a reply should be: an intent with exact slot values, or any non-answer (fallback)."""

    intent: str  # a corpus intent, or "fallback" (fallback or clarifying question accepted)
    slots: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AnswerScore:
    correct: bool  # coherent, right intent, exact slot values
    coherent: bool  # a well-formed reply of the grammar with consistent slots
    intent: str | None  # intent read from the reply (None: fits no template)
    slots: dict[str, str]  # slot values read from the reply
    reason: str  # "ok" or what is wrong, in a few words
    tool: str | None = None  # tool the reply calls (also for a malformed tool span)
    wrong_tool_call: bool = False  # a tool call where none (or another one) was expected
    wrong_value: bool = False  # the expected tool called with a value the caller did not say (a wrong digit, name)


@dataclass(frozen=True)
class ToolSpan:
    """The tool span a reply starts with, as the scorer reads it (`engines.tool_span` is the grammar)."""

    name: str  # the word the span opens with, also for a malformed span
    args: dict[str, str]  # empty unless the span parses
    well_formed: bool  # parses, and every argument has a value (each shop tool takes some)


def parse_expect(expect: str | Mapping[str, Any] | Expect) -> Expect:
    """`"fallback"` or `{"intent": ..., "slots": {...}}` as an Expect; ValueError saying what is wrong."""
    if isinstance(expect, Expect):
        return expect
    if isinstance(expect, str):
        if expect not in NON_ANSWERS:
            raise ValueError(f"expect must be 'fallback' or an object with intent and slots, not {expect!r}")
        return Expect("fallback")
    if not isinstance(expect, Mapping) or not isinstance(expect.get("intent"), str):
        raise ValueError(f"expect object needs a string 'intent', got {expect!r}")
    intent = _REPLY_INTENT.get(expect["intent"], expect["intent"])
    if intent not in corpus.INTENTS:
        raise ValueError(f"unknown intent {intent!r} (choose from {', '.join(corpus.INTENTS)})")
    slots = expect.get("slots", {})
    if not isinstance(slots, Mapping) or not all(isinstance(v, str) for v in slots.values()):
        raise ValueError(f"expect slots must map names to strings, got {slots!r}")
    return Expect("fallback" if intent in NON_ANSWERS else intent, dict(slots))


def tool_span(reply: str) -> ToolSpan | None:
    """The tool span a reply starts with; one that does not parse (or never closes) is kept as malformed."""
    text = reply.lstrip()
    name = span_name(text) if text.startswith(OPEN) else None
    if name is None:
        return None
    end = span_end(text, 0)
    parsed = parse_span(text[:end]) if end > 0 else None
    if parsed is None:
        return ToolSpan(name, {}, False)
    name, args = parsed
    # every shop tool takes arguments; a value holding "=" is two arguments that lost their comma
    return ToolSpan(name, args, bool(args) and all(v and "=" not in v for v in args.values()))


def coherence_problem(p: corpus.ParsedReply) -> str | None:
    """Why a parsed reply's slots contradict the business's facts, or None if they agree."""
    s = p.slots
    day = s.get("day")
    if p.key == "hours_open":
        h = B.HOURS[day]
        if h is None:
            return f"quotes opening hours for {day}, when the shop is closed"
        if (s["open"], s["close"]) != h:
            return f"quotes {s['open']} to {s['close']} for {day}; the shop is open {h[0]} to {h[1]}"
    if p.key == "hours_closed" and B.HOURS[day] is not None:
        return f"says the shop is closed on {day}"
    if p.key == "hours_week" and s != corpus.week_slots():
        return "quotes a week that is not the shop's"
    if "time" in s and p.intent != "hours":
        if s["time"] not in B.TIMES:
            return f"{s['time']} is not one of the workshop's slots"
        if B.HOURS[day] is None:
            return f"an appointment on {day}, when the shop is closed"
    if p.key == "order_status":
        spoken = s["spoken"].replace(" ", "")
        if spoken != s["number"]:
            return f"tool call for order {s['number']} but says order {spoken}"
        if len(s["number"]) != 5:
            return f"order number {s['number']} is not 5 digits"
    return None


def _slots(p: corpus.ParsedReply) -> dict[str, str]:
    out = dict(p.slots)
    spoken = out.pop("spoken", None)
    if spoken is not None and "number" not in out:
        out["number"] = spoken.replace(" ", "")
    return out


def score_reply(reply_text: str, expect: str | Mapping[str, Any] | Expect) -> AnswerScore:
    """Score one reply against what was expected (see parse_expect)."""
    want = parse_expect(expect)
    span = tool_span(reply_text)
    tool = span.name if span else None
    wrong_tool = tool is not None and (want.intent not in corpus.TOOLS or tool != want.intent)
    p = corpus.parse_reply(reply_text)
    if p is None:
        why = "malformed tool span" if span and not span.well_formed else "fits no reply template"
        return AnswerScore(False, False, None, {}, why, tool, wrong_tool)
    slots = {} if p.key == "hours_week" else _slots(p)
    problem = coherence_problem(p)
    if problem:
        return AnswerScore(False, False, p.intent, slots, problem, tool, wrong_tool)
    if want.intent == "fallback":
        ok = p.intent in NON_ANSWERS
        return AnswerScore(ok, True, p.intent, slots, "ok" if ok else f"answered {p.intent}, expected fallback",
                           tool, wrong_tool)
    if p.intent != want.intent:
        return AnswerScore(False, True, p.intent, slots, f"answered {p.intent}, expected {want.intent}", tool,
                           wrong_tool)
    for k, v in want.slots.items():
        if slots.get(k) != v:
            return AnswerScore(False, True, p.intent, slots, f"wrong {k}: {slots.get(k)!r}, expected {v!r}", tool,
                               wrong_tool, wrong_value=tool is not None and not wrong_tool)
    return AnswerScore(True, True, p.intent, slots, "ok", tool, wrong_tool)


# words that ask for each tool; a tool call whose caller said none of them has no reason
_TOOL_CUES: dict[str, tuple[str, ...]] = {
    "cancel": ("cancel", "cancelled", "call off", "cannot make it", "can't make it", "cant make it"),
    "reschedule": ("reschedule", "move", "change", "switch", "push", "another day", "different day"),
    "book": ("book", "booking", "appointment", "get", "need", "want", "have time", "name", "put it under", "it is"),
    "order_status": ("order",),
}
# the arguments whose value the caller must have said
_TOOL_ARGS: dict[str, tuple[str, ...]] = {
    "cancel": ("day", "name"), "reschedule": ("day", "time", "name"), "book": ("day", "time", "name"),
    "order_status": ("number",),
}


def _words(text: str) -> str:
    return " " + " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split()) + " "


def tool_call_supported(user_text: str, tool_name: str, args: Mapping[str, str],
                        context: Sequence[str] = ()) -> bool | None:
    """Do the caller's words ask for this tool call? None for a tool this helper does not know.

    The last utterance must contain a cue word for the tool ("cancel", "move", ...), and every
    argument value the tool needs must have been said, in it or in the caller's earlier turns
    (`context`), e.g. a cancel needs the day and the name. Digits count however they are spaced.
    """
    if tool_name not in _TOOL_CUES:
        return None
    last = _words(user_text)
    if not any(f" {c} " in last for c in _TOOL_CUES[tool_name]):
        return False
    said = last + " ".join(_words(t) for t in context)
    for k in _TOOL_ARGS[tool_name]:
        v = args.get(k)
        if not v:
            return False
        if k == "number":
            if v not in said.replace(" ", ""):
                return False
        elif f" {' '.join(v.lower().split())} " not in said:
            return False
    return True


def tool_span_confidence(snap: Snapshot) -> float | None:
    """The engine's least confident token in the reply's leading tool span (None: no tool span).

    Positions whose text overlaps the span from "[" to the first "]" count, so a tool call the
    sampler committed on a guess shows up as a low value.
    """
    n = snap.prefix_len
    text = "".join(snap.pieces[:n])
    start = text.find(OPEN)
    if start < 0 or text[:start].strip():
        return None
    end = span_end(text, start)
    end = len(text) if end < 0 else end
    confs, pos = [], 0
    for i in range(n):
        a, b = pos, pos + len(snap.pieces[i])
        pos = b
        if b > start and a < end:
            confs.append(snap.confidence[i])
    return min(confs) if confs else None
