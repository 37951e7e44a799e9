"""A recogniser-like noise model: what a speech recogniser makes of a caller's words.

Three kinds of error, as seen in pocketsphinx transcripts of real calls: dropped words,
inserted/substituted short function words, and sound-alike words ("cancel" -> "council",
"friday" -> "fry day"). Plain Python, seeded through the caller's `random.Random`.

`garble` adds light noise that leaves the protected words (slot values, intent cues) intact, so
the request keeps its meaning; `damage` destroys at least one essential word, so the request is
only half understood and the right answer is a clarifying question, never a tool call.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass

# words a recogniser confuses, by sound; values are what it writes instead
SOUND_ALIKE: dict[str, tuple[str, ...]] = {
    "cancel": ("council", "can sell", "cancer"), "book": ("look", "brook", "bug"), "booking": ("looking", "cooking"),
    "appointment": ("a point meant", "anointment"), "reschedule": ("re schedule", "she jewel"),
    "move": ("moo", "movie"), "change": ("chain", "chase"), "order": ("border", "odor", "all the"),
    "open": ("oven", "hoping"), "close": ("clothes", "closed", "cloves"), "hours": ("ours", "flowers"),
    "time": ("tom", "thyme", "dime"), "monday": ("one day", "mon day"), "tuesday": ("choose day", "two stay"),
    "wednesday": ("when stay", "wins day"), "thursday": ("thirst day", "hers day"), "friday": ("fry day", "fried a"),
    "saturday": ("sat a day", "better day"), "sunday": ("some day", "sun they"), "am": ("and", "i am"),
    "pm": ("be em", "pea"), "name": ("aim", "game"), "address": ("a dress", "undress"),
    "located": ("low cated", "rotated"), "status": ("stat is", "statues"), "shipped": ("ship", "chipped"),
    "number": ("lumber", "numb"),
    "1": ("won",), "2": ("to", "too"), "3": ("tree",), "4": ("for",), "5": ("hive",), "6": ("sticks",),
    "7": ("heaven",), "8": ("ate",), "9": ("nein",), "0": ("oh",),
    "anna": ("and a",), "ben": ("been", "then"), "carla": ("car la",), "david": ("day bid",), "elena": ("hello na",),
    "frank": ("prank",), "grace": ("race",), "hugo": ("you go",), "irene": ("i ring",), "jack": ("jacket",),
    "karen": ("caring",), "leo": ("lee oh",), "maria": ("marry a",), "nick": ("knit",), "olga": ("ole ga",),
    "peter": ("pizza",), "quinn": ("queen",), "rosa": ("rose a",), "sam": ("some",), "tina": ("tea na",),
    "will": ("well",), "zoe": ("so we",), "alex": ("a legs",), "bella": ("bell a",), "chris": ("kiss",),
    "diana": ("die anna",), "ethan": ("eat an",), "fiona": ("fee own a",), "george": ("gorge",),
    "hannah": ("hanna",), "ivan": ("i von",), "julia": ("jewel ya",), "kevin": ("cave in",),
    "laura": ("lower",), "mike": ("my",), "nora": ("nor a",), "umar": ("you more",), "vera": ("very",),
    "xena": ("see na",), "yusuf": ("you soft",), "sam's": ("sams",),
}
# short words a recogniser inserts or substitutes where it heard noise
FUNCTION_WORDS = ("the", "a", "and", "it", "is", "to", "of", "in", "uh", "that", "so", "oh", "i", "on")


@dataclass(frozen=True)
class NoiseConfig:
    drop: float = 0.08  # per word: dropped
    substitute: float = 0.05  # per word: replaced by a short function word
    insert: float = 0.04  # per word: a function word inserted after it
    sound_alike: float = 0.1  # per word with a known confusion: replaced by a sound-alike


def garble(text: str, r: random.Random, cfg: NoiseConfig = NoiseConfig(),
           protect: Collection[str] = ()) -> str:
    """Light recogniser noise on every word not in `protect`; protected words pass unchanged."""
    out: list[str] = []
    for w in text.split():
        if w not in protect:
            x = r.random()
            if x < cfg.drop:
                continue
            if x < cfg.drop + cfg.substitute:
                w = r.choice(FUNCTION_WORDS)
            elif w in SOUND_ALIKE and x < cfg.drop + cfg.substitute + cfg.sound_alike:
                w = r.choice(SOUND_ALIKE[w])
        out.append(w)
        if r.random() < cfg.insert:
            out.append(r.choice(FUNCTION_WORDS))
    return " ".join(out) if out else text


def damage(text: str, r: random.Random, essential: Sequence[str], cfg: NoiseConfig = NoiseConfig(),
           as_function_word: float = 0.0, plain: Collection[str] = ()) -> str:
    """Destroy at least one essential word (dropped or heard as a sound-alike), plus light noise elsewhere.

    `essential` lists the words the request cannot be understood without (slot values, the intent
    cue); the ones present in `text` are candidates. Raises ValueError if none is present.
    `as_function_word`: the share of destroyed words heard as a short function word instead (the
    recogniser's substitution error, which leaves "monday 3 30 pm" as "monday the 30 pm": a request that
    still looks whole). Off by default, so the out-of-domain set (engines/shop/ood.py) stays as it was.
    `plain`: words destroyed only by dropping or a function word, never a sound-alike (names, when any word
    may be a name).
    """
    words = text.split()
    present = [i for i, w in enumerate(words) if w in essential]
    if not present:
        raise ValueError(f"no essential word of {list(essential)} in {text!r}")
    hit = set(r.sample(present, k=1 if len(present) == 1 or r.random() < 0.7 else 2))
    out: list[str] = []
    for i, w in enumerate(words):
        if i in hit:
            if as_function_word and r.random() < as_function_word:
                out.append(r.choice(FUNCTION_WORDS))
            elif w in SOUND_ALIKE and w not in plain and r.random() < 0.6:
                out.append(r.choice(SOUND_ALIKE[w]))
            # else: dropped
        else:
            out.append(w)
    kept = set(essential) - {words[i] for i in hit}
    noisy = garble(" ".join(out), r, cfg, protect=kept)
    return noisy if noisy.strip() else r.choice(FUNCTION_WORDS)
