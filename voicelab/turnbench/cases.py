"""The turn bench's generated cases: a pause corpus and barge-in sounds, as data (`corpus.json`), from a seeded
generator. Plain Python.

Pause corpus (`TurnCase`): `N_TURNS` (400) caller turns, each a sentence from `voicelab.turnbench.sentences` said
with one pause inside it, so each gives one mid-turn pause and one true end: 400 of each. Why 400: at a 5 %
false cut-off rate the 95 % Wilson interval over 400 pauses is 3.3-7.6 %, narrow enough to tell 2 % from 5 %
and 5 % from 10 %; with 100 it would be 2.2-11 %.

- Cut points: `P_COMPLETE` (40 %) of the pauses follow a complete sentence ("i lost my card / on monday"), the
  hard case; the rest fall where the words so far are not a sentence, after a function word ("i want to /") or
  a content word ("my train /").
- Pause length: log-uniform over 0.2-2.5 s (median 0.71 s): within-turn pauses are skewed to short ones, with
  a long tail of thinking pauses.
- Prosody before the pause: an incomplete prefix is read with a comma (espeak-ng's continuation rise) half of
  the time and plainly (a falling, final-sounding tone) otherwise; a complete prefix ends with a full stop.
- Voices: eight espeak-ng voices none of the bundled callers uses (`TURN_VOICES`); line conditions
  (`CONDITIONS`): clean, an 8 kHz telephone line (300-3400 Hz, G.711 mu-law, line noise), a noisy line, a
  reverberant room.

Barge-in sounds (`BargeCase`): what a caller says over the bot's reply, in six more unseen voices and the same
lines: backchannels ("mhm", "uh huh", "yeah", ...), which must not stop the bot, and short interruptions
("wait", "stop", "hold on", ...), which must. `MISREADS` adds backchannels whose recogniser reading is fixed
to a misreading reported from real runs ("i make him" for "mhm").

    python -m voicelab.turnbench.cases --write   # regenerate corpus.json (tests check it matches)
"""

from __future__ import annotations

import argparse
import json
import math
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from voicelab.turnbench.sentences import cut_sentence

SEED = 20261202
N_TURNS = 400
P_COMPLETE = 0.4
PAUSE_RANGE_S = (0.2, 2.5)
CORPUS_FILE = Path(__file__).with_name("corpus.json")
CACHE_ROOT = Path(__file__).resolve().parents[2] / ".cache" / "turnbench"  # the score cache (git-ignored)

# espeak-ng voice, words per minute, pitch: none of them is a voice of the bundled fixtures
TURN_VOICES: tuple[tuple[str, int, int], ...] = (
    ("en-us+m1", 165, 50), ("en-us+f1", 175, 55), ("en-gb+m2", 160, 45), ("en-gb-x-rp+f2", 170, 60),
    ("en-us+klatt3", 160, 50), ("en-029+f3", 165, 50), ("en-gb-scotland+m5", 155, 40), ("en-us-nyc+m8", 180, 50),
)
BARGE_VOICES: tuple[tuple[str, int, int], ...] = (
    ("en-us+Andy", 170, 50), ("en-gb-x-gbclan+f5", 165, 55), ("en-us+grandpa", 150, 40),
    ("en-gb-x-gbcwmd+f1", 170, 55), ("en-us+klatt5", 165, 50), ("en-029+m4", 165, 45),
)
CONDITIONS = ("clean", "phone", "noisy", "reverb")
CONDITION_WEIGHTS = (0.3, 0.25, 0.25, 0.2)

BACKCHANNELS = ("mhm", "mm hmm", "uh huh", "yeah", "yes", "right", "okay", "sure", "i see", "got it", "oh okay",
                "alright", "mm", "yep", "uh huh yeah", "okay great")
INTERRUPTIONS = ("wait", "stop", "hold on", "no no", "sorry i meant friday", "can you repeat that",
                 "actually make it two", "excuse me", "that is wrong", "wait a second", "no i said tuesday",
                 "hang on a minute")
# (what was said, what the recogniser made of it): readings reported from runs of the lab
MISREADS: tuple[tuple[str, str], ...] = (
    ("mhm", "i make him"), ("yeah", "yennon"), ("i see", "i b i b i b i"), ("i see", "i p"),
    ("uh huh", "i have"), ("mm hmm", "the"),
)


@dataclass(frozen=True)
class TurnCase:
    id: str
    domain: str
    prefix: str
    rest: str
    kind: str  # "complete", "function" or "content" (sentences.CutSentence.kind)
    pause_s: float
    comma: bool  # the prefix is read with continuation intonation
    voice: str
    wpm: int
    pitch: int
    line: str

    @property
    def text(self) -> str:
        return f"{self.prefix} {self.rest}"


@dataclass(frozen=True)
class BargeCase:
    id: str
    text: str
    kind: str  # "backchannel" or "interruption"
    voice: str
    wpm: int
    pitch: int
    line: str
    reading: str | None = None  # a fixed recogniser reading (a reported misreading); None: the recogniser's own


def generate_turns(n: int = N_TURNS, seed: int = SEED) -> list[TurnCase]:
    rng = random.Random(seed)
    out = []
    lo, hi = PAUSE_RANGE_S
    for i in range(n):
        cut = cut_sentence(rng, P_COMPLETE)
        pause = round(math.exp(rng.uniform(math.log(lo), math.log(hi))), 3)
        voice, wpm, pitch = TURN_VOICES[i % len(TURN_VOICES)]
        line = rng.choices(CONDITIONS, CONDITION_WEIGHTS)[0]
        comma = cut.kind != "complete" and rng.random() < 0.5
        out.append(TurnCase(f"g{i:04d}", cut.domain, cut.prefix, cut.rest, cut.kind, pause, comma, voice,
                            wpm + rng.randint(-10, 10), pitch, line))
    return out


def generate_barge(seed: int = SEED) -> list[BargeCase]:
    rng = random.Random(seed + 1)
    out: list[BargeCase] = []
    i = 0
    for kind, words, copies in (("backchannel", BACKCHANNELS, 3), ("interruption", INTERRUPTIONS, 2)):
        for w in words:
            for _ in range(copies):
                voice, wpm, pitch = rng.choice(BARGE_VOICES)
                out.append(BargeCase(f"b{i:03d}", w, kind, voice, wpm, pitch, rng.choice(CONDITIONS)))
                i += 1
    for said, heard in MISREADS:
        voice, wpm, pitch = rng.choice(BARGE_VOICES)
        out.append(BargeCase(f"b{i:03d}", said, "backchannel", voice, wpm, pitch, rng.choice(CONDITIONS), heard))
        i += 1
    return out


def corpus_document(n: int = N_TURNS, seed: int = SEED) -> dict[str, Any]:
    return {"_about": "generated by voicelab.turnbench.cases (python -m voicelab.turnbench.cases --write); "
                      "see docs/turn-bench.md",
            "seed": seed, "n_turns": n, "p_complete": P_COMPLETE, "pause_range_s": list(PAUSE_RANGE_S),
            "turns": [asdict(c) for c in generate_turns(n, seed)],
            "barge_in": [asdict(c) for c in generate_barge(seed)]}


def load_corpus(path: Path = CORPUS_FILE) -> tuple[list[TurnCase], list[BargeCase]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return [TurnCase(**t) for t in doc["turns"]], [BargeCase(**b) for b in doc["barge_in"]]


def main() -> None:  # pragma: no cover - a maintenance command
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"write {CORPUS_FILE.name}")
    a = ap.parse_args()
    doc = corpus_document()
    text = json.dumps(doc, indent=1) + "\n"
    if a.write:
        CORPUS_FILE.write_text(text, encoding="utf-8")
    else:
        print(text)


if __name__ == "__main__":  # pragma: no cover
    main()
