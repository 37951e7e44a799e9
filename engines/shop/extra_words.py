"""Words a caller adds that the shop's corpus never uses: teach the tiny models that an unknown word is not garble.

A real caller says "Nadeem speaking, please reschedule me to Saturday at 4 pm instead". The corpus never
puts "speaking" or "instead" in a caller's mouth, and the only unknown words the tiny models met in
training were the recogniser's damage to a request (engines/shop/asr_noise.py), answered with a
clarifying question. So they learned "an unknown word means garble" and asked again.

The remedy is data in which an unknown word carries no label: with probability `share`, a caller's
request gets one or two runs of common English words (wordfreq's list) inserted at word boundaries, in
every kind of request alike (answered requests, half-understood ones, off-topic ones). Whether to call a
tool then depends only on whether the request's own cue words and slot values are there, which is what
the model should look at. Two exceptions, found in the first trial (engines/tiny/TRAINING.md): a social
formula ("hi there", "thanks bye": `WHOLE_MESSAGE`) gets no added words, since "hi there" with a sentence
added is another message, and the model trained that way greeted callers who said something off-topic; and
half of the touched off-topic examples become a sentence of pool words only (`unknown_sentence`), so that a
sentence of nothing but unknown words is an off-topic one. The pool (`extra_words.txt`) leaves out
- every word the corpus itself uses (`corpus.corpus_words`): the pool is new words only;
- words that change what a request means when added: negations, numbers, days, months, times of day;
- every word of the evaluation sets (the unseen-caller set `engines/eval/unseen.jsonl` and the
  out-of-domain set `engines/shop/ood.py`), so that those sets still measure words never seen in
  training (tests/engines/shop/test_extra_words.py checks it);
- rare words (wordfreq Zipf below `open_values.RARE_ZIPF`): those get a stand-in name at inference.

    python -m engines.shop.word_lists extra-words     # rewrites extra_words.txt (engines/shop/word_lists.py)
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from wordfreq import top_n_list, zipf_frequency

from engines.shop.ood import ood_prompts

FILE = Path(__file__).with_name("extra_words.txt")
UNSEEN_FILE = Path(__file__).parents[1] / "eval" / "unseen.jsonl"
TOP_N = 10_000  # wordfreq's most frequent English words considered
RARE_ZIPF = 3.5  # engines/local/open_values.RARE_ZIPF (not imported: shop must not depend on local)
# words that change a request's meaning when added to it, not only its wording
MEANING = frozenset("""
not no never nothing nobody none neither nor cannot can't won't don't doesn't didn't isn't aren't wasn't
shouldn't wouldn't couldn't haven't hasn't hadn't dont cant wont without except stop
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million
first second third fourth fifth half quarter double dozen oh
monday tuesday wednesday thursday friday saturday sunday weekend week weeks month months year years
january february march april may june july august september october november december
today tomorrow yesterday tonight morning afternoon evening night noon midnight hour hours minute minutes
am pm clock o'clock early earlier late later soon next last before after until till past
""".split())
_DIGITISH = re.compile(r"^(\d+|am|pm)$")
# intents whose caller words are a social formula ("hi there", "thanks bye"): added words would make them another
# message, so they get none
WHOLE_MESSAGE = frozenset({"greeting", "small_talk", "goodbye"})


def build_pool(corpus_words: set[str], evaluation_words: set[str]) -> list[str]:
    """The pool: wordfreq's top English words, less the corpus's, the evaluation sets' and MEANING."""
    out = []
    for w in top_n_list("en", TOP_N):
        if (w.isascii() and w.isalpha() and len(w) >= 2 and w not in corpus_words and w not in evaluation_words
                and w not in MEANING and zipf_frequency(w, "en") >= RARE_ZIPF):
            out.append(w)
    return out


def evaluation_words() -> set[str]:
    """Every word of the unseen-caller set's prompts and of the out-of-domain set, less the names of the unseen
    set's common-name class (`name:common`: English first names the pool held before that class was added, so
    the shipped weights met them as added words; it measures them as names, which no corpus gave them)."""
    rows = [json.loads(line) for line in UNSEEN_FILE.read_text().splitlines() if line.strip()]
    common = {x["expect"]["slots"]["name"] for x in rows if "name:common" in x.get("tags", ())}
    texts = [x["prompt"] for x in rows] + [p.text for p in ood_prompts()]
    return {w for t in texts for w in re.findall(r"[a-z']+", t.lower())} - common


def read_pool(path: Path = FILE) -> tuple[str, ...]:
    return tuple(w for w in path.read_text().split() if w)


def insert(text: str, r: random.Random, pool: tuple[str, ...]) -> str:
    """`text` with one run (sometimes two) of 1-3 pool words at word boundaries (a third of them at the end),
    never inside a number or time ("3 30 pm")."""
    words = text.split()
    for _ in range(2 if r.random() < 0.3 else 1):
        spots = [i for i in range(len(words) + 1)
                 if not (0 < i < len(words) and _DIGITISH.match(words[i - 1]) and _DIGITISH.match(words[i]))]
        # a third of the runs go at the end, where callers add most ("... arrived yet", "... instead")
        i = len(words) if r.random() < 0.3 else r.choice(spots)
        words[i:i] = [r.choice(pool) for _ in range(r.randint(1, 3))]
    return " ".join(words)


def unknown_sentence(r: random.Random, pool: tuple[str, ...]) -> str:
    """4-9 pool words: a sentence made only of words the corpus never uses (no cue, no slot)."""
    return " ".join(r.choice(pool) for _ in range(r.randint(4, 9)))
