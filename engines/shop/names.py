"""Callers' first names beyond the shop's 40: what the tiny models learn to copy, and what they are tested on.

A model that has only seen 40 names learns to recognise a list, not to copy a word; a caller called "tom"
then gets "sorry, I did not catch that". The training corpus (engines/shop/corpus.py, `open_names`) draws
names from two offline sources, fixed in `names_train.txt` so the corpus needs no extra package:
- first names of the faker package's `TRAIN_LOCALES` (many languages), kept where they are plain ASCII
  lower-case letters;
- made-up names of a seeded open-syllable generator (`made_up_open`: consonant-vowel syllables, no two
  consonants in a row except one final consonant), so that the model also meets names no census holds.

The unseen-caller evaluation (engines/eval/unseen.py) uses other sources, disjoint by construction: faker's
`UNSEEN_LOCALES` and a closed-syllable generator (`made_up_cluster`, every name has a consonant cluster the
open-syllable generator cannot write), both filtered against every training name.

Both lists are written by `engines/shop/word_lists.py` (faker is a training-only extra:
`pip install -e .[train]`)

    python -m engines.shop.word_lists names
"""

from __future__ import annotations

import importlib
import random
import re
from functools import cache
from pathlib import Path

from engines.shop import business as B

HERE = Path(__file__).parent
TRAIN_FILE = HERE / "names_train.txt"
UNSEEN_FILE = HERE.parent / "eval" / "unseen_names.txt"

# faker person-provider locales whose first names train the models (en: ~6,800 names of the US census)
TRAIN_LOCALES = ("en", "en_GB", "en_US", "en_IE", "en_NZ", "en_KE", "de_DE", "de_CH", "fr_FR", "fr_BE", "es_ES",
                 "es_CL", "it_IT", "nl_NL", "nl_BE", "pt_BR", "pl_PL", "sv_SE", "da_DK", "tr_TR", "ro_RO", "id_ID",
                 "ga_IE")
# locales no training name comes from: the unseen-caller evaluation's names
UNSEEN_LOCALES = ("fi_FI", "hu_HU", "cs_CZ", "sk_SK", "sl_SI", "hr_HR", "et_EE", "lt_LT", "lv_LV", "is_IS",
                  "yo_NG", "sw", "zu_ZA", "tw_GH", "uz_UZ", "az_AZ", "en_IN", "en_PK", "ig_NG", "ha_NG")
N_MADE_UP_TRAIN = 4000
MADE_UP_TRAIN_SEED = 20261
_NAME = re.compile(r"[a-z]{2,12}")
_VOWELS = "aeiou"
_OPEN_ONSETS = "bdfghjklmnprstvwyz"
_FINALS = "lnrs"
_CLUSTER_ONSETS = ("br", "dr", "gr", "kr", "tr", "pl", "kl", "bl", "sk", "st", "sv", "zd", "vl", "gn", "tv",
                   "dv", "mr", "sn")
_CLUSTER_CODAS = ("nk", "rt", "lk", "st", "nd", "rn", "sk", "lt", "mp", "rd")


def faker_first_names(locales: tuple[str, ...]) -> set[str]:
    """First names of faker's person providers for `locales`, plain ASCII lower-case letters only."""
    out: set[str] = set()
    for loc in locales:
        prov = importlib.import_module(f"faker.providers.person.{loc}").Provider
        for attr in ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary"):
            v = next((c.__dict__[attr] for c in prov.__mro__ if attr in c.__dict__), None)
            if v is None or isinstance(v, property):
                continue
            out |= {n.lower() for n in v if _NAME.fullmatch(n.lower())}
    return out


def made_up_open(r: random.Random) -> str:
    """A training-side made-up name: 2-3 consonant-vowel syllables, maybe one final consonant ("kavemi")."""
    s = "".join(r.choice(_OPEN_ONSETS) + r.choice(_VOWELS) for _ in range(r.choice((2, 2, 3))))
    return s + (r.choice(_FINALS) if r.random() < 0.3 else "")


def made_up_cluster(r: random.Random) -> str:
    """An evaluation-side made-up name: closed syllables with consonant clusters ("brenkastol")."""
    first = r.choice(_CLUSTER_ONSETS) + r.choice(_VOWELS) + r.choice(_CLUSTER_CODAS)
    return first + (r.choice(_VOWELS) + r.choice(_OPEN_ONSETS) if r.random() < 0.5 else "")


def open_syllable_shape(name: str) -> bool:
    """Whether `made_up_open` could have written this name (no two consonants in a row but a final one)."""
    return re.fullmatch(rf"(?:[{_OPEN_ONSETS}][{_VOWELS}]){{2,3}}[{_FINALS}]?", name) is not None


def build_train(stop: set[str]) -> list[tuple[str, str]]:
    names = sorted(faker_first_names(TRAIN_LOCALES) - stop - set(B.NAMES))
    r = random.Random(MADE_UP_TRAIN_SEED)
    made: set[str] = set()
    while len(made) < N_MADE_UP_TRAIN:
        n = made_up_open(r)
        if n not in stop and n not in names and n not in B.NAMES:
            made.add(n)
    return [("faker", n) for n in names] + [("made_up", n) for n in sorted(made)]


def build_unseen(stop: set[str], train: set[str], n_made_up: int = 400, seed: int = 7070) -> list[tuple[str, str]]:
    """Names no training source holds: faker's unseen locales and cluster names, minus every training name."""
    banned = stop | train | set(B.NAMES)
    names = sorted(n for n in faker_first_names(UNSEEN_LOCALES) - banned if not open_syllable_shape(n))
    r = random.Random(seed)
    made: set[str] = set()
    while len(made) < n_made_up:
        n = made_up_cluster(r)
        if n not in banned and n not in names:
            made.add(n)
    return [("faker", n) for n in names] + [("made_up", n) for n in sorted(made)]


def _read(path: Path) -> tuple[tuple[str, str], ...]:
    return tuple(tuple(line.split()) for line in path.read_text().splitlines() if line.strip())  # type: ignore[misc]


@cache
def train_names() -> tuple[str, ...]:
    """Every training name beyond the shop's 40 (both sources)."""
    return tuple(n for _, n in _read(TRAIN_FILE))


@cache
def unseen_names() -> tuple[tuple[str, str], ...]:
    """(source, name) of the unseen-caller evaluation."""
    return _read(UNSEEN_FILE)


def open_name(r: random.Random) -> str:
    """A training name beyond the shop's 40 (faker's or made up)."""
    return r.choice(train_names())
