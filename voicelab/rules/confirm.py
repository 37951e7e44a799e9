"""Spoken confirmation of an unsure destructive tool call.

When the caller's words only partly ask for a cancel or reschedule (`voicelab.rules.tool_reason.judge` says
`asked`), the call is not executed: the bot says `question(...)` instead of the rest of its reply ("cancel your
monday appointment, right?") and the call waits for the caller's next turn. `answer(...)` judges that turn: a
plain yes executes the call (and the bot says `confirmed_reply(...)`, the shop's own words for the done
action), a no or anything else refuses it and the turn is answered normally. `Confirmations` keeps one call's
waiting and confirmed calls.

The yes/no judgement is a word rule, not the decision model: `engines.decision.model` answers only `turn_complete`
and `interruption`, nothing that says whether words agree. The rule is strict on purpose (a yes destroys a
booking): every word of the turn must be an agreement ("yes", "that is right", "please do" ...), politeness or
filler, or a word of the question itself ("yes cancel my monday appointment"); one negation anywhere makes it a
no; a yes with a new request in it ("yes and when do you close") is `other` and refuses the call.

Plain Python, no pipecat.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from engines.shop.corpus import REPLIES, render
from voicelab.gate import ToolCall

Answer = Literal["yes", "no", "other"]

# phrases that agree, longest first when matched (a word sequence each)
_AGREE = tuple(tuple(p.split()) for p in (
    "yes", "yeah", "yep", "yup", "yea", "ya", "sure", "right", "correct", "exactly", "ok", "okay", "alright",
    "all right", "absolutely", "definitely", "certainly", "indeed", "affirmative", "of course", "uh huh",
    "mm hmm", "mhm", "please do", "go ahead", "do it", "do that", "that is right", "that is correct", "it is",
    "sounds good", "you got it", "sure thing", "that works",
))
# words that carry no answer of their own; the caller may say them around a yes
_FILLER = tuple(tuple(p.split()) for p in (
    "oh", "um", "uh", "er", "ah", "well", "so", "then", "just", "please", "thanks", "thank you", "very much",
    "that is", "it", "that", "this", "my", "me", "the", "a",
))
_NO = frozenset({"no", "nope", "nah", "not", "never", "wrong", "incorrect", "wait", "stop", "negative"})
_CONTRACTIONS: dict[str, tuple[str, ...]] = {
    "that's": ("that", "is"), "thats": ("that", "is"), "it's": ("it", "is"), "don't": ("do", "not"),
    "dont": ("do", "not"), "didn't": ("did", "not"), "isn't": ("is", "not"), "can't": ("can", "not"),
    "won't": ("will", "not"), "shouldn't": ("should", "not"),
}


def words(text: str) -> list[str]:
    """Lower-case words, punctuation and hyphens gone ("mm-hmm" -> mm hmm, "p.m." -> pm), contractions split."""
    t = re.sub(r"\b([ap])\.\s?m\b\.?", r"\1m", text.lower())
    t = re.sub(r"[^a-z0-9' ]+", " ", t.replace("-", " "))
    out: list[str] = []
    for w in t.split():
        w = w.strip("'")
        if w:
            out += _CONTRACTIONS.get(w, (w,))
    return out


def question(name: str, args: Mapping[str, str]) -> str:
    """What the bot asks before running an unsure call: built from the call, ends in "right?"."""
    day, time = args.get("day"), args.get("time")
    if name == "cancel":
        return f"cancel your {day} appointment, right?" if day else "cancel your appointment, right?"
    if name == "reschedule":
        when = " at ".join(v for v in (day, time) if v)
        return f"move your appointment to {when}, right?" if when else "move your appointment, right?"
    said = ", ".join(f"{k} {v}" for k, v in args.items() if k != "name")
    return f"{name} {said}, right?" if said else f"{name}, right?"


def confirmed_reply(call: ToolCall) -> str:
    """The reply after the caller's yes: the call's own span, then the shop's words for that action done (the
    reply grammar of `engines.shop.corpus`, which the engines were trained to say after such a span)."""
    spoken = "okay, that is done."  # a tool without a reply template (or with its slots missing)
    if call.name in REPLIES:
        try:
            spoken = render(call.name, **call.args)
        except (KeyError, IndexError):
            pass
        else:
            spoken = spoken.split("]", 1)[1].strip() if spoken.startswith("[") else spoken
    return f"{call.raw} {spoken}"


def _consume(ws: list[str], phrases: tuple[tuple[str, ...], ...], i: int) -> int:
    """Length of the longest phrase matching at word i (0: none)."""
    return max((len(p) for p in phrases if tuple(ws[i:i + len(p)]) == p), default=0)


def answer(text: str, asked: str) -> Answer:
    """The caller's reply to the question `asked`: yes, no, or other (another request, or words the rule does
    not know). A yes must agree at least once and say nothing else than agreement, filler or the question's
    own words; any negation makes it a no."""
    ws = words(text)
    if any(w in _NO for w in ws):
        return "no"
    own = frozenset(words(asked))
    agreed, i = False, 0
    while i < len(ws):
        n = _consume(ws, _AGREE, i)
        if n:
            agreed, i = True, i + n
            continue
        n = _consume(ws, _FILLER, i) or (1 if ws[i] in own else 0)
        if not n:
            return "other"
        i += n
    return "yes" if agreed else "other"


@dataclass(frozen=True)
class Asked:
    """A destructive call waiting for the caller's yes."""

    call: ToolCall
    turn: int  # the reply turn that asked
    confidence: float | None  # the engine's commit-time confidence on the span, as when it was asked
    question: str
    reply: str  # what the bot says after a yes (`confirmed_reply`)


@dataclass(frozen=True)
class Resolved:
    """What became of an asked call at the caller's next turn (or at the call's end)."""

    asked: Asked
    outcome: Literal["confirmed", "refused"]  # confirmed: the caller said yes, the call runs with the reply
    reason: str


_CUT_OFF = "confirmed, but the reply that runs it was cut off before it"


@dataclass
class Confirmations:
    """One call's asked calls: at most one waits for an answer, a confirmed one waits to be run."""

    waiting: Asked | None = None
    _confirmed: list[Resolved] = field(default_factory=list)

    def ask(self, asked: Asked) -> bool:
        """Wait for the caller's answer to `asked`; False when another question already waits (one at a time)."""
        if self.waiting is not None:
            return False
        self.waiting = asked
        return True

    def resolve(self, said: str) -> list[Resolved]:
        """The caller's next turn says `said`: the waiting call is confirmed (yes) or refused. A confirmed call
        that was never run (its reply was cut off before it) is refused first."""
        out = [Resolved(r.asked, "refused", _CUT_OFF) for r in self._confirmed]
        self._confirmed = []
        a, self.waiting = self.waiting, None
        if a is None:
            return out
        heard = " ".join(said.split()) or "(nothing)"
        verdict = answer(said, a.question)
        if verdict == "yes":
            yes = Resolved(a, "confirmed", f"the caller said {heard!r} to {a.question!r}")
            self._confirmed.append(yes)
            return [*out, yes]
        why = "said no" if verdict == "no" else "did not say yes"
        return [*out, Resolved(a, "refused", f"the caller {why} to {a.question!r}: {heard!r}")]

    def take(self, call: ToolCall) -> Resolved | None:
        """The confirmation of the call with this name and arguments, now being run (once); None: not a
        confirmed call."""
        for i, r in enumerate(self._confirmed):
            if r.asked.call.name == call.name and r.asked.call.args == call.args:
                return self._confirmed.pop(i)
        return None

    def close(self) -> list[Resolved]:
        """The call is over: every asked call not run is refused."""
        out = [Resolved(r.asked, "refused", _CUT_OFF) for r in self._confirmed]
        if self.waiting is not None:
            out.append(Resolved(self.waiting, "refused", "the call ended before the caller answered"))
        self._confirmed, self.waiting = [], None
        return out
