"""Writes the word lists the corpus reads: callers' names (`names.py`) and the extra-word pool (`extra_words.py`).

Each list leaves out every word the corpus itself uses (`corpus.corpus_words`), so the writer needs the
corpus while the corpus needs the lists it reads: the writer lives here, apart from both, and nothing
imports it. faker is a training-only extra (`pip install -e .[train]`), needed for the names.

    python -m engines.shop.word_lists names         # rewrites names_train.txt and eval/unseen_names.txt
    python -m engines.shop.word_lists extra-words   # rewrites extra_words.txt
"""

from __future__ import annotations

import argparse

from engines.shop import extra_words as EW
from engines.shop import names as N
from engines.shop.corpus import corpus_words


def write_names() -> None:
    stop = corpus_words()
    train = N.build_train(stop)
    N.TRAIN_FILE.write_text("".join(f"{s} {n}\n" for s, n in train))
    unseen = N.build_unseen(stop, {n for _, n in train})
    N.UNSEEN_FILE.write_text("".join(f"{s} {n}\n" for s, n in unseen))
    print(f"{len(train)} training names -> {N.TRAIN_FILE}; {len(unseen)} unseen names -> {N.UNSEEN_FILE}")


def write_extra_words() -> None:
    pool = EW.build_pool(corpus_words(), EW.evaluation_words())
    EW.FILE.write_text("\n".join(pool) + "\n")
    print(f"{EW.FILE}: {len(pool)} words")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("list", choices=("names", "extra-words"))
    {"names": write_names, "extra-words": write_extra_words}[ap.parse_args().list]()


if __name__ == "__main__":
    main()
