"""The turn bench's own sentence source: everyday requests and statements over many domains, with cut points.

Plain Python. Written for the bench and independent of the shop's corpus generator (`engines/shop/corpus.py`),
on which the decision model was trained: a bench drawn from the training generator would only measure how
well the model learnt its templates. The sentences are what callers say to any service line (a restaurant,
a doctor's surgery, a bank, a train company, an internet provider, a hotel, a pharmacy, a courier, a landlord,
a school office) and a few plain statements, in the recogniser's style (lower case, numbers as words).

A sentence is a *core clause* (itself a complete sentence) followed by zero or more *extensions* (a phrase or
clause that adds to it: "for next tuesday", "because the old one broke"). Inside a core or an extension, " / "
marks a place where a speaker may pause and the words so far are *not* a sentence ("i would like to / book /
a table": after "to" or "book"). The boundaries between core and extensions are places where the words so
far *are* a complete sentence: a pause there is the hard case for any end-of-turn detector, since a listener
cannot tell from the words alone that more is coming.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

# words after which an English sentence cannot end (a cut right after one is a "function" cut)
FUNCTION_WORDS = frozenset("""
a an the my your our their his her its this that these those some any to for of in on at by with from
about into onto than and but or because if so when while until after before is are was were be been am
can could would will should do does did have has had i we you they he she it me us them not no please
""".split())

_SLOTS: dict[str, tuple[str, ...]] = {
    "day": ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "tomorrow"),
    "when": ("next week", "this weekend", "next month", "tonight", "tomorrow morning", "on friday"),
    "n": ("two", "three", "four", "five", "six"),
    "time": ("seven thirty", "eight o'clock", "half past six", "noon", "nine in the morning", "quarter to five"),
    "city": ("manchester", "leeds", "bristol", "glasgow", "york", "cardiff", "brighton", "oxford"),
    "name": ("sarah", "david", "priya", "tom", "maria", "james", "aisha", "peter"),
}

# domain -> (cores, extensions)
_DOMAINS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "restaurant": (
        ("i would like to / book / a table", "could you / reserve / a table / for {n}",
         "do you / have / any tables free {day}", "we are / running / about ten minutes late",
         "can i / change / my booking", "is / the kitchen / still open",
         "i need to / cancel / our reservation"),
        ("for {n} people", "at {time}", "on {day}", "near / the window if you can",
         "because / one of us / is ill", "under the name {name}", "and / we have / a small dog with us"),
    ),
    "doctor": (
        ("i need / an appointment / with the doctor", "can i / see / a nurse {day}",
         "my / prescription / has run out", "i would like to / speak to / the practice manager",
         "the / test results / came back", "my son / has / a high temperature",
         "i missed / my appointment"),
        ("as soon as / possible", "on {day} afternoon", "for / a blood test",
         "because / the pain / is getting worse", "if / there is / anything free", "this morning",
         "and / i need / a new one"),
    ),
    "bank": (
        ("i have / lost / my card", "i want to / check / my balance", "there is / a payment / i do not recognise",
         "can you / increase / my overdraft", "i need to / transfer / some money",
         "my / online banking / is locked", "i would like to / close / my savings account"),
        ("from / my current account", "on {day}", "of about / two hundred pounds",
         "because / i forgot / the password", "to / my sister's account", "before / the end of / the month",
         "and / order / a replacement"),
    ),
    "train": (
        ("i want to / buy / a ticket / to {city}", "is / the next train / to {city} / on time",
         "my train / was cancelled", "can i / get / a refund", "what time / does / the last train / leave",
         "i left / my bag / on the train", "do i / need to / book / a seat"),
        ("for {day}", "at / about {time}", "from {city}", "this morning", "with / a railcard",
         "because / the train / was late", "for / me and / my daughter"),
    ),
    "internet": (
        ("my / internet / keeps dropping", "the router / is / flashing red", "i want to / upgrade / my package",
         "can you / send / an engineer", "my bill / is / higher than usual",
         "i am / moving / house", "the wifi / does not work / upstairs"),
        ("since {day}", "every / few minutes", "to / the faster one", "next week",
         "because / i work / from home", "in / the evenings", "and / i need / it set up again"),
    ),
    "hotel": (
        ("i would like to / book / a double room", "can we / check in / early",
         "is / breakfast / included", "we need / an extra bed", "i want to / extend / my stay",
         "the / heating / in our room / is broken", "can you / order / us a taxi"),
        ("for {n} nights", "from {day}", "at {time}", "in room / four twelve",
         "because / our flight / lands at noon", "for / the children", "to / the station"),
    ),
    "pharmacy": (
        ("is / my prescription / ready", "do you / sell / hay fever tablets",
         "can i / pick up / my mother's medicine", "i need / something / for a cough",
         "how late / are / you open {day}", "i would like to / order / a repeat prescription"),
        ("for / a five year old", "today", "this afternoon", "because / she cannot / come in",
         "under the name {name}", "before / the weekend"),
    ),
    "courier": (
        ("my parcel / has / not arrived", "can you / deliver / to my neighbour",
         "i was / out / when you called", "i want to / change / the delivery address",
         "the box / was / damaged", "where / is / my order", "can i / book / a collection"),
        ("for {day}", "at number / eleven", "yesterday", "because / i will be / at work",
         "from / the main road", "and / the contents / were broken", "in {city}"),
    ),
    "landlord": (
        ("the / boiler / has stopped working", "there is / a leak / in the kitchen",
         "i want to / give / notice", "can someone / fix / the front door",
         "the / rent / will be late", "we / need / a new key"),
        ("this week", "since / last night", "under / the sink", "because / the lock / is stuck",
         "by / a few days", "for / the back door", "and / it is / getting worse"),
    ),
    "school": (
        ("my daughter / is / off sick", "i need to / collect / my son early",
         "can i / speak to / his teacher", "i want to / pay / for the school trip",
         "she / forgot / her lunch", "is / the school / closed"),
        ("today", "at {time}", "about / his homework", "because / he has / a dentist appointment",
         "on {day}", "for / year four", "and / she will be / back on monday"),
    ),
    "statement": (
        ("i / called / yesterday", "my name / is {name}", "it / is / about my order",
         "i / have / a quick question", "we / tried / that already", "that / sounds / fine",
         "i am / not sure", "nobody / called / me back", "the weather / has / been awful"),
        ("about / the same thing", "from {city}", "and / nobody / answered", "to be honest",
         "but / it did not / help", "all week", "so / i am calling again"),
    ),
}


@dataclass(frozen=True)
class CutSentence:
    """A sentence and where the caller pauses in it."""

    domain: str
    prefix: str  # the words before the pause
    rest: str  # the words after it
    kind: str  # "complete" (the prefix is a sentence), "function" or "content" (it is not; by its last word)

    @property
    def text(self) -> str:
        return f"{self.prefix} {self.rest}"

    @property
    def prefix_complete(self) -> bool:
        return self.kind == "complete"


def _fill(template: str, rng: random.Random) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: rng.choice(_SLOTS[m.group(1)]), template)


def _chunks(text: str) -> list[str]:
    return [c.strip() for c in text.split(" / ") if c.strip()]


def sentence(rng: random.Random, domain: str | None = None) -> tuple[str, list[list[str]]]:
    """(domain, parts): parts[0] the core's chunks, then each extension's chunks (1-2 extensions, or none)."""
    name = domain or rng.choice(sorted(_DOMAINS))
    cores, exts = _DOMAINS[name]
    parts = [_chunks(_fill(rng.choice(cores), rng))]
    k = rng.choice((0, 1, 1, 1, 2))
    for ext in rng.sample(exts, k):
        parts.append(_chunks(_fill(ext, rng)))
    return name, parts


def cut_sentence(rng: random.Random, p_complete: float) -> CutSentence:
    """A sentence with one pause: after a complete clause with probability `p_complete` (when the sentence has
    an extension to follow it), else inside a core or extension, where the words so far are not a sentence."""
    complete = rng.random() < p_complete  # drawn first: the share of complete cuts is p_complete exactly
    while True:
        domain, parts = sentence(rng)
        if complete:
            if len(parts) < 2:
                continue
            at = rng.randrange(1, len(parts))  # pause before extension `at`: the prefix is a sentence
            prefix = " ".join(" ".join(p) for p in parts[:at])
            rest = " ".join(" ".join(p) for p in parts[at:])
            return CutSentence(domain, prefix, rest, "complete")
        inner = [(i, j) for i, p in enumerate(parts) for j in range(1, len(p))]
        if not inner:
            continue
        i, j = rng.choice(inner)
        prefix = " ".join([*(" ".join(p) for p in parts[:i]), " ".join(parts[i][:j])])
        rest = " ".join([" ".join(parts[i][j:]), *(" ".join(p) for p in parts[i + 1:])])
        last = prefix.split()[-1]
        return CutSentence(domain, prefix, rest, "function" if last in FUNCTION_WORDS else "content")


def domains() -> list[str]:
    return sorted(_DOMAINS)
