"""Speculative synthesis bookkeeping: which not-yet-committed chunks go to TTS early, and what
becomes of them.

Pure Python, no pipecat, no torch. One `SpeculativeBook` per reply, kept beside that reply's `Gate`:

- `observe(snapshot, released_chars, chunks_released)` after the gate has fed the snapshot: first every
  speculative chunk whose text no longer stands in the snapshot is dropped ("revised", and every one after
  it, since their cuts depended on it); then new ones are proposed from where the gate (or the last
  speculative chunk) stopped. A proposal covers text in the snapshot's contiguous unmasked prefix whose
  positions all have `confidence >= threshold` (the one holding the whitespace that ends its last word
  included; tokens of finished blocks and pinned ones count as certain), cut where the gate's phrase shaper would cut it (the same structural cuts: sentence, clause,
  short first chunk, max words, end of answer, a tool span; never the hold timer). So when the text stands,
  the gate later releases exactly that span. At most `max_ahead` are outstanding at once.
- `commit(start_char, end_char, raw)` for each chunk the gate releases: a speculative chunk with the same
  span and the same raw text is a **hit** (its held audio may play); every other one that starts before
  the committed end is dropped ("cut": the gate cut elsewhere, or "revised": same span, other text).
- `close()` when the reply ends or is cut: whatever is left is dropped ("reply_end").

Held audio is only ever played through a hit, and a hit needs the committed text to equal the text that
was synthesized, so speculation adds no word a caller could hear that the gate did not release.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engines.snapshot import Snapshot
from voicelab.gate import TOOL_OPEN, GateConfigError, ShaperParams, _boundaries


@dataclass(frozen=True, slots=True)
class SpecChunk:
    """A chunk sent to TTS before the gate committed it."""

    spec_id: int  # 0, 1, 2 ... within the book (one reply)
    text: str  # what TTS says: whitespace-normalised, like `Chunk.text`
    raw: str  # the response text [start_char, end_char) when proposed
    start_char: int
    end_char: int
    confidence: float  # the lowest confidence of the positions it relies on
    t_ns: int


@dataclass(frozen=True, slots=True)
class Drop:
    spec: SpecChunk
    reason: str  # "revised", "cut" or "reply_end"


@dataclass(slots=True)
class Update:
    """What one `observe` did: chunks to synthesize now, and held chunks to throw away."""

    new: list[SpecChunk] = field(default_factory=list)
    dropped: list[Drop] = field(default_factory=list)


def check_threshold(threshold: float) -> float:
    """A confidence threshold must be in (0, 1]; returns it."""
    if not 0.0 < threshold <= 1.0:
        raise GateConfigError(f"speculative threshold: {threshold} is not in (0, 1]")
    return threshold


def structural_cut(cands: list[tuple[int, int, str]], shaper: ShaperParams,
                   first: bool) -> tuple[int, int] | None:
    """The gate shaper's choice among cuts (end, words, kind), without its hold timer: (end, words) or None.

    Mirrors `Gate._choose` so that a speculative chunk ends where the gate will end its chunk.
    """
    short_first = shaper.first_chunk_short and first
    for end, words, kind in cands:
        if kind in ("end", "tool"):
            return end, words
        if words == 0:
            continue
        if kind == "sentence":
            return end, words
        if kind == "clause" and (short_first or words >= shaper.min_words):
            return end, words
        if short_first and words >= shaper.first_min_words:
            return end, words
        if words >= shaper.max_words:
            return end, words
    return None


class SpeculativeBook:
    """The speculative chunks of one reply; see the module doc. Not thread-safe: call it from one task."""

    def __init__(self, threshold: float, shaper: ShaperParams | None = None, max_ahead: int = 2) -> None:
        self.threshold = check_threshold(threshold)
        self.shaper = shaper if shaper is not None else ShaperParams()
        if max_ahead < 1:
            raise GateConfigError("speculative max_ahead must be >= 1")
        self.max_ahead = max_ahead
        self._out: list[SpecChunk] = []  # outstanding, in text order, each starting where the last ended
        self._next_id = 0
        self.proposed: list[SpecChunk] = []
        self.hits: list[SpecChunk] = []
        self.drops: list[Drop] = []

    @property
    def outstanding(self) -> list[SpecChunk]:
        return list(self._out)

    def observe(self, snap: Snapshot, released_chars: int, chunks_released: int, now_ns: int = 0) -> Update:
        """Check the outstanding chunks against `snap` and propose new ones (see the module doc)."""
        up = Update()
        text = snap.text()
        for i, s in enumerate(self._out):
            if text[s.start_char:s.end_char] != s.raw:
                up.dropped = self._drop(self._out[i:], "revised")
                self._out = self._out[:i]
                break
        if snap.done:
            return up  # the gate releases everything now: nothing left to anticipate
        start = self._out[-1].end_char if self._out else released_chars
        cum = [0]
        for piece in snap.pieces[:snap.prefix_len]:
            cum.append(cum[-1] + len(piece))
        # tokens of finished blocks and pinned ones can never change: certain, whatever the sampler reports
        # (the revising sampler reports 0 outside the current block)
        sure = max(snap.blocks_done, snap.pinned)
        conf = [1.0 if i < sure else float(c) for i, c in enumerate(snap.confidence)]
        while len(self._out) < self.max_ahead:
            spec = self._propose(snap, conf, text, cum, start, chunks_released + len(self._out) == 0, now_ns)
            if spec is None:
                break
            self._out.append(spec)
            self.proposed.append(spec)
            up.new.append(spec)
            start = spec.end_char
        return up

    def commit(self, start_char: int, end_char: int, raw: str) -> tuple[SpecChunk | None, list[Drop]]:
        """The gate released [start_char, end_char) reading `raw`: the hit (or None) and the drops."""
        hit = None
        keep: list[SpecChunk] = []
        gone: list[SpecChunk] = []
        for s in self._out:
            if hit is None and (s.start_char, s.end_char, s.raw) == (start_char, end_char, raw):
                hit = s
            elif s.start_char < end_char:
                gone.append(s)
            else:
                keep.append(s)
        self._out = keep
        dropped = [Drop(s, "revised" if (s.start_char, s.end_char) == (start_char, end_char) else "cut")
                   for s in gone]
        self.drops += dropped
        if hit is not None:
            self.hits.append(hit)
        return hit, dropped

    def close(self) -> list[Drop]:
        """The reply ended or was cut: drop what is still outstanding."""
        out = self._drop(self._out, "reply_end")
        self._out = []
        return out

    # ---- internals ----------------------------------------------------------------------------------

    def _drop(self, specs: list[SpecChunk], reason: str) -> list[Drop]:
        dropped = [Drop(s, reason) for s in specs]
        self.drops += dropped
        return dropped

    def _propose(self, snap: Snapshot, conf: list[float], text: str, cum: list[int], start: int, first: bool,
                 now_ns: int) -> SpecChunk | None:
        """The next speculative chunk from char `start` of the prefix text, or None."""
        n = len(cum) - 1  # positions of the prefix text
        if start >= len(text):
            return None
        pos = next(i for i in range(n) if cum[i + 1] > start)  # the position holding char `start`
        # the confident window: positions from `pos` on, while each passes the threshold
        end_pos = pos
        while end_pos < n and conf[end_pos] >= self.threshold:
            end_pos += 1
        window = cum[end_pos]
        complete = (end_pos == n and snap.eos is not None and snap.eos == n
                    and conf[snap.eos] >= self.threshold)
        j = start
        while j < window and text[j].isspace():
            j += 1
        tool_at = text.find(TOOL_OPEN, start, window)
        if tool_at == j and j < window:
            return None  # a tool span comes next: the gate handles it, nothing to say
        stop = tool_at if tool_at >= 0 else window
        last_kind = "tool" if tool_at >= 0 else ("end" if complete else None)
        cut = structural_cut(_boundaries(text, start, stop, last_kind), self.shaper, first)
        if cut is None or cut[1] == 0:
            return None
        end = cut[0]
        need = end + 1 if end < len(text) else end  # the char after the cut ends the last word
        last = next((i for i in range(n) if cum[i + 1] >= need), n - 1)
        confs = conf[pos:last + 1]
        if end == len(text) and complete and snap.eos is not None:
            confs.append(conf[snap.eos])
        raw = text[start:end]
        spec = SpecChunk(self._next_id, " ".join(raw.split()), raw, start, end, min(confs), now_ns)
        self._next_id += 1
        return spec
