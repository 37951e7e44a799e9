"""Synthetic call-centre corpus for Riverside Bike Works (engines/business.py).

Each example is a chat (earlier turns as context, then the caller's last utterance) and the
agent's reply. Caller text looks like speech recognizer output (lowercase, no punctuation,
fillers); agent replies are deterministic given the intent and slots, so evaluation can demand
exact slot values. Tool calls are written as a bracketed span, e.g.
``[book(day=friday, time=10 am, name=anna, service=a tune up)]``; the gate never speaks them.

    python -m engines.corpus --n 20000 --out corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from engines import business as B

INTENTS = (
    "greeting", "hours", "address", "book", "book_ask_name", "book_name_followup", "reschedule",
    "cancel", "order_status", "readback_phone", "readback_booking", "small_talk", "goodbye", "fallback",
)


@dataclass
class Example:
    intent: str
    messages: list[dict[str, str]]  # role/content; the last one is the caller's
    reply: str
    slots: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def _filler(r: random.Random) -> str:
    return r.choice(["", "", "", "hi ", "hello ", "um ", "yeah hi ", "okay ", "hey "])


def _digits(r: random.Random, n: int) -> str:
    return "".join(r.choice("0123456789") for _ in range(n))


def _spell(d: str) -> str:
    return " ".join(d)


def _hours_reply(day: str) -> str:
    h = B.HOURS[day]
    if h is None:
        return f"sorry, we are closed on {day}. we open again on monday at 9 am."
    return f"on {day} we are open from {h[0]} to {h[1]}."


def greeting(r: random.Random) -> Example:
    u = r.choice(["hello", "hi there", "hello is this the bike shop", "hi is this riverside bike works",
                  "good morning", "hey"])
    return Example("greeting", [{"role": "user", "content": u}],
                   f"hello, thanks for calling {B.SHOP.lower()}. how can i help you today?")


def hours(r: random.Random) -> Example:
    day = r.choice(B.DAYS)
    u = _filler(r) + r.choice([
        f"what time do you open on {day}", f"are you open on {day}", f"what are your hours on {day}",
        f"when do you close on {day}", f"what time are you open {day}", f"can i come by on {day}",
        f"how late are you open on {day}", f"what are your opening hours for {day}",
    ])
    return Example("hours", [{"role": "user", "content": u}], _hours_reply(day), {"day": day})


def address(r: random.Random) -> Example:
    u = _filler(r) + r.choice([
        "where are you located", "what is your address", "how do i find the shop", "where is the shop",
        "can you give me directions", "where exactly are you", "what street are you on",
    ])
    return Example("address", [{"role": "user", "content": u}],
                   f"we are at {B.ADDRESS.lower()} in {B.CITY.lower()}, {B.LANDMARK}.")


def _booking_slots(r: random.Random) -> tuple[str, str, str, str]:
    return r.choice(B.DAYS[:6]), r.choice(B.TIMES), r.choice(B.NAMES), r.choice(B.SERVICES)


def _book_reply(day: str, time: str, name: str, service: str) -> str:
    return (f"[book(day={day}, time={time}, name={name})] great {name}, "
            f"{service} is booked for {day} at {time}.")


def book(r: random.Random) -> Example:
    day, time, name, service = _booking_slots(r)
    u = _filler(r) + r.choice([
        f"i would like to book {service} on {day} at {time} my name is {name}",
        f"can i book {service} for {day} at {time} the name is {name}",
        f"this is {name} i need {service} on {day} at {time}",
        f"i want {service} on {day} at {time} please name {name}",
        f"could you book me in for {service} {day} at {time} it is {name}",
        f"my name is {name} can i get {service} on {day} at {time}",
    ])
    return Example("book", [{"role": "user", "content": u}], _book_reply(day, time, name, service),
                   {"day": day, "time": time, "name": name})


def _ask_name_turn(r: random.Random, day: str, time: str, service: str) -> tuple[str, str]:
    u = _filler(r) + r.choice([
        f"i would like to book {service} on {day} at {time}",
        f"can i get {service} on {day} at {time}",
        f"do you have time for {service} on {day} at {time}",
    ])
    return u, f"sure, {service} on {day} at {time}. what name should i put it under?"


def book_ask_name(r: random.Random) -> Example:
    day, time, _, service = _booking_slots(r)
    u, a = _ask_name_turn(r, day, time, service)
    return Example("book_ask_name", [{"role": "user", "content": u}], a, {"day": day, "time": time})


def book_name_followup(r: random.Random) -> Example:
    day, time, name, service = _booking_slots(r)
    u, a = _ask_name_turn(r, day, time, service)
    u2 = r.choice([f"it is {name}", f"{name}", f"the name is {name}", f"put it under {name}",
                   f"my name is {name}"])
    msgs = [{"role": "user", "content": u}, {"role": "assistant", "content": a},
            {"role": "user", "content": u2}]
    return Example("book_name_followup", msgs, _book_reply(day, time, name, service),
                   {"day": day, "time": time, "name": name})


def reschedule(r: random.Random) -> Example:
    day, time, name, _ = _booking_slots(r)
    u = _filler(r) + r.choice([
        f"this is {name} can you move my appointment to {day} at {time}",
        f"i need to reschedule my appointment to {day} at {time} my name is {name}",
        f"can i change my booking to {day} at {time} it is {name}",
        f"my name is {name} please move me to {day} at {time}",
    ])
    reply = (f"[reschedule(name={name}, day={day}, time={time})] no problem {name}, "
             f"your appointment is now on {day} at {time}.")
    return Example("reschedule", [{"role": "user", "content": u}], reply,
                   {"day": day, "time": time, "name": name})


def cancel(r: random.Random) -> Example:
    day, _, name, _ = _booking_slots(r)
    u = _filler(r) + r.choice([
        f"please cancel my appointment on {day} my name is {name}",
        f"this is {name} i need to cancel my {day} appointment",
        f"can you cancel my booking on {day} it is {name}",
        f"i cannot make it on {day} please cancel it my name is {name}",
    ])
    reply = f"[cancel(name={name}, day={day})] okay {name}, your appointment on {day} is cancelled."
    return Example("cancel", [{"role": "user", "content": u}], reply, {"day": day, "name": name})


def order_status(r: random.Random) -> Example:
    num = _digits(r, 5)
    u = _filler(r) + r.choice([
        f"can you check my order {_spell(num)}", f"what is the status of order {_spell(num)}",
        f"i am calling about order number {_spell(num)}", f"where is my order {_spell(num)}",
        f"has order {_spell(num)} shipped yet",
    ])
    reply = f"[order_status(number={num})] let me check order {_spell(num)} for you, one moment."
    return Example("order_status", [{"role": "user", "content": u}], reply, {"number": num})


def readback_phone(r: random.Random) -> Example:
    num = "555" + _digits(r, 4)
    u = _filler(r) + r.choice([
        f"my phone number is {_spell(num)}", f"you can call me back at {_spell(num)}",
        f"my number is {_spell(num)}", f"please note my number {_spell(num)}",
    ])
    reply = f"let me read that back: {_spell(num)}. is that right?"
    return Example("readback_phone", [{"role": "user", "content": u}], reply, {"number": num})


def readback_booking(r: random.Random) -> Example:
    day, time, name, service = _booking_slots(r)
    r.random()  # one draw kept so the corpus stays byte-identical to the one the shipped weights saw
    ask = {"role": "user", "content": f"i would like to book {service} on {day} at {time} my name is {name}"}
    msgs = [ask, {"role": "assistant", "content": _book_reply(day, time, name, service)},
            {"role": "user", "content": r.choice(["can you read that back to me", "can you repeat the booking",
                                                  "sorry can you confirm that", "what did you book for me"])}]
    reply = f"of course. {service} for {name} on {day} at {time}, at {B.ADDRESS.lower()}."
    return Example("readback_booking", msgs, reply, {"day": day, "time": time, "name": name})


def small_talk(r: random.Random) -> Example:
    u = r.choice(["how are you today", "how is your day going", "are you a real person", "nice weather today",
                  "how are you doing"])
    return Example("small_talk", [{"role": "user", "content": u}],
                   "i am doing well, thank you for asking. how can i help with your bike today?")


def goodbye(r: random.Random) -> Example:
    u = r.choice(["thank you bye", "thanks that is all", "okay thanks goodbye", "great thank you", "bye"])
    return Example("goodbye", [{"role": "user", "content": u}], "you are welcome. have a great day, goodbye!")


def fallback(r: random.Random) -> Example:
    u = _filler(r) + r.choice([
        "can you fix my car", "do you sell pizza", "what is the weather tomorrow", "can you book me a flight",
        "i want to order a taxi", "tell me a joke", "do you repair washing machines", "what is the capital of france",
    ])
    return Example("fallback", [{"role": "user", "content": u}],
                   "sorry, i can only help with bike service, orders and our opening hours.")


GENERATORS: dict[str, Callable[[random.Random], Example]] = {
    "greeting": greeting, "hours": hours, "address": address, "book": book, "book_ask_name": book_ask_name,
    "book_name_followup": book_name_followup, "reschedule": reschedule, "cancel": cancel,
    "order_status": order_status, "readback_phone": readback_phone, "readback_booking": readback_booking,
    "small_talk": small_talk, "goodbye": goodbye, "fallback": fallback,
}
# slot-heavy intents are sampled more often: they are what the models must learn to copy
WEIGHTS = {"greeting": 1, "hours": 3, "address": 2, "book": 5, "book_ask_name": 2, "book_name_followup": 3,
           "reschedule": 3, "cancel": 3, "order_status": 4, "readback_phone": 3, "readback_booking": 3,
           "small_talk": 1, "goodbye": 1, "fallback": 2}


def generate(n: int, seed: int) -> list[Example]:
    """n examples, reproducible from the seed."""
    r = random.Random(seed)
    names, weights = list(WEIGHTS), [WEIGHTS[k] for k in WEIGHTS]
    return [GENERATORS[r.choices(names, weights)[0]](r) for _ in range(n)]


def heldout(n: int, seed: int, train: list[Example]) -> list[Example]:
    """Held-out examples whose (intent, slots) combination never occurs in the training set."""
    seen = {(e.intent, tuple(sorted(e.slots.items()))) for e in train if e.slots}
    out: list[Example] = []
    r = random.Random(seed)
    names, weights = list(WEIGHTS), [WEIGHTS[k] for k in WEIGHTS]
    while len(out) < n:
        e = GENERATORS[r.choices(names, weights)[0]](r)
        if e.slots and (e.intent, tuple(sorted(e.slots.items()))) in seen:
            continue
        out.append(e)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    a.out.write_text("".join(e.to_json() + "\n" for e in generate(a.n, a.seed)))


if __name__ == "__main__":
    main()
