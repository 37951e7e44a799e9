"""A caller with a goal: which line to say next, chosen from the agent's last reply as the lab heard it.

Pure logic (no audio, no clock). A scenario lives in a fixture's ``fixture.json`` under ``scenario``
(docs/scenarios.md); every line it may say is one of the fixture's turns, so every line is synthesised
before the call and choosing one costs nothing on the line. The fixture's turns in their written order
are its fixed script (``voicelab call --no-listen``), or the lines its ``script`` names, in that order.

The choice, for the agent's words ``heard`` (the recogniser's normalised words, `voicelab.speech.text`):

1. the task is over (closing or giving-up line said): end the call;
2. the agent says the task is done (a ``done_when`` phrase) once every fact was given: the closing line;
3. the agent asks for confirmation (``confirm.asked_by``): the confirmation line;
4. the agent asks for a fact (its ``asked_by`` phrases; a fact not given yet first): that fact's next line;
5. the agent asks the caller to say it again (``repeat_asked_by``): the last line that said something again
   (a repair is not repeated: the agent missed what came before it);
6. nothing recognised: the opening line if nothing was said yet; else the repair line ("sorry?") once; a
   reply after that which still cannot be placed: the caller goes on with the next line of its plan that fits
   (``go_on``), as a person who asked once and still did not catch the answer goes on with the conversation
   rather than asking again or hanging up.

The plan is the scenario's ``script`` (or each fact's first line, then the closing). A line fits when it
states a fact not given yet, or is the closing once every fact was given; a confirmation is never volunteered.
Closing on ``go_on`` ends the call with the task ``not_done``: the caller never heard it done.

Steps 5 and 6 count as repairs; past ``max_repairs`` in a row, or past ``max_lines`` lines, or with nothing
left that fits, the caller gives up (its giving-up line). The task outcome is ``done``, ``gave_up`` or
``not_done`` (the call ended first, or the caller closed without hearing the task done).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from voicelab.speech.text import recognizer_text

Outcome = Literal["done", "not_done", "gave_up"]
OUTCOMES: tuple[str, ...] = ("done", "not_done", "gave_up")
_KEYS = {"goal", "script", "opening", "facts", "confirm", "repeat_asked_by", "repair", "done_when", "closing", "give_up",
         "max_repairs", "max_lines"}
_FACT_KEYS = {"name", "say", "asked_by"}


class ScenarioError(ValueError):
    """A scenario that cannot be played; the message is one line naming the file and the field."""


@dataclass(frozen=True)
class Fact:
    name: str
    say: tuple[str, ...]  # the lines that state it, said in turn when asked again
    asked_by: tuple[str, ...]  # phrases in the agent's words that ask for it


@dataclass(frozen=True)
class NextLine:
    line: str | None  # the line to say (a turn's text); None: nothing more to say, the call ends
    why: str  # "opening", "fact:NAME", "confirm", "repeat", "repair", "go_on", "closing", "give_up", "end"


@dataclass(frozen=True)
class State:
    said: tuple[str, ...] = ()
    given: frozenset[str] = frozenset()  # facts said at least once
    confirmed: bool = False
    repairs: int = 0  # repairs in a row
    ended: Outcome | None = None  # set once the closing or giving-up line is chosen

    @property
    def outcome(self) -> Outcome:
        return self.ended or "not_done"


@dataclass(frozen=True)
class Scenario:
    goal: str
    facts: tuple[Fact, ...]
    confirm_say: str
    confirm_asked_by: tuple[str, ...]
    repair: str
    closing: str
    give_up: str
    done_when: tuple[str, ...]
    repeat_asked_by: tuple[str, ...] = ("sorry", "say that again", "repeat that", "pardon", "did not catch")
    opening: str | None = None
    max_repairs: int = 2
    max_lines: int = 12
    script: tuple[str, ...] = ()  # the fixed-script form of the call (`--no-listen`); empty: every turn in order
    _phrases: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        norm = {"done": self.done_when, "confirm": self.confirm_asked_by, "repeat": self.repeat_asked_by,
                **{f"fact:{f.name}": f.asked_by for f in self.facts}}
        self._phrases.update({k: tuple(p for p in (recognizer_text(x) for x in v) if p) for k, v in norm.items()})

    @property
    def lines(self) -> tuple[str, ...]:
        """Every line the caller may say, each once, in a stable order."""
        out = [self.opening] if self.opening else []
        out += [s for f in self.facts for s in f.say] + [self.confirm_say, self.repair, self.closing, self.give_up]
        return tuple(dict.fromkeys(out))

    def _asks(self, key: str, words: str) -> bool:
        padded = f" {words} "
        return any(f" {p} " in padded for p in self._phrases.get(key, ()))

    def next_line(self, heard: str, state: State) -> tuple[NextLine, State]:
        """The next line for the agent's last reply (its normalised words) and the state after saying it."""
        if state.ended is not None:
            return NextLine(None, "end"), state
        if len(state.said) >= self.max_lines:
            return self._say(NextLine(self.give_up, "give_up"), state, ended="gave_up")
        words = recognizer_text(heard)
        if self._asks("done", words) and state.given >= {f.name for f in self.facts}:
            return self._say(NextLine(self.closing, "closing"), state, ended="done")
        if self._asks("confirm", words):
            return self._say(NextLine(self.confirm_say, "confirm"), state, confirmed=True)
        asked = [f for f in self.facts if self._asks(f"fact:{f.name}", words)]
        if asked:
            fact = next((f for f in asked if f.name not in state.given), asked[0])
            n = sum(1 for s in state.said if s in fact.say)
            return self._say(NextLine(fact.say[n % len(fact.say)], f"fact:{fact.name}"), state,
                             given=state.given | {fact.name})
        if state.repairs >= self.max_repairs:
            return self._say(NextLine(self.give_up, "give_up"), state, ended="gave_up")
        said = [x for x in state.said if x not in (self.repair, self.give_up)]
        if self._asks("repeat", words) and said:
            return self._say(NextLine(said[-1], "repeat"), state, repairs=state.repairs + 1)
        if not state.said and self.opening:
            return self._say(NextLine(self.opening, "opening"), state)
        if state.repairs == 0:
            return self._say(NextLine(self.repair, "repair"), state, repairs=1)
        return self._go_on(state)

    @property
    def plan(self) -> tuple[str, ...]:
        """The lines in the order the caller means to say them: the script, or each fact's first line, then the
        confirmation and the closing."""
        return self.script or (*(f.say[0] for f in self.facts), self.confirm_say, self.closing)

    def _go_on(self, state: State) -> tuple[NextLine, State]:
        """The next line of the plan after the latest one said that fits (a fact not given yet, or the closing
        once every fact was given); the giving-up line when none does."""
        plan = self.plan
        last = max((i for i, line in enumerate(plan) if line in state.said), default=-1)
        facts = {s: f.name for f in self.facts for s in f.say}
        everything = {f.name for f in self.facts}
        for line in plan[last + 1:]:
            if line in facts and facts[line] not in state.given:
                return self._say(NextLine(line, "go_on"), state, given=state.given | {facts[line]},
                                 repairs=state.repairs + 1)
            if line == self.closing and state.given >= everything:
                return self._say(NextLine(line, "go_on"), state, ended="not_done")
        return self._say(NextLine(self.give_up, "give_up"), state, ended="gave_up")

    def _say(self, choice: NextLine, state: State, **changes: Any) -> tuple[NextLine, State]:
        changes.setdefault("repairs", 0)
        return choice, replace(state, said=(*state.said, str(choice.line)), **changes)


# --- the fixture.json form ------------------------------------------------------------------------

def _strings(v: Any, where: str, file: str) -> tuple[str, ...]:
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x.strip() for x in v):
        raise ScenarioError(f"{file}: scenario.{where}: expected a non-empty string or list of strings, got {v!r}")
    return tuple(x.strip() for x in v)


def _line(v: Any, where: str, file: str, texts: Sequence[str]) -> str:
    said = _strings(v, where, file)
    if len(said) != 1:
        raise ScenarioError(f"{file}: scenario.{where}: expected one line, got {len(said)}")
    return _known(said[0], where, file, texts)


def _known(line: str, where: str, file: str, texts: Sequence[str]) -> str:
    if line not in texts:
        raise ScenarioError(f"{file}: scenario.{where}: {line!r} is no turn's text in this fixture (every line is "
                            "a turn, synthesised before the call)")
    return line


def _count(doc: dict[str, Any], key: str, default: int, file: str) -> int:
    v = doc.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 100:
        raise ScenarioError(f"{file}: scenario.{key}: expected a whole number from 0 to 100, got {v!r}")
    return v


def parse_scenario(doc: Any, turn_texts: Sequence[str], file: str = "fixture.json") -> Scenario:
    """The scenario of a fixture.json's ``scenario`` object; every line must be one of ``turn_texts``."""
    if not isinstance(doc, dict):
        raise ScenarioError(f"{file}: scenario: expected an object, got {type(doc).__name__}")
    unknown = sorted(k for k in doc if k not in _KEYS and not k.startswith("_"))
    if unknown:
        raise ScenarioError(f"{file}: scenario.{unknown[0]}: unknown field (expected one of {', '.join(sorted(_KEYS))})")
    raw_facts = doc.get("facts")
    if not isinstance(raw_facts, list) or not raw_facts:
        raise ScenarioError(f"{file}: scenario.facts: expected a non-empty list of {{name, say, asked_by}}")
    facts = []
    for i, f in enumerate(raw_facts):
        if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not f["name"].strip():
            raise ScenarioError(f"{file}: scenario.facts[{i}]: expected an object with a name, say and asked_by")
        extra = sorted(k for k in f if k not in _FACT_KEYS and not k.startswith("_"))
        if extra:
            raise ScenarioError(f"{file}: scenario.facts[{i}].{extra[0]}: unknown field (expected name, say, asked_by)")
        say = tuple(_known(s, f"facts[{i}].say", file, turn_texts) for s in _strings(f.get("say"), f"facts[{i}].say",
                                                                                      file))
        facts.append(Fact(f["name"].strip(), say, _strings(f.get("asked_by"), f"facts[{i}].asked_by", file)))
    if len({f.name for f in facts}) != len(facts):
        raise ScenarioError(f"{file}: scenario.facts: two facts share a name")
    confirm = doc.get("confirm")
    if not isinstance(confirm, dict):
        raise ScenarioError(f"{file}: scenario.confirm: expected {{say, asked_by}}")
    goal = doc.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        raise ScenarioError(f"{file}: scenario.goal: missing or empty (a sentence saying what the caller wants)")
    return Scenario(
        goal=goal.strip(), facts=tuple(facts),
        confirm_say=_line(confirm.get("say"), "confirm.say", file, turn_texts),
        confirm_asked_by=_strings(confirm.get("asked_by"), "confirm.asked_by", file),
        repair=_line(doc.get("repair"), "repair", file, turn_texts),
        closing=_line(doc.get("closing"), "closing", file, turn_texts),
        give_up=_line(doc.get("give_up"), "give_up", file, turn_texts),
        done_when=_strings(doc.get("done_when"), "done_when", file),
        repeat_asked_by=(_strings(doc["repeat_asked_by"], "repeat_asked_by", file) if "repeat_asked_by" in doc
                         else Scenario.repeat_asked_by),
        opening=None if doc.get("opening") is None else _line(doc["opening"], "opening", file, turn_texts),
        max_repairs=_count(doc, "max_repairs", 2, file), max_lines=_count(doc, "max_lines", 12, file),
        script=tuple(_known(x, "script", file, turn_texts) for x in _strings(doc["script"], "script", file))
        if "script" in doc else ())
