"""Synthetic call-centre corpus for Riverside Bike Works (engines/shop/business.py).

Each example is a chat (earlier turns as context, then the caller's last utterance) and the
agent's reply. Caller text looks like speech recognizer output (lowercase, no punctuation,
fillers); agent replies are deterministic given the intent and slots, so evaluation can demand
exact slot values. Tool calls are written as a bracketed span, e.g.
``[book(day=friday, time=10 am, name=anna)]``; the gate never speaks them.

The agent's replies form a small grammar (`REPLIES`): every reply the generator writes is one
template with its slots filled, and `parse_reply` reads any text back against the same templates,
so the evaluator and the answer scorer (engines/shop/answers.py) share it instead of copying it.

Besides the bike shop's requests the corpus holds what a real line hears: off-topic requests and
unrelated sentences (answered with the fallback), requests a recogniser half destroyed
(engines/shop/asr_noise.py; answered with a short clarifying question, never a tool call), and
in-domain requests with light recogniser noise that keeps their meaning (answered normally).

    python -m engines.shop.corpus --n 20000 --out corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from engines.shop import business as B
from engines.shop import extra_words as EW
from engines.shop import names as N
from engines.shop import phrasing as PH
from engines.shop.asr_noise import FUNCTION_WORDS, damage, garble

INTENTS = (
    "greeting", "hours", "hours_week", "address", "book", "book_ask_name", "book_name_followup", "reschedule",
    "cancel", "order_status", "readback_phone", "readback_booking", "small_talk", "goodbye", "fallback",
    "clarify",
)

# The response grammar: template key -> (intent, text). {slot} placeholders are filled from the
# slots; a placeholder used twice must carry the same value (the parser checks it).
REPLIES: dict[str, tuple[str, str]] = {
    "greeting": ("greeting", f"hello, thanks for calling {B.SHOP.lower()}. how can i help you today?"),
    "hours_open": ("hours", "on {day} we are open from {open} to {close}."),
    "hours_closed": ("hours", "sorry, we are closed on {day}. we open again on monday at 9 am."),
    # the one long answer (about 45 tokens): what a gate policy's first-audio gain is measured on
    "hours_week": ("hours_week", "we are open monday to wednesday from {mon_open} to {mon_close}, thursday and friday "
                                 "from {thu_open} to {thu_close}, and saturday from {sat_open} to {sat_close}. "
                                 "we are closed on sunday."),
    "address": ("address", f"we are at {B.ADDRESS.lower()} in {B.CITY.lower()}, {B.LANDMARK}."),
    "book": ("book", "[book(day={day}, time={time}, name={name})] great {name}, {service} is booked for {day} at {time}."),
    "book_ask_name": ("book_ask_name", "sure, {service} on {day} at {time}. what name should i put it under?"),
    "reschedule": ("reschedule", "[reschedule(name={name}, day={day}, time={time})] no problem {name}, "
                                 "your appointment is now on {day} at {time}."),
    "cancel": ("cancel", "[cancel(name={name}, day={day})] okay {name}, your appointment on {day} is cancelled."),
    "order_status": ("order_status", "[order_status(number={number})] let me check order {spoken} for you, one moment."),
    "readback_phone": ("readback_phone", "let me read that back: {spoken}. is that right?"),
    "readback_booking": ("readback_booking", f"of course. {{service}} for {{name}} on {{day}} at {{time}}, "
                                             f"at {B.ADDRESS.lower()}."),
    "small_talk": ("small_talk", "i am doing well, thank you for asking. how can i help with your bike today?"),
    "goodbye": ("goodbye", "you are welcome. have a great day, goodbye!"),
    "fallback": ("fallback", "sorry, i can only help with bike service, orders and our opening hours."),
    "clarify": ("clarify", "sorry, i did not catch that. could you say it again?"),
    "clarify_day": ("clarify", "sorry, which day do you mean?"),
}
_TIME_RE = r"\d{1,2}(?: \d{2})? [ap]m"
SLOT_PATTERNS: dict[str, str] = {
    "day": "|".join(B.DAYS), "time": _TIME_RE, "open": _TIME_RE, "close": _TIME_RE, "name": r"[a-z]+",
    **{f"{d}_{k}": _TIME_RE for d in ("mon", "thu", "sat") for k in ("open", "close")},
    "service": "|".join(re.escape(x) for x in B.SERVICES), "number": r"\d+", "spoken": r"\d(?: \d)*",
}
# tool calls the engine may emit, and which of them change or destroy a booking
TOOLS = ("book", "reschedule", "cancel", "order_status")
DESTRUCTIVE_TOOLS = frozenset({"reschedule", "cancel"})


def render(key: str, **slots: str) -> str:
    """The reply of template `key` with its slots filled."""
    return REPLIES[key][1].format(**slots)


def _compile(text: str) -> re.Pattern[str]:
    out, seen, pos = [], set(), 0
    for m in re.finditer(r"\{(\w+)\}", text):
        out.append(re.escape(text[pos:m.start()]))
        k = m.group(1)
        out.append(f"(?P={k})" if k in seen else f"(?P<{k}>{SLOT_PATTERNS[k]})")
        seen.add(k)
        pos = m.end()
    out.append(re.escape(text[pos:]))
    return re.compile("".join(out))


_PARSERS = [(key, intent, _compile(text)) for key, (intent, text) in REPLIES.items()]


@dataclass(frozen=True)
class ParsedReply:
    key: str  # which template of REPLIES
    intent: str
    slots: dict[str, str]


def parse_reply(text: str) -> ParsedReply | None:
    """The template and slot values a reply text fits exactly, or None if it fits none."""
    t = text.strip()
    for key, intent, pat in _PARSERS:
        m = pat.fullmatch(t)
        if m:
            return ParsedReply(key, intent, m.groupdict())
    return None


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
        return render("hours_closed", day=day)
    return render("hours_open", day=day, open=h[0], close=h[1])


def greeting(r: random.Random) -> Example:
    u = r.choice(["hello", "hi there", "hello is this the bike shop", "hi is this riverside bike works",
                  "good morning", "hey"])
    return Example("greeting", [{"role": "user", "content": u}], render("greeting"))


def hours(r: random.Random) -> Example:
    day = r.choice(B.DAYS)
    u = PH.hours_request(r, day) if r.random() < COMPOSED else _filler(r) + r.choice([
        f"what time do you open on {day}", f"are you open on {day}", f"what are your hours on {day}",
        f"when do you close on {day}", f"what time are you open {day}", f"can i come by on {day}",
        f"how late are you open on {day}", f"what are your opening hours for {day}",
    ])
    return Example("hours", [{"role": "user", "content": u}], _hours_reply(day), {"day": day})


def week_slots() -> dict[str, str]:
    # the week as the shop keeps it; the reply groups monday-wednesday and thursday-friday
    assert B.HOURS["monday"] == B.HOURS["tuesday"] == B.HOURS["wednesday"]
    assert B.HOURS["thursday"] == B.HOURS["friday"] and B.HOURS["sunday"] is None
    return {f"{d[:3]}_{k}": B.HOURS[d][i] for d in ("monday", "thursday", "saturday")  # type: ignore[index]
            for i, k in enumerate(("open", "close"))}


def hours_week(r: random.Random) -> Example:
    u = _filler(r) + r.choice([
        "what are your hours during the week", "when are you open this week", "which days are you open",
        "what are your opening hours for the whole week", "can you tell me your hours for the week",
        "what are your hours every day", "what days and times are you open",
    ])
    return Example("hours_week", [{"role": "user", "content": u}], render("hours_week", **week_slots()))


def address(r: random.Random) -> Example:
    u = _filler(r) + r.choice([
        "where are you located", "what is your address", "how do i find the shop", "where is the shop",
        "can you give me directions", "where exactly are you", "what street are you on",
    ])
    return Example("address", [{"role": "user", "content": u}], render("address"))


class CorpusRandom(random.Random):
    """The corpus's random stream, carrying the share of callers' names drawn beyond the shop's 40."""

    def __init__(self, seed: int, open_names: float = 0.0, tails: float = 0.0, extra_words: float = 0.0) -> None:
        super().__init__(seed)
        self.open_names = open_names
        self.tails = tails  # share of requests that end with a few words carrying no slot ("... for me please")
        self.extra_words = extra_words  # share of caller turns given words the corpus never uses (extra_words.py)
        self.extra_pool = EW.read_pool() if extra_words else ()


def _open_share(r: random.Random) -> float:
    return getattr(r, "open_names", 0.0)


# words a caller may put after a request that carry no slot: the slots are where the words say, not at the end
TAILS = ("please", "thanks", "thank you", "for me", "if you can", "if possible", "if that is okay", "thanks a lot",
         "if that works", "cheers", "when you get a chance", "please and thank you")
_TAIL_INTENTS = ("hours", "book", "book_ask_name", "book_name_followup", "reschedule", "cancel", "order_status",
                 "readback_phone")


def _tail(text: str, r: random.Random) -> str:
    share = getattr(r, "tails", 0.0)
    if share and r.random() < share:  # no draw at share 0: the default corpus stays byte-identical
        return f"{text} {r.choice(TAILS)}"
    return text


def _name(r: random.Random) -> str:
    # a plain Random (or share 0) draws exactly as before: the default corpus stays byte-identical
    share = _open_share(r)
    if share and r.random() < share:
        return N.open_name(r)
    return r.choice(B.NAMES)


def _booking_slots(r: random.Random) -> tuple[str, str, str, str]:
    return r.choice(B.DAYS[:6]), r.choice(B.TIMES), _name(r), r.choice(B.SERVICES)


def _book_reply(day: str, time: str, name: str, service: str) -> str:
    return render("book", day=day, time=time, name=name, service=service)


def book(r: random.Random) -> Example:
    day, time, name, service = _booking_slots(r)
    u = PH.book_request(r, service, day, time, name) if r.random() < COMPOSED else _filler(r) + r.choice([
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
    if r.random() < COMPOSED:
        return (PH.book_request(r, service, day, time, "", omit="name"),
                render("book_ask_name", service=service, day=day, time=time))
    u = _filler(r) + r.choice([
        f"i would like to book {service} on {day} at {time}",
        f"can i get {service} on {day} at {time}",
        f"do you have time for {service} on {day} at {time}",
    ])
    return u, render("book_ask_name", service=service, day=day, time=time)


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
    u = PH.reschedule_request(r, name, day, time) if r.random() < COMPOSED else _filler(r) + r.choice([
        f"this is {name} can you move my appointment to {day} at {time}",
        f"i need to reschedule my appointment to {day} at {time} my name is {name}",
        f"can i change my booking to {day} at {time} it is {name}",
        f"my name is {name} please move me to {day} at {time}",
    ])
    reply = render("reschedule", name=name, day=day, time=time)
    return Example("reschedule", [{"role": "user", "content": u}], reply,
                   {"day": day, "time": time, "name": name})


def cancel(r: random.Random) -> Example:
    day, _, name, _ = _booking_slots(r)
    u = PH.cancel_request(r, name, day) if r.random() < COMPOSED else _filler(r) + r.choice([
        f"please cancel my appointment on {day} my name is {name}",
        f"this is {name} i need to cancel my {day} appointment",
        f"can you cancel my booking on {day} it is {name}",
        f"i cannot make it on {day} please cancel it my name is {name}",
    ])
    reply = render("cancel", name=name, day=day)
    return Example("cancel", [{"role": "user", "content": u}], reply, {"day": day, "name": name})


def order_status(r: random.Random) -> Example:
    num = _digits(r, 5)
    u = PH.order_request(r, _spell(num)) if r.random() < COMPOSED else _filler(r) + r.choice([
        f"can you check my order {_spell(num)}", f"what is the status of order {_spell(num)}",
        f"i am calling about order number {_spell(num)}", f"where is my order {_spell(num)}",
        f"has order {_spell(num)} shipped yet",
    ])
    reply = render("order_status", number=num, spoken=_spell(num))
    return Example("order_status", [{"role": "user", "content": u}], reply, {"number": num})


def readback_phone(r: random.Random) -> Example:
    num = "555" + _digits(r, 4)
    u = _filler(r) + r.choice([
        f"my phone number is {_spell(num)}", f"you can call me back at {_spell(num)}",
        f"my number is {_spell(num)}", f"please note my number {_spell(num)}",
    ])
    reply = render("readback_phone", spoken=_spell(num))
    return Example("readback_phone", [{"role": "user", "content": u}], reply, {"number": num})


def readback_booking(r: random.Random) -> Example:
    day, time, name, service = _booking_slots(r)
    r.random()  # one draw kept so the corpus stays byte-identical to the one the shipped weights saw
    ask = {"role": "user", "content": f"i would like to book {service} on {day} at {time} my name is {name}"}
    msgs = [ask, {"role": "assistant", "content": _book_reply(day, time, name, service)},
            {"role": "user", "content": r.choice(["can you read that back to me", "can you repeat the booking",
                                                  "sorry can you confirm that", "what did you book for me"])}]
    reply = render("readback_booking", service=service, name=name, day=day, time=time)
    return Example("readback_booking", msgs, reply, {"day": day, "time": time, "name": name})


def small_talk(r: random.Random) -> Example:
    u = r.choice(["how are you today", "how is your day going", "are you a real person", "nice weather today",
                  "how are you doing"])
    return Example("small_talk", [{"role": "user", "content": u}], render("small_talk"))


def goodbye(r: random.Random) -> Example:
    u = r.choice(["thank you bye", "thanks that is all", "okay thanks goodbye", "great thank you", "bye"])
    return Example("goodbye", [{"role": "user", "content": u}], render("goodbye"))


# Training sources of out-of-domain callers. The evaluation's out-of-domain set
# (engines/shop/ood.py) is written from different sentences and templates, so it measures
# generalisation rather than recall.
_OFF_TOPIC_ASK = ("can you", "could you", "do you", "i need you to", "i want to", "please", "can i", "how do i",
                  "where can i", "is it possible to", "i would like to", "help me")
_OFF_TOPIC_ACTS = (
    "fix my car", "sell pizza", "book me a flight", "order a taxi", "tell me a joke", "repair washing machines",
    "change my tyres on the truck", "renew my passport", "buy concert tickets", "pay my electricity bill",
    "get a haircut", "reserve a table for two", "see a doctor", "rent an apartment", "open a bank account",
    "fix my laptop", "order flowers", "find a plumber", "learn to swim", "send a parcel abroad",
    "install a dishwasher", "clean my carpets", "adopt a puppy", "translate a letter", "insure my house",
    "book a hotel room", "get my nails done", "unlock my phone", "walk my dog", "paint my kitchen",
)
_QUESTIONS = (
    "what is the weather tomorrow", "what is the capital of france", "who won the game last night",
    "how tall is the eiffel tower", "what is two plus two", "when does the train to the city leave",
    "what is the meaning of life", "who is the president", "how do you make pancakes", "what movies are on tonight",
    "is it going to rain", "how far is the moon", "what is the best pizza place", "what is my horoscope",
    "how much is a bitcoin", "what is the news today", "where is the nearest pharmacy", "can i speak to the manager",
)
_SUBJECTS = ("my sister", "the neighbours", "our dog", "my boss", "the kids", "my friend", "the old man", "we",
             "my mother", "the cat", "i", "they", "the teacher", "my uncle")
_VERBS = ("painted", "forgot", "lost", "found", "cooked", "watched", "sold", "cleaned", "visited", "broke",
          "wrote", "bought", "carried", "opened", "hid", "sang")
_OBJECTS = ("the fence", "a letter", "the keys", "dinner", "a movie", "the garden", "a song", "the car",
            "the window", "a cake", "the house", "a present", "the book", "the dishes")
_WHEN = ("", "", "yesterday", "last week", "this morning", "at night", "again", "for hours", "on the weekend")


def _off_topic(r: random.Random) -> str:
    if r.random() < 0.35:
        return r.choice(_QUESTIONS)
    return f"{r.choice(_OFF_TOPIC_ASK)} {r.choice(_OFF_TOPIC_ACTS)}"


def _unrelated(r: random.Random) -> str:
    return " ".join(x for x in (r.choice(_SUBJECTS), r.choice(_VERBS), r.choice(_OBJECTS), r.choice(_WHEN)) if x)


def fallback(r: random.Random) -> Example:
    """Off-topic requests and unrelated sentences, sometimes as a recogniser heard them."""
    u = _off_topic(r) if r.random() < 0.6 else _unrelated(r)
    if r.random() < 0.3:
        u = garble(u, r)
    return Example("fallback", [{"role": "user", "content": _filler(r) + u}], render("fallback"))


# words a request cannot be understood without, besides its slot values
_CUES = {"hours": ("open", "close", "hours", "late"), "book": ("book", "booking"),
         "reschedule": ("move", "reschedule", "change", "push", "switch"), "cancel": ("cancel", "remove", "delete"),
         "order_status": ("order",),
         "readback_phone": ("number", "phone")}
_CLARIFY_FROM = ("hours", "book", "reschedule", "cancel", "order_status", "book_ask_name", "readback_phone")
_VAGUE_DAYS = ("today", "tomorrow", "tonight", "this weekend", "next week", "later")
_SALAD = ("you", "can", "only", "when", "it", "closed", "open", "my", "the", "appointment", "oh", "god", "so",
          "what", "time", "is", "we", "do", "a", "bike", "order", "for", "me", "please", "okay", "um", "there",
          "that", "be", "not", "just", "and", "then", "now", "here", "if", "get", "got", "way", "back")


def _essential(e: Example) -> list[str]:
    words = [w for v in e.slots.values() for w in (v.split() if " " in v else list(v) if v.isdigit() else [v])]
    # dropping the minutes of "9 30 am" leaves the valid time "9 am": a request, not a garble
    return [w for w in words if w != "30"] + list(_CUES.get(e.intent, ()))


def damageable(e: Example) -> list[str]:
    """The essential words of `e`'s request whose loss makes it half understood: a booking without its name is
    still a request (the shop asks for the name)."""
    return [w for w in _essential(e) if not (e.intent == "book" and w == e.slots.get("name"))]


def _lose_essential(e: Example, text: str, r: random.Random) -> str:
    """`text` (`e`'s request) with one of its essential words destroyed (`asr_noise.damage`; ValueError when none
    is in it)."""
    # with open names any word may be a name: a misheard name is dropped or a function word, never a
    # sound-alike, else "die anna" would teach the model to doubt names it should copy
    plain = (e.slots.get("name", ""),) if _open_share(r) else ()
    return damage(text, r, damageable(e), as_function_word=AS_FUNCTION_WORD, plain=plain)


def _missing_slot(r: random.Random) -> Example:
    """A clear request with a required slot the caller never said: ask, never guess it."""
    day, time, name, service = _booking_slots(r)
    kind = r.choice(("cancel", "cancel", "reschedule", "reschedule", "book", "hours", "order_status"))
    if kind == "cancel":
        omit = r.choice(("name", "day"))
        u = PH.cancel_request(r, name, day, omit=omit)
    elif kind == "reschedule":
        omit = r.choice(("name", "day", "time"))
        u = PH.reschedule_request(r, name, day, time, omit=omit)
    elif kind == "book":  # a booking without its name asks for the name (book_ask_name)
        omit = r.choice(("day", "time"))
        u = PH.book_request(r, service, day, time, name if r.random() < 0.5 else "", omit=omit)
    elif kind == "hours":
        omit, u = "day", PH.hours_request(r, day, omit="day")
    else:  # the shop's order numbers have five digits: fewer or more were misheard
        n = r.choice((3, 4, 6))
        omit, u = "number", PH.order_request(r, _spell(_digits(r, n)) if r.random() < 0.5 else None)
    u = _tail(u, r)
    return Example("clarify", [{"role": "user", "content": u}], render("clarify_day" if omit == "day" else "clarify"))


def clarify(r: random.Random) -> Example:
    """Half-understood requests: a short clarifying question, never a tool call."""
    if r.random() < MISSING:
        return _missing_slot(r)
    x = r.random()
    if x < 0.6:  # an in-domain request with an essential word destroyed by the recogniser
        src = GENERATORS[r.choice(_CLARIFY_FROM)](r)
        u = _lose_essential(src, _tail(src.messages[-1]["content"], r), r)
        return Example("clarify", src.messages[:-1] + [{"role": "user", "content": u}], render("clarify"))
    if x < 0.8:  # a day the shop cannot resolve
        vague = r.choice(_VAGUE_DAYS)
        u = _filler(r) + r.choice([
            f"are you open {vague}", f"what time do you close {vague}", f"can i book a tune up {vague}",
            f"please cancel my appointment {vague}", f"when do you open {vague}", f"can you move me to {vague}",
            f"how late are you open {vague}", f"i need a brake check {vague}",
        ])
        return Example("clarify", [{"role": "user", "content": u}], render("clarify_day"))
    u = " ".join(r.choice(_SALAD) for _ in range(r.randint(3, 9)))  # words that make no request
    return Example("clarify", [{"role": "user", "content": u}], render("clarify"))


GENERATORS: dict[str, Callable[[random.Random], Example]] = {
    "greeting": greeting, "hours": hours, "hours_week": hours_week, "address": address, "book": book, "book_ask_name": book_ask_name,
    "book_name_followup": book_name_followup, "reschedule": reschedule, "cancel": cancel,
    "order_status": order_status, "readback_phone": readback_phone, "readback_booking": readback_booking,
    "small_talk": small_talk, "goodbye": goodbye, "fallback": fallback, "clarify": clarify,
}
# slot-heavy intents are sampled more often: they are what the models must learn to copy
WEIGHTS = {"greeting": 1, "hours": 3, "hours_week": 1, "address": 2, "book": 5, "book_ask_name": 2, "book_name_followup": 3,
           "reschedule": 3, "cancel": 3, "order_status": 4, "readback_phone": 3, "readback_booking": 3,
           "small_talk": 1, "goodbye": 1, "fallback": 5, "clarify": 10}
# the shop's own requests (held-out evaluation draws from these only)
IN_DOMAIN = tuple(k for k in WEIGHTS if k not in ("clarify",))
# share of the slot requests phrased by engines/shop/phrasing.py instead of the fixed templates above
COMPOSED = 0.5
# share of the clarify examples that are clear requests missing a required slot
MISSING = 0.5
# the corpus the shipped tiny models were last trained on (engines/local/train.py's defaults): the held-out
# and out-of-domain sets are checked against exactly these chats
TRAIN_N = 40000
TRAIN_SEED = 0
# shares of callers' names beyond the shop's 40 (engines/shop/names.py) and of requests ending with a tail (TAILS)
# in the shipped weights' corpus: none. An open-names stage (--open-names 0.5 --tails 0.25; engines/tiny/TRAINING.md)
# was tried and not shipped
TRAIN_OPEN_NAMES = 0.0
TRAIN_TAILS = 0.0
# share of caller turns given common English words the corpus never uses (engines/shop/extra_words.py)
TRAIN_EXTRA_WORDS = 0.35
# share of answered requests with added words followed by their cue-lost twin (`cue_lost_twin`)
TRAIN_TWINS = 0.5
# the intents whose answer is to ask again or decline, and the factor on their weights in the shipped corpus:
# requests with tails read like whole requests even when damaged, so a corpus with tails may need more of them
ASKING = ("clarify", "fallback")
TRAIN_ASKING = 1.0
# share of the destroyed essential words of a clarify request heard as a short function word
AS_FUNCTION_WORD = 0.3
# share of in-domain requests given light recogniser noise that keeps slot values and cues
LIGHT_NOISE = 0.15


def _with_light_noise(e: Example, r: random.Random) -> Example:
    protect = set(_essential(e)) | {w for v in e.slots.values() for w in v.split()}
    msgs = e.messages[:-1] + [{"role": "user", "content": garble(e.messages[-1]["content"], r, protect=protect)}]
    return Example(e.intent, msgs, e.reply, e.slots)


# A real call is several turns: the caller's request comes after earlier exchanges, and after a
# barge-in the context holds only the words of the bot's reply that were heard. Share of examples
# given earlier turns, and of those given two; the reply depends on the last request only.
HISTORY = 0.45
TWO_EARLIER = 0.3
CUT_OFF = 0.3  # an earlier reply the caller cut off: only its first words are in the context
# earlier exchanges that close their request (a name-only answer after book_ask_name would not)
_EARLIER = ("greeting", "hours", "hours_week", "address", "book", "book_ask_name", "reschedule", "cancel",
            "order_status", "readback_phone", "small_talk", "fallback")
# intents whose generator already writes the earlier turns they depend on
_OWN_HISTORY = ("book_name_followup", "readback_booking")
_FOLLOW_UP = ("and ", "also ", "so ", "oh and ", "okay ", "um ", "no ")
_CLOSING = ("okay ", "mm hmm ", "alright ", "oh okay ", "right ")


def _heard(reply: str, r: random.Random) -> str:
    """The part of a reply heard before a barge-in: its tool span (executed, never spoken) and first words."""
    span, _, said = reply.partition("] ") if reply.startswith("[") else ("", "", reply)
    words = said.split()
    kept = " ".join(words[:r.randint(1, max(1, len(words) - 2))])
    return f"{span}] {kept}" if span else kept


def _with_history(e: Example, r: random.Random) -> Example:
    earlier: list[dict[str, str]] = []
    for _ in range(2 if r.random() < TWO_EARLIER else 1):
        x = GENERATORS[r.choice(_EARLIER)](r)
        reply = _heard(x.reply, r) if r.random() < CUT_OFF else x.reply
        earlier += x.messages[-1:] + [{"role": "assistant", "content": reply}]
    last = e.messages[-1]["content"]
    if r.random() < 0.5:
        last = r.choice(_CLOSING if e.intent == "goodbye" else _FOLLOW_UP) + last
    return Example(e.intent, earlier + e.messages[:-1] + [{"role": "user", "content": last}], e.reply, e.slots)


def draw(intent: str, r: random.Random, noise: bool = True) -> Example:
    """One example of `intent`, with light recogniser noise and earlier turns as a real call has them."""
    return _draw(intent, r, noise)[0]


def _draw(intent: str, r: random.Random, noise: bool = True) -> tuple[Example, bool]:
    """`draw`'s example, and whether words the corpus never uses were added to its last caller turn."""
    e = GENERATORS[intent](r)
    if intent in _TAIL_INTENTS:
        e.messages[-1] = {"role": "user", "content": _tail(e.messages[-1]["content"], r)}
    if noise and intent not in ("fallback", "clarify") and r.random() < LIGHT_NOISE:
        e = _with_light_noise(e, r)
    if intent != "greeting" and intent not in _OWN_HISTORY and r.random() < HISTORY:
        e = _with_history(e, r)
    share = getattr(r, "extra_words", 0.0)
    if share and intent not in EW.WHOLE_MESSAGE and r.random() < share:
        pool = getattr(r, "extra_pool", ())
        last = e.messages[-1]["content"]
        # requests of every kind alike, answered or not: an unknown word carries no label; and a sentence of
        # nothing but unknown words asks nothing of the shop
        text = EW.unknown_sentence(r, pool) if intent == "fallback" and r.random() < 0.5 else EW.insert(last, r, pool)
        e.messages[-1] = {"role": "user", "content": text}
        return e, True
    return e, False


def cue_lost_twin(e: Example, r: random.Random) -> Example | None:
    """The same call with an essential word of the last request destroyed (its cue word or a slot value), added
    words and all: a clarifying question. Beside `e`, it makes the lost word the only difference between
    answering and asking again, so a model that learns to pass over unknown words does not also pass over a
    missing cue ("i want to my appointment to thursday" is not a reschedule). None when no essential word is
    in the text."""
    said = e.messages[-1]["content"]
    try:
        u = _lose_essential(e, said, r)
    except ValueError:
        return None
    # a sound-alike can keep the word it replaces ("am" heard as "i am"): then nothing was lost
    ess = damageable(e)
    if [w for w in u.split() if w in ess] == [w for w in said.split() if w in ess]:
        return None
    return Example("clarify", e.messages[:-1] + [{"role": "user", "content": u}], render("clarify"))


def generate(n: int, seed: int, open_names: float = 0.0, tails: float = 0.0,
             extra_words: float = 0.0, twins: float = 0.0, asking: float = 1.0) -> list[Example]:
    """n examples, reproducible from the seed; `open_names`: share of callers' names beyond the shop's 40
    (engines/shop/names.py), `tails`: share of requests ending with words that carry no slot (`TAILS`),
    `extra_words`: share of caller turns given common English words the corpus never uses
    (engines/shop/extra_words.py); `twins`: share of answered requests with added words followed by their
    cue-lost twin (`cue_lost_twin`); `asking`: factor on the weights of the turns answered by asking again or
    declining (`ASKING`). The tiny models train with the TRAIN_* shares; the defaults keep the corpus the
    earlier weights saw."""
    r = CorpusRandom(seed, open_names, tails, extra_words)
    names = list(WEIGHTS)
    weights = [WEIGHTS[k] * (asking if k in ASKING else 1.0) for k in WEIGHTS]
    out: list[Example] = []
    while len(out) < n:
        intent = r.choices(names, weights)[0]
        e, added = _draw(intent, r)
        out.append(e)
        # `twins` draws nothing from the stream when 0, so the corpus without twins is unchanged
        if added and twins and intent in _CLARIFY_FROM and len(out) < n and r.random() < twins:
            t = cue_lost_twin(e, r)
            if t is not None:
                out.append(t)
    return out


def corpus_words() -> set[str]:
    """Every word the shop's corpus uses outside its names: not a name a caller could be mistaken by."""
    r = random.Random(99)
    clean = [draw(r.choice(IN_DOMAIN), r, noise=False) for _ in range(6000)]
    words = {w for e in clean for m in e.messages for w in m["content"].split()}
    words |= {w for e in clean for w in re.findall(r"[a-z]+", e.reply)}
    # the out-of-domain sentences' words (their recogniser noise left out: "tom" for "time" stays a name)
    for part in (_OFF_TOPIC_ASK, _OFF_TOPIC_ACTS, _QUESTIONS, _SUBJECTS, _VERBS, _OBJECTS, _WHEN, _SALAD, _VAGUE_DAYS,
                 FUNCTION_WORDS):
        words |= {w for x in part for w in x.split()}
    return (words | set(B.DAYS) | {"am", "pm"}) - set(B.NAMES)


def heldout(n: int, seed: int, train: list[Example]) -> list[Example]:
    """Held-out examples whose (intent, slots) combination never occurs in the training set (the shop's
    40 names only: callers with other names are the unseen-caller set's, engines/eval/unseen.py)."""
    seen = {(e.intent, tuple(sorted(e.slots.items()))) for e in train if e.slots}
    out: list[Example] = []
    r = random.Random(seed)
    names, weights = list(IN_DOMAIN), [WEIGHTS[k] for k in IN_DOMAIN]
    while len(out) < n:
        e = draw(r.choices(names, weights)[0], r, noise=False)
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
