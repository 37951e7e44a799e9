"""Speculative synthesis bookkeeping (`voicelab.rules.speculative`): proposals follow the gate's cuts, a revised
speculative chunk is dropped and never a hit, every proposal is resolved exactly once."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.snapshot import Snapshot
from tests.voicelab.test_gate import (
    EOS,
    WORDS,
    BlockRevising,
    FreeRevising,
    Vocab,
    autoregressive,
    make_snap,
    tokenize,
)
from voicelab.gate import Gate, GateConfigError
from voicelab.rules.speculative import SpeculativeBook


class Drive:
    """Feed a gate and a book as the speculative gate processor does: gate first, its commits matched, then
    the book observes the snapshot. Records hits per committed chunk and checks the book's invariants."""

    def __init__(self, gate: Gate, book: SpeculativeBook, snaps: Iterable[Snapshot]) -> None:
        self.hits: dict[int, int] = {}  # gate chunk id -> spec id
        self.texts: list[str] = []
        for snap in snaps:
            self.texts.append(snap.text())
            for c in gate.feed(snap, 0):  # a constant clock: the shaper's hold timer never fires
                hit, _ = book.commit(c.start_char, c.end_char, gate.chunk_raw(c.chunk_id))
                if hit is not None:
                    assert (hit.text, hit.start_char, hit.end_char) == (c.text, c.start_char, c.end_char)
                    self.hits[c.chunk_id] = hit.spec_id
            book.observe(snap, gate.released_chars, len(gate.chunks))
            for s in book.outstanding:  # what is held still stands in the newest text
                assert snap.text()[s.start_char:s.end_char] == s.raw
                assert s.start_char >= gate.released_chars
        book.close()
        assert gate.finished


def _with_conf(snaps: Iterable[Snapshot], rng: random.Random | None = None) -> Iterable[Snapshot]:
    """Snapshots with confidence 1.0 everywhere, or random per position when `rng` is given."""
    for s in snaps:
        conf = tuple(1.0 if rng is None else rng.random() for _ in s.tokens)
        yield replace(s, confidence=conf)


def _target(vocab: Vocab, rng: random.Random, words: int, width: int) -> list[int]:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return tokenize(vocab, text, width) + [EOS]


def test_threshold_is_validated() -> None:
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(GateConfigError, match="speculative threshold"):
            SpeculativeBook(bad)


def test_unchanged_text_is_spoken_from_speculation() -> None:
    """Append-only text behind stable:2 (one snapshot of lag): the book proposes each chunk one snapshot
    before the gate releases it, with the same cut, so every committed chunk is a hit; except the last,
    since an AR-like sampler shows the answer's end only in its final (done) snapshot."""
    vocab = Vocab()
    target = tokenize(vocab, "we open at 9 am on saturday. the workshop is closed sunday; thanks!", 3) + [EOS]
    gate, book = Gate("stable:2"), SpeculativeBook(0.5)
    run = Drive(gate, book, _with_conf(autoregressive(vocab, target)))
    assert len(gate.chunks) >= 3
    assert sorted(run.hits) == [c.chunk_id for c in gate.chunks[:-1]]
    assert not book.drops and len(book.hits) == len(book.proposed)


def test_a_revised_speculative_chunk_is_dropped_never_a_hit() -> None:
    vocab = Vocab()
    first = tokenize(vocab, "we open at 9 am", 8)
    fixed = tokenize(vocab, "we close at 9 am", 8)
    n = len(first) + 1

    def snap(step: int, canvas: list[int], done: bool = False) -> Snapshot:
        return replace(make_snap(vocab, step, canvas, n, n if done else 0, done=done), confidence=(0.95,) * n)

    snaps = [snap(0, [*first[:3], -1, -1, -1]),  # "we open at": a short first chunk is confident
             snap(1, [*fixed[:3], -1, -1, -1]),  # "open" revised to "close" before the gate released it
             snap(2, [*fixed, -1]), snap(3, [*fixed, EOS]), snap(4, [*fixed, EOS], done=True)]
    gate, book = Gate("stable:2"), SpeculativeBook(0.9)
    run = Drive(gate, book, snaps)
    wrong = [s for s in book.proposed if "open" in s.text]
    assert wrong and all(d.reason == "revised" for d in book.drops if d.spec in wrong)
    assert not any(h in wrong for h in book.hits)
    assert gate.chunks[0].text == "we close"
    assert run.hits.get(0) is not None  # the revised text was proposed again and that one played


def test_low_confidence_is_not_speculated() -> None:
    vocab = Vocab()
    target = tokenize(vocab, "we open at 9 am on saturday.", 3) + [EOS]
    gate, book = Gate("stable:2"), SpeculativeBook(0.9)
    # blocks_done 0: nothing is final before the end (AR snapshots would count every token as certain)
    snaps = [replace(s, confidence=(0.5,) * len(s.tokens), blocks_done=0) for s in autoregressive(vocab, target)]
    Drive(gate, book, snaps)
    assert not book.proposed
    gate, book = Gate("stable:2"), SpeculativeBook(0.9)
    sure = [replace(s, blocks_done=len(s.tokens) if s.done else 4) for s in snaps]  # only "we open at" is certain
    Drive(gate, book, sure)
    assert [s.text for s in book.proposed] == ["we open"]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), words=st.integers(2, 14), width=st.integers(2, 6),
       policy=st.sampled_from(["stable:1", "stable:2", "stable:3", "block", "final"]),
       threshold=st.floats(0.05, 1.0), ahead=st.integers(1, 3), free=st.booleans())
def test_every_speculation_resolves_once_and_hits_only_unchanged_text(
        seed: int, words: int, width: int, policy: str, threshold: float, ahead: int, free: bool) -> None:
    rng = random.Random(seed)
    vocab = Vocab()
    target = _target(vocab, rng, words, width)
    sampler = (FreeRevising(vocab, target, rng, honour_pins=False) if free
               else BlockRevising(vocab, target, rng, block=rng.randint(2, 6)))
    gate, book = Gate(policy), SpeculativeBook(threshold, max_ahead=ahead)
    run = Drive(gate, book, _with_conf(sampler.run(), random.Random(seed + 1)))
    ids = [s.spec_id for s in book.proposed]
    assert len(set(ids)) == len(ids)
    resolved = [h.spec_id for h in book.hits] + [d.spec.spec_id for d in book.drops]
    assert sorted(resolved) == sorted(ids)  # each proposal is a hit or a drop, exactly once
    for cid, sid in run.hits.items():
        spec = book.proposed[sid]
        assert gate.chunk_raw(cid) == spec.raw  # held audio plays only the text the gate released


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), words=st.integers(2, 16), width=st.integers(2, 6),
       k=st.integers(2, 3))
def test_append_only_text_never_drops(seed: int, words: int, width: int, k: int) -> None:
    rng = random.Random(seed)
    vocab = Vocab()
    target = _target(vocab, rng, words, width)
    gate, book = Gate(f"stable:{k}"), SpeculativeBook(0.5, max_ahead=2)
    Drive(gate, book, _with_conf(autoregressive(vocab, target)))
    assert not book.drops
    assert len(book.hits) == len(book.proposed)
