"""The unseen-caller evaluation set: callers the tiny engines were never trained on, written as recognisers write.

The held-out set (engines/eval/evaluate.py) draws from the training corpus's own generators: unseen slot
combinations, but the corpus's names, phrasings and form. This set is built from other sources on purpose, so
the gap between "held out" and "unseen" stays visible:
- **names** from engines/shop/names.py's unseen sources: first names of faker locales no training name comes
  from, and made-up names of a closed-syllable generator the training generator cannot write, both filtered
  against every training name (`unseen_names.txt`); and a class of its own, `name:common` (60 prompts after the
  rest, own seed): first names common in English-speaking countries ("this is tom ...", "... my name is daniel"),
  which the shipped weights never saw as names and a lower-case recogniser writes like any English word;
- **phrasings and fillers** written here, none of them a template or filler of engines/shop/corpus.py or
  engines/shop/phrasing.py (tests/engines/eval/test_unseen.py checks both);
- **form**: half the prompts as Whisper writes (sentence case, punctuation, capitalised names and days,
  "2:00 PM", "2 p.m.", "14:00", "two o'clock", "51208", "512 08"), half as a lower-case recogniser writes
  (spoken numbers: "five one two oh eight", "two thirty pm").

Every prompt expects a tool call or a read-back with exact slots; each carries tags (`name:faker`,
`time:colon`, `number:grouped`, `style:whisper`, ...) so that evaluate and the bench report each form.
The set is a file, `unseen.jsonl` (the `--prompts` format plus "history" and "tags"), written by

    python -m engines.eval.unseen
    python -m engines.eval.unseen --probe ar      # form alone: shop names, each number and time form, raw/normalised
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engines.shop import business as B
from engines.shop import corpus
from engines.shop.answers import Expect, score_reply
from engines.shop.names import unseen_names

FILE = Path(__file__).with_name("unseen.jsonl")
SEED = 31337

# Fillers and phrasings of this set only (none is a corpus filler, opener or template).
FILLERS = ("", "", "", "Ah, ", "Hi there, ", "Good afternoon, ", "Yeah, hello. ", "Oh hi, ", "Hey, morning. ",
           "Sorry, ")
# {N} name, {D} day, {T} time, {S} service, {O} order number, {P} phone number
TEMPLATES: dict[str, tuple[str, ...]] = {
    "book": (
        "{N} here, could you book me {S} on {D} at {T}?",
        "Hi, I'm {N} and I want {S} booked on {D} at {T}.",
        "Can I get {S} on {D} at {T}? It's for {N}.",
        "Book {S} for me on {D} at {T} please, the name's {N}.",
        "I'm {N}. I'd like {S} on {D} at {T} if you have room.",
    ),
    "reschedule": (
        "Hi, {N} calling. Can you move my appointment to {D} at {T}?",
        "It's {N}, I'd like to move my booking to {D} at {T} instead.",
        "Could you change my appointment to {D} at {T}? This is {N} speaking.",
        "I need to move my appointment to {D} at {T}, the booking is under {N}.",
        "{N} speaking, please reschedule me to {D} at {T}.",
    ),
    "cancel": (
        "Hi, it's {N}. I have to cancel my appointment on {D}.",
        "Please cancel my {D} booking, it's under {N}.",
        "{N} calling, I won't be able to come on {D}, can you cancel it?",
        "Could you cancel the appointment I have on {D}? My name's {N}.",
    ),
    "order_status": (
        "Could you check on order {O} for me?",
        "I'm calling about an order, the number is {O}.",
        "What's happening with order {O}?",
        "Has my order {O} arrived yet?",
    ),
    "readback_phone": (
        "You can reach me on {P}.",
        "The best number to call me back is {P}.",
        "My mobile number is {P}.",
    ),
    "hours": (
        "Could you tell me your hours on {D}?",
        "What hours are you open {D}?",
        "How early do you open on {D}?",
    ),
}
# a name given after the shop asked for it (book_ask_name): the second turn's phrasings
FOLLOWUPS = ("{N}.", "It's {N}.", "Yeah, {N}, thanks.", "Put it down for {N}, please.", "Sure, {N}.")
FOLLOWUP_ASKS = ("I'd like {S} on {D} at {T}.", "Do you have {S} free on {D} at {T}?")
COUNTS = {"book": 60, "reschedule": 60, "cancel": 50, "book_name_followup": 40, "order_status": 50,
          "readback_phone": 30, "hours": 20}

# The common-name class: first names common in English-speaking countries (Zipf >= open_values.RARE_ZIPF in
# wordfreq's English list, so the rare-word rule does not catch them in lower case). Not disjoint from every
# training source like the names above: faker's English locales feed the open-names corpus (`names_train.txt`)
# and most of these are in the extra-word pool (engines/shop/extra_words.py), so the shipped weights met them as
# added words, never as a caller's name; none is one of the shop's 40. A list is fine here, for evaluation only.
COMMON_NAMES = (
    "tom", "daniel", "oliver", "clara", "emily", "sarah", "james", "liam", "chloe", "olivia",  # UK, US, IE, AU
    "michael", "jennifer", "jessica", "ashley", "tyler", "madison", "brian", "jason", "megan",  # US
    "harry", "charlie", "sophie", "lucy", "amelia", "oscar", "thomas",  # UK
    "sean", "patrick", "claire", "kate",  # Ireland
    "mitchell", "brooke", "josh", "luke",  # Australia, New Zealand
    "ryan", "emma", "noah", "dylan", "nathan", "rachel", "amy", "matthew", "andrew", "lauren", "molly",  # Canada
)
COMMON_SEED = 4242
# the set's own phrasings again, and the self-introductions callers use most ("this is NAME", "my name is NAME",
# booking "under NAME"), none a corpus template (tests/engines/eval/test_unseen.py checks it)
COMMON_TEMPLATES: dict[str, tuple[str, ...]] = {
    "book": TEMPLATES["book"] + ("This is {N}, could you book me {S} on {D} at {T}?",
                                 "I'd like {S} on {D} at {T}, my name is {N}.",
                                 "Can I get {S} on {D} at {T}? Put it under {N}."),
    "reschedule": TEMPLATES["reschedule"] + ("Hi, this is {N}. Could you change my appointment to {D} at {T}?",
                                             "Could you change my appointment to {D} at {T}? My name is {N}."),
    "cancel": TEMPLATES["cancel"] + ("This is {N}, please cancel my {D} booking.",
                                     "I have to cancel my appointment on {D}, my name is {N}."),
}
COMMON_FOLLOWUPS = FOLLOWUPS + ("Yes, my name is {N}.",)
COMMON_COUNTS = {"book": 16, "reschedule": 16, "cancel": 14, "book_name_followup": 14}

_UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = {10: "ten", 11: "eleven", 12: "twelve"}
_THIRTY = "thirty"


def _word(h: int) -> str:
    return _TEENS.get(h) or _UNITS[h]


def time_forms(time: str) -> dict[str, str]:
    """Ways a recogniser writes one of the workshop's slots ("1 30 pm"): Whisper's and a spoken form's."""
    parts = time.split()
    h, ampm = int(parts[0]), parts[-1]
    m = int(parts[1]) if len(parts) == 3 else 0
    h24 = h + 12 if ampm == "pm" and h != 12 else h
    up = ampm.upper()
    dots = f"{ampm[0]}.m."
    hm = f"{h}:{m:02d}" if m else f"{h}"
    spoken = f"{_word(h)} {_THIRTY} {ampm}" if m else f"{_word(h)} {ampm}"
    whisper = {"plain": f"{hm} {up}", "colon": f"{h}:{m:02d} {up}", "dots": f"{hm} {dots}",
               "colon_dots": f"{h}:{m:02d} {dots}", "glued": f"{hm}{ampm}", "24h": f"{h24}:{m:02d}"}
    lower = {"spoken": spoken, "spoken_letters": spoken.replace(ampm, f"{ampm[0]} m")}
    for fs in (whisper, lower):  # clock forms said without am or pm
        if m:
            fs["half_past"] = f"half past {_word(h)}"
        else:
            fs["oclock"] = f"{_word(h)} o'clock"
    forms = {"whisper": whisper, "lower": lower}
    return {f"{style}:{k}": v for style, fs in forms.items() for k, v in fs.items()}


def number_forms(digits: str, style: str) -> dict[str, str]:
    """Ways a recogniser writes a number: joined, grouped, spaced (Whisper); spoken digits (lower case)."""
    if style == "whisper":
        forms = {"joined": digits, "grouped": f"{digits[:3]} {digits[3:]}", "spaced": " ".join(digits)}
        return forms | ({"hyphen": f"{digits[:3]}-{digits[3:]}"} if len(digits) == 7 else {})  # a phone's
    zero = ("oh", "zero")
    return {"spoken": " ".join(_UNITS[int(d)] if d != "0" else zero[0] for d in digits),
            "spoken_zero": " ".join(_UNITS[int(d)] for d in digits)}


def _lower(text: str) -> str:
    """A lower-case recogniser's text: no punctuation, no capitals (apostrophes kept, as pocketsphinx's)."""
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split())


def _names(r: random.Random) -> Callable[[], tuple[str, str]]:
    pool = list(unseen_names())
    faker = [n for s, n in pool if s == "faker"]
    made = [n for s, n in pool if s == "made_up"]
    # two in three from faker's unseen locales, one in three made up
    return lambda: ("faker", r.choice(faker)) if r.random() < 2 / 3 else ("made_up", r.choice(made))


def _common_names(r: random.Random) -> Callable[[], tuple[str, str]]:
    return lambda: ("common", r.choice(COMMON_NAMES))


def build(seed: int = SEED) -> list[dict[str, Any]]:
    """The set's prompts as `--prompts` lines: prompt, expect, history (earlier turns), tags. The common-name
    class comes after the rest, from its own seed, so the rows before it stay as they were."""
    r = random.Random(seed)
    rows = _rows(r, COUNTS, _names(r), TEMPLATES)
    rc = random.Random(COMMON_SEED)
    return rows + _rows(rc, COMMON_COUNTS, _common_names(rc), COMMON_TEMPLATES, COMMON_FOLLOWUPS)


def _rows(r: random.Random, counts: dict[str, int], name: Callable[[], tuple[str, str]],
          templates: dict[str, tuple[str, ...]], followups: tuple[str, ...] = FOLLOWUPS) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for intent, count in counts.items():
        for i in range(count):
            style = "whisper" if i % 2 == 0 else "lower"
            day = r.choice(B.DAYS[:6])
            time = r.choice(B.TIMES)
            service = r.choice(B.SERVICES)
            src, nm = name()
            tforms = {k: v for k, v in time_forms(time).items() if k.startswith(style)}
            tkey = r.choice(sorted(tforms))
            digits = "".join(r.choice("0123456789") for _ in range(5))
            phone = "555" + "".join(r.choice("0123456789") for _ in range(4))
            nkey, ntext = r.choice(sorted(number_forms(digits, style).items()))
            pkey, ptext = r.choice(sorted(number_forms(phone, style).items()))
            fill = r.choice(FILLERS)
            slots_text = {"N": nm.capitalize(), "D": day.capitalize(), "T": tforms[tkey], "S": service,
                          "O": ntext, "P": ptext}
            history: list[dict[str, str]] = []
            tags = [f"style:{style}"]
            if intent == "book_name_followup":
                ask = r.choice(FOLLOWUP_ASKS).format(**slots_text)
                history = [{"role": "user", "content": ask if style == "whisper" else _lower(ask)},
                           {"role": "assistant", "content": corpus.render("book_ask_name", service=service, day=day,
                                                                          time=time)}]
                text = r.choice(followups).format(**slots_text)
                fill = ""
            else:
                text = r.choice(templates[intent]).format(**slots_text)
                if fill.endswith(", ") and not text.startswith(("I ", "I'", slots_text["N"])):
                    text = text[0].lower() + text[1:]  # "Sorry, can I ..." as Whisper writes it
                text = fill + text
            if style == "lower":
                text = _lower(text)
            expect: dict[str, Any] = {"intent": intent}
            if intent in ("book", "book_name_followup", "reschedule"):
                expect["slots"] = {"name": nm, "day": day, "time": time}
                tags += [f"name:{src}", f"time:{tkey.split(':', 1)[1]}"]
            elif intent == "cancel":
                expect["slots"] = {"name": nm, "day": day}
                tags.append(f"name:{src}")
            elif intent == "order_status":
                expect["slots"] = {"number": digits}
                tags.append(f"number:{nkey}")
            elif intent == "readback_phone":
                expect["slots"] = {"number": phone}
                tags.append(f"number:{pkey}")
            else:
                expect["slots"] = {"day": day}
            if fill:
                tags.append("filler")
            row: dict[str, Any] = {"prompt": text, "expect": expect}
            if history:
                row["history"] = history
            row["tags"] = tags
            out.append(row)
    return out


def form_probe(engine: Any, n: int = 60, seed: int = 5) -> dict[str, dict[str, int]]:
    """Form alone: `n` reschedule and `n` order requests in the corpus's phrasing with a shop name, each with one
    time or number form, answered with and without the engine's input normaliser (`normalize_input`)."""
    r = random.Random(seed)
    rows: dict[str, dict[str, int]] = {}
    for _ in range(n):
        day, time, name = r.choice(B.DAYS[:6]), r.choice(B.TIMES), r.choice(B.NAMES)
        forms = time_forms(time)
        k = r.choice(sorted(forms))
        style = k.split(":")[0]
        t = f"this is {name} can you move my appointment to {day} at {forms[k]}"
        d = "".join(r.choice("0123456789") for _ in range(5))
        nk, nt = r.choice(sorted(number_forms(d, style).items()))
        o = f"can you check my order {nt}"
        if style == "whisper":
            t = f"This is {name.capitalize()}, can you move my appointment to {day.capitalize()} at {forms[k]}?"
            o = f"Can you check my order {nt}?"
        for text, want, key in ((t, Expect("reschedule", {"name": name, "day": day, "time": time}), "time:" + k),
                                (o, Expect("order_status", {"number": d}), f"number:{style}:{nk}")):
            row = rows.setdefault(key, {"n": 0, "raw": 0, "normalised": 0})
            row["n"] += 1
            for norm, col in ((False, "raw"), (True, "normalised")):
                engine.normalize_input = norm
                row[col] += score_reply(engine.answer([{"role": "user", "content": text}]), want).correct
    engine.normalize_input = True
    return dict(sorted(rows.items()))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Write the unseen-caller set, or probe a model on number and time forms.")
    ap.add_argument("--probe", default=None, help="a model (ar, diffusion or a folder): the form probe, raw and "
                                                  "normalised, instead of writing the set")
    ap.add_argument("--n", type=int, default=60)
    a = ap.parse_args(argv)
    if a.probe:
        from engines.local.engine import open_engine

        print(json.dumps(form_probe(open_engine(a.probe), a.n)))
        return
    rows = build()
    FILE.write_text("".join(json.dumps(x) + "\n" for x in rows))
    print(f"{len(rows)} prompts -> {FILE}")


if __name__ == "__main__":
    main()
