"""The stable-chunk gate: policies, phrase shaper, tool spans, pinning, and damage on unsafe policies.

Property tests drive the gate with small pure-Python samplers that emit `Snapshot`s like the engines do.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.snapshot import Snapshot
from engines.tool_span import parse_span
from voicelab.gate import Chunk, Gate, GateConfigError, GatePolicy, ShaperParams
from voicelab.measure.metrics import RevisionTracker, spoken_words

MASK = -1
EOS = 0
WRONG = (" zz", "qq", " xy,", ".")  # pieces a revising sampler guesses wrong and later fixes
TOOL = "[book(day=friday, time=10 am, name=anna)]"
WORDS = ("we", "open", "at", "9", "am", "on", "saturday.", "sure,", "booked", "10.30", "thanks!",
         "the", "workshop", "is", "closed", "sunday;", "riverside", "bike", "works", "it's", "ok")


# ---- a toy tokenizer and snapshot builder ---------------------------------------------------------------

class Vocab:
    def __init__(self) -> None:
        self.piece_of: dict[int, str] = {EOS: ""}
        self.id_of: dict[str, int] = {}

    def tok(self, piece: str) -> int:
        if piece not in self.id_of:
            self.id_of[piece] = len(self.piece_of)
            self.piece_of[self.id_of[piece]] = piece
        return self.id_of[piece]


def tokenize(vocab: Vocab, text: str, width: int) -> list[int]:
    """Split into pieces of up to `width` non-space chars with their leading whitespace: words get cut
    into sub-word pieces, so the gate has to wait for the piece after a word's end."""
    return [vocab.tok(p) for p in re.findall(r"\s*\S{1," + str(width) + "}", text)]


def make_snap(vocab: Vocab, step: int, canvas: list[int], block_size: int, blocks_done: int,
              pinned: int = 0, done: bool = False, revised: tuple[int, ...] = ()) -> Snapshot:
    masked = tuple(t == MASK for t in canvas)
    eos = None
    for p, t in enumerate(canvas):
        if t == MASK:
            break
        if t == EOS:
            eos = p
            break
    pieces = tuple("" if t in (MASK, EOS) else vocab.piece_of[t] for t in canvas)
    return Snapshot(step=step, t_ns=step * 10_000_000, tokens=tuple(canvas), masked=masked,
                    confidence=tuple(0.5 for _ in canvas), guesses=tuple(canvas), pieces=pieces, eos=eos,
                    block_size=block_size, blocks_done=blocks_done, pinned=pinned, forwards=step + 1,
                    done=done, revised=revised)


# ---- simulated samplers ---------------------------------------------------------------------------------

class MaskOnly:
    """LLaDA/Dream-like: each step unmasks a few random masked positions with their final token."""

    def __init__(self, vocab: Vocab, target: list[int], rng: random.Random, per_step: int = 2) -> None:
        self.vocab, self.target, self.rng, self.per_step = vocab, target, rng, per_step
        self.pinned = 0

    def pin(self, n: int) -> None:
        self.pinned = max(self.pinned, n)

    def run(self) -> Iterator[Snapshot]:
        n = len(self.target)
        canvas = [MASK] * n
        step = 0
        while MASK in canvas:
            masked = [p for p in range(n) if canvas[p] == MASK]
            for p in self.rng.sample(masked, min(len(masked), self.rng.randint(1, self.per_step))):
                canvas[p] = self.target[p]
            done = MASK not in canvas
            yield make_snap(self.vocab, step, canvas, n, n if done else 0, self.pinned, done)
            step += 1


class BlockRevising:
    """WINO-like: blocks left to right; inside the current block tokens are drafted (sometimes wrong),
    re-masked or overwritten; a block is final once done and never changes again."""

    def __init__(self, vocab: Vocab, target: list[int], rng: random.Random, block: int) -> None:
        self.vocab, self.target, self.rng, self.block = vocab, target, rng, block

    def run(self) -> Iterator[Snapshot]:
        n = len(self.target)
        canvas = [MASK] * n
        step = 0
        for b0 in range(0, n, self.block):
            b1 = min(n, b0 + self.block)
            for it in range(self.rng.randint(1, 6)):
                revised = []
                for p in range(b0, b1):
                    r = self.rng.random()
                    if canvas[p] == MASK and r < 0.5:
                        canvas[p] = self._guess(p)
                    elif canvas[p] != MASK and r < 0.2:
                        canvas[p] = MASK if r < 0.1 else self._guess(p)
                        revised.append(p)
                if it == 0 or revised or self.rng.random() < 0.5:
                    yield make_snap(self.vocab, step, canvas, self.block, b0, 0, False, tuple(revised))
                    step += 1
            revised = [p for p in range(b0, b1) if canvas[p] not in (MASK, self.target[p])]
            canvas[b0:b1] = self.target[b0:b1]  # the block converges
            done = b1 == n
            yield make_snap(self.vocab, step, canvas, self.block, b1, 0, done, tuple(revised))
            step += 1

    def _guess(self, p: int) -> int:
        return self.target[p] if self.rng.random() < 0.7 else self.vocab.tok(self.rng.choice(WRONG))


class FreeRevising:
    """ReMDM/T2T-like over one block: any unmasked token may be overwritten or re-masked at any step,
    except the first `pinned` ones when the sampler honours pins. Ends by filling every unpinned slot."""

    def __init__(self, vocab: Vocab, target: list[int], rng: random.Random, honour_pins: bool,
                 p_revise: float = 0.08) -> None:
        self.vocab, self.target, self.rng = vocab, target, rng
        self.honour_pins, self.p_revise = honour_pins, p_revise
        self.pinned = 0

    def pin(self, n: int) -> None:
        self.pinned = max(self.pinned, n)

    def run(self) -> Iterator[Snapshot]:
        n = len(self.target)
        canvas = [MASK] * n
        steps = self.rng.randint(n // 2 + 1, 2 * n + 2)
        for step in range(steps):
            frozen = self.pinned if self.honour_pins else 0
            revised = []
            for p in range(frozen, n):
                r = self.rng.random()
                if canvas[p] == MASK and r < 0.3:
                    canvas[p] = self.target[p] if self.rng.random() < 0.75 else self.vocab.tok(self.rng.choice(WRONG))
                elif canvas[p] != MASK and r < self.p_revise:
                    canvas[p] = MASK if r < self.p_revise / 2 else self._other(canvas[p], p)
                    revised.append(p)
            yield make_snap(self.vocab, step, canvas, n, 0, self.pinned if self.honour_pins else 0, False,
                            tuple(revised))
        frozen = self.pinned if self.honour_pins else 0
        revised = [p for p in range(frozen, n) if canvas[p] not in (MASK, self.target[p])]
        canvas[frozen:] = self.target[frozen:]
        yield make_snap(self.vocab, steps, canvas, n, n, frozen, True, tuple(revised))

    def _other(self, cur: int, p: int) -> int:
        t = self.target[p] if self.rng.random() < 0.5 else self.vocab.tok(self.rng.choice(WRONG))
        return t if t != cur else self.vocab.tok(" zz" if cur != self.vocab.tok(" zz") else "qq")


def autoregressive(vocab: Vocab, target: list[int]) -> Iterator[Snapshot]:
    """One appended token per step (block size 1), like the AR engine."""
    canvas: list[int] = []
    for i, t in enumerate(target):
        canvas.append(t)
        done = t == EOS or i == len(target) - 1
        yield make_snap(vocab, i, canvas + [MASK] * (len(target) - len(canvas)), 1, len(canvas), 0, done)
        if done:
            return


# ---- a harness ------------------------------------------------------------------------------------------

class Run:
    """Feed a gate every snapshot (ticking the clock between steps) and record what it released."""

    def __init__(self, gate: Gate, snaps: Iterator[Snapshot], step_ns: int = 30_000_000) -> None:
        self.gate = gate
        self.released_history: list[str] = []
        self.chunk_times: list[tuple[int, Chunk]] = []  # (step index, chunk)
        self.tracker = RevisionTracker()
        now = 0
        last: Snapshot | None = None
        for i, snap in enumerate(snaps):
            now += step_ns
            self.tracker.observe_snapshot(snap)
            out = gate.feed(snap, now) + gate.tick(now + step_ns // 2)
            self.chunk_times += [(i, c) for c in out]
            self.tracker.mark_released(gate.released_chars)
            self.released_history.append(gate.released_text)
            last = snap
        assert last is not None and last.done
        assert gate.finished
        self.final = gate.final_text or ""

    @property
    def chunks(self) -> list[Chunk]:
        return self.gate.chunks


def answer_text(words: list[str], tool_at: int | None) -> str:
    ws = list(words)
    if tool_at is not None:
        ws.insert(min(tool_at, len(ws)), TOOL)
    return " ".join(ws)


def target_tokens(vocab: Vocab, text: str, width: int, pad: int) -> list[int]:
    return tokenize(vocab, text, width) + [EOS] * (1 + pad)


def check_safe(run: Run, text: str) -> None:
    """What every safe policy guarantees."""
    final = run.final
    assert final == text
    for a, b in zip(run.released_history, run.released_history[1:], strict=False):
        assert b.startswith(a), "releases shrank or changed"
    assert final.startswith(run.released_history[-1])
    assert run.gate.released_text == final  # everything was released in the end
    assert run.gate.damaged_chunks() == []
    spoken = []
    for c in run.chunks:
        raw = run.gate.chunk_raw(c.chunk_id)
        assert final[c.start_char:c.end_char] == raw  # a prefix slice of the final text
        assert_word_cut(final, c)
        spoken.append(c.text)
    # every word is spoken once, in order, and the tool span never
    assert spoken_words(" ".join(spoken)) == spoken_words(text.replace(TOOL, " "))
    assert all("[" not in c.text and "]" not in c.text for c in run.chunks)
    if TOOL in text:
        assert [t.raw for t in run.gate.tool_calls] == [TOOL]
        assert run.gate.tool_calls[0].args == {"day": "friday", "time": "10 am", "name": "anna"}
    assert run.tracker.counts.post_synthesis == 0 and run.tracker.counts.audible == 0


def assert_word_cut(final: str, c: Chunk) -> None:
    for pos in (c.start_char, c.end_char):
        if 0 < pos < len(final):
            assert final[pos].isspace() or final[pos] == "[" or final[pos - 1] == "]", (
                f"cut inside a word at {pos}: {final[:pos]!r}|{final[pos:]!r}")


answers = st.tuples(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=24),
    st.one_of(st.none(), st.integers(0, 24)),  # where a tool span goes, if any
    st.integers(1, 4),  # tokenizer piece width
    st.integers(0, 3),  # EOS padding
    st.integers(0, 2**32 - 1),  # sampler seed
)
shapers = st.builds(ShaperParams, min_words=st.integers(1, 5), max_words=st.integers(5, 12),
                    max_hold_ms=st.sampled_from([0.0, 40.0, 250.0]), first_chunk_short=st.booleans(),
                    first_min_words=st.integers(1, 3))
fast = settings(max_examples=60, deadline=None)


# ---- property tests: safe policies on their safe samplers -----------------------------------------------

@fast
@given(answers, shapers, st.sampled_from(["prefix", "pinned", "pinned:prefix", "stable:1"]))
def test_prefix_on_mask_only_sampler_is_safe(ans: tuple, shaper: ShaperParams, policy: str) -> None:
    words, tool_at, width, pad, seed = ans
    vocab, text = Vocab(), answer_text(words, tool_at)
    sim = MaskOnly(vocab, target_tokens(vocab, text, width, pad), random.Random(seed))
    run = Run(Gate(policy, shaper, pin=sim.pin), sim.run())
    check_safe(run, text)
    assert run.tracker.counts.churn == 0  # a mask-only sampler never changes an unmasked token


@fast
@given(answers, shapers, st.integers(1, 8))
def test_block_on_revising_block_sampler_is_safe(ans: tuple, shaper: ShaperParams, block: int) -> None:
    words, tool_at, width, pad, seed = ans
    vocab, text = Vocab(), answer_text(words, tool_at)
    sim = BlockRevising(vocab, target_tokens(vocab, text, width, pad), random.Random(seed), block)
    check_safe(Run(Gate("block", shaper), sim.run()), text)


@fast
@given(answers, shapers, st.sampled_from(["pinned", "pinned:stable:2", "pinned:stable:1", "pinned:block"]))
def test_pinned_on_revising_sampler_that_honours_pins_is_safe(ans: tuple, shaper: ShaperParams,
                                                             policy: str) -> None:
    words, tool_at, width, pad, seed = ans
    vocab = Vocab()
    text = answer_text(words, tool_at)
    pins: list[int] = []
    sim = FreeRevising(vocab, target_tokens(vocab, text, width, pad), random.Random(seed), honour_pins=True)

    def pin(n: int) -> None:
        pins.append(n)
        sim.pin(n)

    run = Run(Gate(policy, shaper, pin=pin), sim.run())
    # pinned wrong guesses stay in the answer, so the final text is whatever the canvas ended as
    final = run.final
    for a, b in zip(run.released_history, run.released_history[1:], strict=False):
        assert b.startswith(a)
    assert final.startswith(run.released_history[-1]) and run.gate.released_text == final
    assert run.gate.damaged_chunks() == []
    for c in run.chunks:
        assert final[c.start_char:c.end_char] == run.gate.chunk_raw(c.chunk_id)
        assert_word_cut(final, c)
    assert pins == sorted(set(pins)) and (not pins or pins[-1] == run.gate.pin_request)
    assert run.tracker.counts.post_synthesis == 0 and run.tracker.counts.audible == 0


@fast
@given(answers, shapers, st.sampled_from(["prefix", "stable:2", "block", "final", "pinned"]))
def test_autoregressive_engine_through_the_gate(ans: tuple, shaper: ShaperParams, policy: str) -> None:
    words, tool_at, width, _pad, _seed = ans
    vocab = Vocab()
    text = answer_text(words, tool_at)
    target = target_tokens(vocab, text, width, 0)
    run = Run(Gate(policy, shaper, pin=lambda n: None), autoregressive(vocab, target))
    check_safe(run, text)


@fast
@given(answers, shapers)
def test_final_releases_only_at_the_end(ans: tuple, shaper: ShaperParams) -> None:
    words, tool_at, width, pad, seed = ans
    vocab, text = Vocab(), answer_text(words, tool_at)
    sim = MaskOnly(vocab, target_tokens(vocab, text, width, pad), random.Random(seed))
    snaps = list(sim.run())
    run = Run(Gate("final", shaper), iter(snaps))
    check_safe(run, text)
    assert all(i == len(snaps) - 1 for i, _ in run.chunk_times)
    assert run.released_history[:-1] == [""] * (len(snaps) - 1)


# ---- unsafe baseline: stable:K on a revising sampler ----------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(answers, st.integers(1, 3))
def test_stable_k_on_revising_sampler_damage_is_always_counted(ans: tuple, k: int) -> None:
    words, tool_at, width, pad, seed = ans
    vocab, text = Vocab(), answer_text(words, tool_at)
    sim = FreeRevising(vocab, target_tokens(vocab, text, width, pad), random.Random(seed),
                       honour_pins=False, p_revise=0.15)
    run = Run(Gate(f"stable:{k}", ShaperParams(max_hold_ms=0.0)), sim.run())
    if run.gate.damaged_chunks():
        assert not run.final.startswith(run.gate.released_text)
        assert run.tracker.counts.post_synthesis + run.tracker.counts.audible >= 1


def test_stable_2_releases_text_that_a_revising_sampler_later_changes() -> None:
    vocab = Vocab()
    we, open_, at, nine, am, ten = (vocab.tok(p) for p in ("we", " open", " at", " 9", " am.", " 10"))
    steps = [
        [we, open_, at, MASK, MASK, MASK],
        [we, open_, at, nine, MASK, MASK],
        [we, open_, at, nine, am, MASK],  # " 9" agreed over two snapshots: released
        [we, open_, at, nine, am, EOS],
        [we, open_, at, ten, am, EOS],  # the sampler overwrites the released " 9"
    ]
    snaps = [make_snap(vocab, i, c, 6, 0, revised=(3,) if i == 4 else ()) for i, c in enumerate(steps)]
    snaps.append(make_snap(vocab, 5, steps[-1], 6, 6, done=True))
    gate = Gate("stable:2", ShaperParams(first_chunk_short=False, max_hold_ms=0.0))
    tracker = RevisionTracker()
    released = []
    for i, s in enumerate(snaps):
        kinds = tracker.observe_snapshot(s)
        if i == 4:
            assert kinds == ["post_synthesis"]
        released += gate.feed(s, i * 1_000_000)
        tracker.mark_released(gate.released_chars)
    assert [c.text for c in released] == ["we open", "at", "9 am."]
    assert gate.final_text == "we open at 10 am."
    assert [c.chunk_id for c in gate.damaged_chunks()] == [2]
    assert not gate.final_text.startswith(gate.released_text)
    assert tracker.counts.post_synthesis == 1 and tracker.counts.audible == 0


def test_tracker_classifies_by_how_far_text_travelled() -> None:
    tr = RevisionTracker()
    tr.observe("we open at nine am")
    tr.mark_released(15)
    tr.mark_sent(10)
    tr.mark_played(5)
    assert tr.observe("we open at nine pm", [16]) == ["churn"]
    assert tr.observe("we open at ten pm", [11]) == ["post_synthesis"]  # released, not sent yet
    assert tr.observe("we close at ten pm", [2]) == ["audible"]
    assert tr.observe("we close at ten") == ["churn"]  # shrank past the release: no positions given
    assert tr.observe("we shut") == ["audible"]  # text diff at char 3
    assert (tr.counts.churn, tr.counts.post_synthesis, tr.counts.audible) == (2, 1, 2)


# ---- the phrase shaper, case by case --------------------------------------------------------------------

def feed_pieces(gate: Gate, pieces: list[str], eos: bool = True, step_ms: int = 10) -> list[tuple[int, str]]:
    """Feed an AR-style stream of pieces; return (step, chunk text) for each release."""
    vocab = Vocab()
    toks = [vocab.tok(p) for p in pieces] + ([EOS] if eos else [])
    out = []
    for i, snap in enumerate(autoregressive(vocab, toks)):
        out += [(i, c.text) for c in gate.feed(snap, i * step_ms * 1_000_000)]
    return out


def test_short_first_chunk_then_sentence_chunks() -> None:
    gate = Gate("prefix", ShaperParams(min_words=4, max_words=14, first_min_words=2, max_hold_ms=1000))
    pieces = ["we", " open", " at", " 9", " am", " on", " saturday.", " we", " close", " at", " 4", " pm."]
    got = feed_pieces(gate, pieces)
    assert [t for _, t in got] == ["we open", "at 9 am on saturday.", "we close at 4 pm."]
    # "we open" goes as soon as the space after "open" is committed, i.e. with piece " at" (step 2)
    assert got[0][0] == 2
    assert [c.start_char for c in gate.chunks] == [0, 7, 28]


def test_first_chunk_at_first_clause() -> None:
    gate = Gate("prefix", ShaperParams(first_min_words=3, max_hold_ms=1000))
    got = feed_pieces(gate, ["sure,", " we", " open", " at", " 9", " am."])
    assert [t for _, t in got] == ["sure,", "we open at 9 am."]


def test_clause_needs_min_words_after_first_chunk() -> None:
    gate = Gate("prefix", ShaperParams(min_words=3, first_chunk_short=False, max_hold_ms=1000))
    got = feed_pieces(gate, ["yes.", " ok,", " so", " we", " open,", " at", " 9."])
    assert [t for _, t in got] == ["yes.", "ok, so we open,", "at 9."]


def test_max_words_cuts_long_phrases() -> None:
    gate = Gate("prefix", ShaperParams(min_words=2, max_words=3, first_chunk_short=False, max_hold_ms=1000))
    got = feed_pieces(gate, ["a", " b", " c", " d", " e", " f", " g"])
    assert [t for _, t in got] == ["a b c", "d e f", "g"]


def test_never_cuts_inside_a_word_even_at_punctuation() -> None:
    gate = Gate("prefix", ShaperParams(first_min_words=1, max_hold_ms=0.0))
    vocab = Vocab()
    toks = [vocab.tok(p) for p in ("book", "ed", " at", " 10.", "30", " ok")]
    released = []
    for i, snap in enumerate(autoregressive(vocab, toks + [EOS])):
        released += [c.text for c in gate.feed(snap, i)]
        if i == 0:  # "book" may become "booked"
            assert released == []
        if i == 3:  # "10." may become "10.30"
            assert released == ["booked", "at"]
    assert released == ["booked", "at", "10.30", "ok"]


def test_hold_time_releases_held_words_on_tick() -> None:
    gate = Gate("prefix", ShaperParams(min_words=4, max_words=14, first_chunk_short=False, max_hold_ms=200))
    vocab = Vocab()
    toks = [vocab.tok(p) for p in ("we", " open", " at", " 9")]
    snap = make_snap(vocab, 0, toks + [MASK, MASK], 6, 0)
    assert gate.feed(snap, 0) == []  # "we open at" complete, "9" not, no cut rule yet
    assert gate.tick(150_000_000) == []
    out = gate.tick(200_000_000)
    assert [c.text for c in out] == ["we open at"]
    assert out[0].t_ns == 200_000_000 and out[0].tokens_end == 4  # " 9" holds the space


def test_tool_span_is_released_as_a_call_and_never_spoken() -> None:
    gate = Gate("prefix", ShaperParams(first_min_words=2, max_hold_ms=1000))
    pieces = ["sure", " [book(day=", "friday, time", "=10 am, name=anna)", "]", " you", " are", " booked."]
    vocab = Vocab()
    toks = [vocab.tok(p) for p in pieces] + [EOS]
    calls_at = []
    texts = []
    for i, snap in enumerate(autoregressive(vocab, toks)):
        texts += [c.text for c in gate.feed(snap, i)]
        for call in gate.pop_tool_calls():
            calls_at.append(i)
            assert call.name == "book" and call.args == {"day": "friday", "time": "10 am", "name": "anna"}
            assert call.raw == "[book(day=friday, time=10 am, name=anna)]"
            assert call.tokens_end == 5
    assert calls_at == [4]  # only once the closing bracket is committed
    assert texts == ["sure", "you are booked."]  # the span ends the phrase before it
    assert gate.released_text == gate.final_text


def test_malformed_and_unclosed_tool_spans_are_dropped() -> None:
    gate = Gate("prefix", ShaperParams(max_hold_ms=1000))
    got = feed_pieces(gate, ["[not a call]", " ok", " then", " [book(day="])
    assert [t for _, t in got] == ["ok then"]
    assert gate.tool_calls == []
    assert gate.malformed_tool_spans == ["[not a call]", "[book(day="]


@pytest.mark.parametrize("raw,expected", [
    ("[book(day=friday, time=10 am, name=anna)]", ("book", {"day": "friday", "time": "10 am", "name": "anna"})),
    ("[ hours ( ) ]", ("hours", {})),
    ("[order(id='12, 3')]", ("order", {"id": "12, 3"})),
    ("[book(day)]", None),
    ("[book(day=1, day=2)]", None),
    ("[book(x='open)]", None),
    ("[9book()]", None),
])
def test_parse_tool_span(raw: str, expected: tuple | None) -> None:
    assert parse_span(raw) == expected


def test_block_policy_waits_for_finished_blocks() -> None:
    vocab = Vocab()
    toks = [vocab.tok(p) for p in ("we", " open", " at", " 9", " am", " on", " monday.")]
    gate = Gate("block", ShaperParams(first_min_words=1, max_hold_ms=0.0))
    canvas = toks[:6] + [MASK, MASK]
    assert [c.text for c in gate.feed(make_snap(vocab, 0, canvas, 4, 0), 0)] == []
    assert [c.text for c in gate.feed(make_snap(vocab, 1, canvas, 4, 4), 1)] == ["we", "open at"]
    final = make_snap(vocab, 2, toks + [EOS], 4, 8, done=True)
    assert [c.text for c in gate.feed(final, 2)] == ["9 am on monday."]


def test_pinned_policy_pins_released_tokens() -> None:
    vocab = Vocab()
    toks = [vocab.tok(p) for p in ("we", " open", " at", " 9.")]
    pins: list[int] = []
    shaper = ShaperParams(min_words=1, first_min_words=1, max_hold_ms=0.0)
    gate = Gate("pinned", shaper, pin=pins.append)
    gate.feed(make_snap(vocab, 0, toks[:2] + [MASK, MASK, MASK], 5, 0), 0)
    assert pins == [2] and gate.pin_request == 2  # "we", and " open" whose space ends it
    gate.feed(make_snap(vocab, 1, toks + [MASK], 5, 0), 1)
    assert pins == [2, 4]  # "open at", and " 9." whose space ends "at"
    gate.feed(make_snap(vocab, 2, toks + [EOS], 5, 0), 2)
    assert pins == [2, 4, 5]  # "9." was cut at the answer's end: the EOS is pinned too
    assert gate.released_text == "we open at 9."


def test_pinned_frontier_includes_tokens_pinned_by_the_engine() -> None:
    vocab = Vocab()
    toks = [vocab.tok(p) for p in ("we", " open", " at")]
    gate = Gate("pinned:final", ShaperParams(first_min_words=1, max_hold_ms=0.0), pin=lambda n: None)
    assert [c.text for c in gate.feed(make_snap(vocab, 0, toks + [MASK], 4, 0, pinned=3), 0)] == ["we", "open"]


@pytest.mark.parametrize("text,expected", [
    ("final", GatePolicy("final")), ("prefix", GatePolicy("prefix")), ("stable:3", GatePolicy("stable", 3)),
    ("block", GatePolicy("block")), ("pinned", GatePolicy("prefix", 0, True)),
    ("pinned:prefix", GatePolicy("prefix", 0, True)), ("pinned:stable:2", GatePolicy("stable", 2, True)),
    ("Pinned:Block", GatePolicy("block", 0, True)),
])
def test_policy_parse_round_trip(text: str, expected: GatePolicy) -> None:
    p = GatePolicy.parse(text)
    assert p == expected
    assert GatePolicy.parse(str(p)) == p


@pytest.mark.parametrize("text", ["stable", "stable:0", "stable:x", "prefix:2", "greedy", "pinned:pinned", ""])
def test_policy_parse_errors(text: str) -> None:
    with pytest.raises(GateConfigError, match="policy"):
        GatePolicy.parse(text)


def test_bad_config_is_refused() -> None:
    with pytest.raises(GateConfigError, match="pin callback"):
        Gate("pinned")
    with pytest.raises(GateConfigError, match="max_words"):
        ShaperParams(min_words=5, max_words=3)


def test_feed_after_finish_releases_nothing() -> None:
    vocab = Vocab()
    toks = [vocab.tok(p) for p in ("ok", ".")] + [EOS]
    gate = Gate("prefix")
    snaps = list(autoregressive(vocab, toks))
    chunks: list[Chunk] = []
    for i, s in enumerate(snaps):
        chunks += gate.feed(s, i)
    assert [c.text for c in chunks] == ["ok."]
    assert gate.feed(snaps[-1], 99) == [] and gate.tick(99) == [] and gate.finish(snaps[-1]) == []
    payload = gate.commit_payload(chunks[0])
    assert payload == {"chunk_id": 0, "text": "ok.", "start_char": 0, "end_char": 3, "tokens_end": 3,
                       "policy": "prefix"}


@pytest.mark.slow
def test_pure_modules_import_neither_torch_nor_pipecat() -> None:
    code = ("import sys, voicelab.measure.events, voicelab.gate, voicelab.measure.metrics; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'pipecat'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
