"""Many ways a caller phrases the bike shop's slot requests, built from parts.

The corpus's fixed templates (engines/shop/corpus.py) teach the tiny models one or two word orders per
request, and a model that has only seen "this is {name} ... cancel my {day} appointment" learns
"cancel" plus a day means a tool call and fills any slot it did not hear. These builders compose a
request from an opener, a self-introduction placed first, last or nowhere, a verb phrase and its
slot phrases in either order, so that the words, not their positions, carry the slots.

Each builder can leave one required slot out (`omit`): the caller simply did not say it, and the
shop must ask instead of guessing (corpus.clarify). Plain Python, no torch.
"""

from __future__ import annotations

import random

_OPEN = ("", "", "", "yes ", "um ", "hi ", "hello ", "so ", "right ", "good morning ", "uh ")
_ASK = ("can you", "could you", "would you", "please", "can you please", "i need you to", "i want you to",
        "i would like you to")
# "i am {name}" and "it is for {name}" are everyday English introductions a caller's name follows ("i'm tom",
# "it's for olivia"): without them the name-slot rule (engines/local/open_values.py) has no slot there to learn
_INTRO_FIRST = ("this is {name}", "my name is {name}", "{name} here", "hi it is {name}", "hello this is {name}",
                "it is {name} calling", "i am {name}")
_INTRO_LAST = ("my name is {name}", "the name is {name}", "it is under {name}", "name is {name}", "this is {name}",
               "it is {name}", "under the name {name}", "for {name}", "it is for {name}", "i am {name}")
_DAY = ("on {day}", "on {day}", "{day}", "this {day}", "next {day}", "for {day}")
_TIME = ("at {time}", "at {time}", "{time}", "around {time}", "for {time}")


def _place_intro(r: random.Random, core: str, name: str | None) -> str:
    """The caller says who they are first, last, or (name None or empty) not at all."""
    if not name:
        return core
    if r.random() < 0.5:
        return f"{r.choice(_INTRO_FIRST).format(name=name)} {core}"
    return f"{core} {r.choice(_INTRO_LAST).format(name=name)}"


def _when(r: random.Random, day: str | None, time: str | None) -> str:
    parts = [r.choice(_DAY).format(day=day)] if day else []
    if time:
        t = r.choice(_TIME).format(time=time)
        parts = [t] + parts if r.random() < 0.3 else parts + [t]
    return " ".join(parts)


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def cancel_request(r: random.Random, name: str, day: str, omit: str | None = None) -> str:
    thing = r.choice(("my appointment", "my booking", "the appointment", "my service appointment",
                      "my repair appointment", "the booking"))
    d = "" if omit == "day" else r.choice(_DAY).format(day=day)
    core = r.choice((
        lambda: _join(r.choice(_ASK), r.choice(("cancel", "cancel", "remove", "delete")), thing, d),
        lambda: _join("i need to cancel", thing, d),
        lambda: _join("i can not come", d, "so please cancel", thing),
        lambda: _join("i will not make it", d, r.choice(_ASK), "cancel it"),
        lambda: _join("cancel", thing, d, "please"),
        lambda: _join("i want to cancel", thing, d),
    ))()
    return r.choice(_OPEN) + _place_intro(r, core, None if omit == "name" else name)


def reschedule_request(r: random.Random, name: str, day: str, time: str, omit: str | None = None) -> str:
    thing = r.choice(("my appointment", "my booking", "the appointment", "it", "my service"))
    when = _when(r, None if omit == "day" else day, None if omit == "time" else time)
    core = r.choice((
        lambda: _join(r.choice(_ASK), r.choice(("move", "change", "reschedule", "push", "switch")), thing, "to",
                      when),
        lambda: _join("i need to move", thing, "to", when),
        lambda: _join("i can not make my appointment", r.choice(_ASK), "move it to", when),
        lambda: _join("is it possible to change", thing, "to", when),
        lambda: _join("i would like to reschedule to", when),
    ))()
    return r.choice(_OPEN) + _place_intro(r, core, None if omit == "name" else name)


def book_request(r: random.Random, service: str, day: str, time: str, name: str, omit: str | None = None) -> str:
    when = _when(r, None if omit == "day" else day, None if omit == "time" else time)
    core = r.choice((
        lambda: _join(r.choice(("i would like to book", "can i book", "i need", "i want", "could i get",
                                "can you fit me in for", "i would like to come in for", "do you have room for",
                                "is there space for", "i was hoping to get")), service, when),
        lambda: _join("can i come in", when, "for", service),
        lambda: _join(service, when, "please"),
    ))()
    return r.choice(_OPEN) + _place_intro(r, core, None if omit == "name" else name)


def hours_request(r: random.Random, day: str, omit: str | None = None) -> str:
    d = "" if omit == "day" else r.choice(_DAY[:4]).format(day=day)
    return r.choice(_OPEN) + r.choice((
        lambda: _join("do you open", d),
        lambda: _join("are you guys open", d),
        lambda: _join("what are the hours", d),
        lambda: _join("till what time are you open", d),
        lambda: _join("how long are you open", d),
        lambda: _join("what time do you shut", d),
        lambda: _join("when can i drop by", d),
        lambda: _join("what time do you close", d),
    ))()


def order_request(r: random.Random, spoken: str | None) -> str:
    """`spoken` None: the caller asks about an order without giving its number."""
    n = f"number {spoken}" if spoken and r.random() < 0.4 else (spoken or "")
    return r.choice(_OPEN) + r.choice((
        lambda: _join("can you look up order", n),
        lambda: _join("i am checking on my order", n),
        lambda: _join("is my order", n, "ready"),
        lambda: _join("did my order", n, "come in"),
        lambda: _join("any update on order", n),
        lambda: _join("i ordered a part the order is", n) if n else "i ordered a part is it in yet",
    ))()
