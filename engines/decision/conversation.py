"""`turn_complete` examples from real callers' turns (engines/decision/transcripts.py), mixed with the shop corpus.

The labelling rule, for one caller turn of the derived file:

- the whole turn is complete (yes): the caller stopped there and the other side spoke next;
- every prefix cut at a word boundary is cut off (no), except
  - a prefix ending where the raw text ended a sentence (. ? !) or, in spoken sources, where the caller
    paused between segments (`stops`): there the caller *could* have stopped, and did not;
  - a prefix that is a short standalone answer ("yes", "okay", "thank you": `STANDALONE`) or equal to a whole
    turn of any source used (the shop corpus's complete turns included): the same words are somewhere a
    complete turn.
  Those are ambiguous and left out, not labelled complete: the caller went on, so "complete" would be wrong
  for when to answer as often as it is right, and no text may carry both labels.

Variant (`stops_complete`, off by default): the prefixes at a stop and the standalone answers among the prefixes
are labelled complete instead of left out (a written sentence end is a place a turn can end), and every such
prefix of any turn joins the whole turns, so a prefix that is somewhere a finished sentence ("i would like a
latte" of "I would like a latte. With oat milk.") is never a cut-off anywhere. Tried and not kept: trained so
(`python -m engines.decision.train --conversation 1 --stops-complete 1 --vocab-size 1024 --max-minutes 35`), the
model did worse than without it on the held-out Harper Valley turns (balanced accuracy 0.620 against 0.648) and on
the probe (62.5% against 75%), measured 2026-12-03 on the 2-core CPU with `python -m engines.decision.held_out`.

Labelled moments of real calls (`read_points`, `call_examples`; the source `harper_valley_calls` in `shares`): each
point is what happened at that moment of a call, a pause the caller went on after (not complete) or the end of
their turn (complete), the eot-bench labels, kept even where the same words are elsewhere the other label: the
model then learns how often such words end a turn.

The mix (`mixed`): the `interruption` task entirely from the shop corpus (engines/decision/corpus.py), as the
shipped model learnt it; `turn_complete` from the shop corpus and each conversational source by `shares`, so
that no source dominates. Dialogues are split into train and held-out by a hash of their id (`HELDOUT_SHARE`),
so a held-out figure never sees a turn of a training dialogue.

    python -m engines.decision.conversation --n 20 --seed 0
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from engines.decision import corpus as dc
from engines.decision.transcripts import TranscriptTurn, read
from engines.local.input_norm import normalize

DATA = Path(__file__).resolve().parent / "data" / "conversation.tsv"
HELDOUT_SHARE = 0.1
# the shop's share of turn_complete, then each conversational source's; harper_valley is held out entirely
SHARES: dict[str, float] = {"shop": 0.4, "taskmaster4": 0.35, "taskmaster3": 0.25}
CONTEXT_SHARE = 0.3  # the live path asks without the bot's line; some examples carry it, as the shop's do
NOISE_SHARE = 0.3  # recogniser-like damage (engines.decision.corpus.add_noise) on longer conversational turns
# Share of complete conversational examples that are a short standalone answer ("yes", "no thanks", "sure"). The
# derived file keeps each distinct turn once, which drops how often callers answer with one or two words (a
# tenth of Harper Valley's distinct caller turns are that short, and repeated ones far more), while prefixes
# such as "yes i would" are cut-offs in every dialogue: trained without this, a model judged a bare "yes" cut off
# (P(complete) 0.20).
SHORT_SHARE = 0.0  # tried at 0.15 and not kept (docs/decisions/decision-conversation-corpus.md)

# short answers that stand alone as a whole turn: as a prefix of a longer turn they are ambiguous
STANDALONE = frozenset(normalize(s) for s in (
    "yes", "yeah", "yep", "yup", "yes please", "yeah sure", "no", "nope", "no thanks", "no thank you", "okay", "ok",
    "okay thanks", "okay thank you", "okay great", "sure", "sure thing", "right", "alright", "all right", "thanks",
    "thank you", "thank you so much", "thanks so much", "great", "great thanks", "perfect", "fine", "good", "cool",
    "awesome", "correct", "exactly", "that is right", "that is correct", "that is fine", "that is great",
    "sounds good", "that sounds good", "that sounds great", "i see", "got it", "hello", "hi", "hey", "hi there",
    "hello there", "bye", "goodbye", "bye bye", "please", "of course", "absolutely", "definitely", "nothing else",
    "that is it", "that is all", "that will be all", "wonderful", "excellent", "oh okay", "yes it is", "no it is not",
    "yes that is right", "yes that is correct", "yes i do", "no i do not", "i do", "it is", "sorry",
))


_ANSWER_DEPENDS_ON_QUESTION = frozenset({"it is", "yes it is"})


def is_heldout(dialog: str) -> bool:
    """A dialogue's split, from a hash of its id (stable across runs and machines)."""
    return int(hashlib.sha256(dialog.encode()).hexdigest()[:8], 16) % 1000 < HELDOUT_SHARE * 1000


def cut_prefixes(turn: TranscriptTurn, whole: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The turn's prefixes labelled cut off (module doc): every word boundary but the stops, the standalone
    answers and any whole turn in `whole`."""
    words = turn.text.split()
    out = []
    for k in range(1, len(words)):
        if k in turn.stops:
            continue
        p = " ".join(words[:k])
        if p in STANDALONE or p in whole:
            continue
        out.append(p)
    return out


def stop_prefixes(turn: TranscriptTurn) -> list[str]:
    """The turn's prefixes at its stops and those that are standalone answers: complete under `stops_complete`
    (not "it is", "yes it is": after "what name should i put it under" the shop corpus has them cut off)."""
    words = turn.text.split()
    return [p for k in range(1, len(words)) if (p := " ".join(words[:k])) not in _ANSWER_DEPENDS_ON_QUESTION
            and (k in turn.stops or p in STANDALONE)]


def labelled(turn: TranscriptTurn, whole: frozenset[str] | set[str] = frozenset()) -> list[tuple[str, bool]]:
    """The whole turn (complete) and each cut prefix (cut off), in order."""
    return [(p, False) for p in cut_prefixes(turn, whole)] + [(turn.text, True)]


def _example(r: random.Random, turns: Sequence[TranscriptTurn], whole: frozenset[str], answer: bool,
             stops_complete: bool = False) -> dc.DecisionExample:
    for _ in range(50):
        t = r.choice(turns)
        if answer and SHORT_SHARE and r.random() < SHORT_SHARE:  # no draw at 0: the same stream as before
            text = r.choice(sorted(STANDALONE))  # after the other side's line, as the turn it stands for
        elif answer:
            text = r.choice([t.text, *stop_prefixes(t)]) if stops_complete else t.text
        else:
            cuts = cut_prefixes(t, whole)
            if not cuts:
                continue
            text = r.choice(cuts)
        if len(text.split()) > 2 and r.random() < NOISE_SHARE:
            text = dc.add_noise(r, text)  # keeps the last word: the end decides
        ctx = t.context if r.random() < CONTEXT_SHARE else ""
        return dc.DecisionExample("turn_complete", text, answer, f"{t.source}_{'turn' if answer else 'cut'}", ctx)
    raise ValueError("no turn of these sources has a prefix to cut")


def conversational(turns: Sequence[TranscriptTurn], n: int, seed: int, split: str = "train",
                   whole: frozenset[str] | None = None, stops_complete: bool = False) -> list[dc.DecisionExample]:
    """n `turn_complete` examples, half complete turns (with `stops_complete`, or a prefix at a stop) and half cut
    prefixes, from `split`'s dialogues."""
    if split not in dc.SPLITS:
        raise ValueError(f"split {split!r}: expected one of {dc.SPLITS}")
    pool = [t for t in turns if is_heldout(t.dialog) == (split == "heldout")]
    if not pool:
        raise ValueError(f"no {split} dialogues among {len(turns)} turns")
    whole = whole if whole is not None else whole_turns(turns, stops_complete)
    r = random.Random(seed)
    return [_example(r, pool, whole, r.random() < 0.5, stops_complete) for _ in range(n)]


def whole_turns(turns: Sequence[TranscriptTurn], stops_complete: bool = False) -> frozenset[str]:
    """Texts that are somewhere a complete turn: every whole turn (and, with `stops_complete`, every stop prefix)."""
    out = {t.text for t in turns}
    if stops_complete:
        out |= {p for t in turns for p in stop_prefixes(t)}
    return frozenset(out)


CALL_POINTS = "harper_valley_calls"  # the source name of `read_points`'s examples in `shares`


@dataclass(frozen=True)
class CallPoint:
    """A labelled moment of a real call (`voicelab.turnbench.call_timing.export_examples`): the caller's words so
    far at a pause after which they went on (not complete: hold) or at their turn's end (complete)."""

    call: str
    complete: bool
    text: str
    context: str = ""


def read_points(path: Path) -> list[CallPoint]:
    """The exported points file: call, 1 (end) or 0 (pause), words, the agent's line; tab-separated."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        cols = line.split("\t")
        if len(cols) != 4 or cols[1] not in ("0", "1"):
            raise ValueError(f"{path}:{n}: expected call, 0 or 1, words, context (tab-separated)")
        out.append(CallPoint(cols[0], cols[1] == "1", normalize(cols[2]), normalize(cols[3])))
    return out


def call_examples(points: Sequence[CallPoint], n: int, seed: int, split: str) -> list[dc.DecisionExample]:
    """n `turn_complete` examples drawn from the points of `split`'s calls, half ends and half pauses. Unlike the
    transcripts' labels, a pause the caller went on after is labelled not complete even where the words are a
    sentence: the label is what happened at that moment of the call, as eot-bench labels its points."""
    pool = [p for p in points if is_heldout(p.call) == (split == "heldout") and p.text]
    ends, holds = [p for p in pool if p.complete], [p for p in pool if not p.complete]
    if not ends or not holds:
        raise ValueError(f"no {split} call points with both labels")
    r = random.Random(seed)
    out = []
    for _ in range(n):
        p = r.choice(ends if r.random() < 0.5 else holds)
        ctx = p.context if r.random() < CONTEXT_SHARE else ""
        out.append(dc.DecisionExample("turn_complete", p.text, p.complete, f"call_{'end' if p.complete else 'hold'}",
                                      ctx))
    return out


def mixed(n: int, seed: int, split: str = "train", turns: Sequence[TranscriptTurn] | None = None,
          shares: dict[str, float] | None = None, stops_complete: bool = False,
          points: Sequence[CallPoint] = ()) -> list[dc.DecisionExample]:
    """n examples: half `interruption` (the shop corpus), half `turn_complete` split between the shop corpus and
    the conversational sources by `shares` (module doc); shuffled, reproducible from the seed."""
    shares = shares or SHARES
    turns = list(turns) if turns is not None else read(DATA)
    bad = [s for s in shares if s not in ("shop", CALL_POINTS) and not any(t.source == s for t in turns)]
    if bad:
        raise ValueError(f"source {bad[0]!r}: no turns of it in the conversational data")
    used = [t for t in turns if t.source in shares]
    n_tc = n // 2
    total = sum(shares.values())
    out = dc.generate(n - n_tc, seed, split, ("interruption",))
    counts = {s: round(n_tc * v / total) for s, v in shares.items()}
    shop = dc.generate(counts.pop("shop", 0), seed + 1, split, ("turn_complete",))
    out += shop
    # a shop turn labelled complete ("that is all thank you") is never a conversational cut-off
    whole = whole_turns(used, stops_complete) | {u.text for u in shop if u.answer}
    if CALL_POINTS in counts:
        out += call_examples(points, counts.pop(CALL_POINTS), seed + 99, split)
    for i, (s, k) in enumerate(sorted(counts.items())):
        out += conversational([t for t in used if t.source == s], k, seed + 2 + i, split, whole, stops_complete)
    random.Random(seed).shuffle(out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description="Print the mixed decision corpus as JSON lines.")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--split", choices=dc.SPLITS, default="train")
    ap.add_argument("--data", type=Path, default=DATA)
    a = ap.parse_args()
    if not a.data.is_file():
        raise SystemExit(f"error: --data {a.data}: no such file")
    for u in mixed(a.n, a.seed, a.split, read(a.data)):
        print(json.dumps(asdict(u)))


if __name__ == "__main__":
    main()
