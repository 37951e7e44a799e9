"""The stable-chunk gate (docs/engines.md): engine snapshots in, speakable committed chunks out.

Pure logic, no pipecat, no torch. One `Gate` per reply (per LLM request): feed it every snapshot of that
generation, call `tick` from a timer so held words are released, and `finish` with the last snapshot.

Two stages:
1. the **policy** sets the commit frontier, the number of leading canvas tokens that may be released:
   `final` (everything, once generation is done), `prefix` (the contiguous unmasked prefix), `stable:K`
   (the prefix whose tokens agree over the last K snapshots: LocalAgreement-K, unsafe on revising
   samplers), `block` (tokens of finished blocks), `pinned` / `pinned:X` (X's frontier, default `prefix`,
   plus tokens already pinned; every release is pinned back to the engine so it can never change).
   All frontiers stop at the answer's EOS; when a snapshot says `done` the frontier is the whole answer.
2. the **phrase shaper** cuts the frontier text into chunks for TTS (see `ShaperParams`). A cut is only
   made where committed text has whitespace right after a word, before a tool span, or at the answer's
   end: so a word whose next token is not committed yet ("book" that may become "booked", "10." that may
   become "10.30") is never cut.

Tool calls: the engines write `[name(key=value, key=value)]` inside the answer (the grammar is
`engines.tool_span`). Such a span is never spoken; once committed whole it is parsed into a `ToolCall`
(`pop_tool_calls`), or recorded in `malformed_tool_spans` if it does not parse (or is still open when the
answer ends). The text around it is spoken normally; a span also ends the phrase before it.

Char positions (`start_char`, `end_char`) are offsets into the response text, the concatenation of the
snapshot's per-position `pieces` up to the frontier; the gate's `released_text` is that text as it stood
when each part was released, so for a safe policy it is always a prefix of `final_text`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engines.snapshot import Snapshot
from engines.tool_span import OPEN as TOOL_OPEN
from engines.tool_span import parse_span, span_end

BASE_POLICIES = ("final", "prefix", "stable", "block")
SENTENCE_PUNCT = ".!?…"
CLAUSE_PUNCT = ",;:—–"
_CLOSERS = "\"')}»”’"


class GateConfigError(ValueError):
    """A bad gate policy string or shaper parameter; the message names the field."""


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """What may be released. Parse with `GatePolicy.parse("pinned:stable:2")`; `str()` gives it back."""

    base: str = "prefix"  # one of BASE_POLICIES
    k: int = 0  # snapshots that must agree, for base "stable" (K >= 1)
    pinned: bool = False  # pin released tokens back to the engine

    def __post_init__(self) -> None:
        if self.base not in BASE_POLICIES:
            raise GateConfigError(f"policy: unknown base '{self.base}' (one of {', '.join(BASE_POLICIES)})")
        if self.base == "stable" and self.k < 1:
            raise GateConfigError("policy: stable needs K >= 1, e.g. 'stable:2'")
        if self.base != "stable" and self.k != 0:
            raise GateConfigError(f"policy: K is only for 'stable', not '{self.base}'")

    @classmethod
    def parse(cls, text: str) -> GatePolicy:
        """Parse "final", "prefix", "stable:K", "block", "pinned" (= "pinned:prefix"), "pinned:X"."""
        parts = [p.strip() for p in text.strip().lower().split(":")]
        pinned = parts[0] == "pinned"
        rest = parts[1:] if pinned else parts
        if not rest:
            return cls("prefix", 0, True)
        base, args = rest[0], rest[1:]
        if base == "stable":
            if len(args) != 1 or not args[0].isdigit() or int(args[0]) < 1:
                raise GateConfigError(f"policy '{text}': stable needs one whole number K >= 1, e.g. 'stable:2'")
            return cls("stable", int(args[0]), pinned)
        if base not in BASE_POLICIES or args:
            raise GateConfigError(
                f"policy '{text}': expected final, prefix, stable:K, block, pinned or pinned:<one of those>")
        return cls(base, 0, pinned)

    def __str__(self) -> str:
        s = f"stable:{self.k}" if self.base == "stable" else self.base
        return f"pinned:{s}" if self.pinned else s


@dataclass(frozen=True, slots=True)
class ShaperParams:
    """Where the phrase shaper cuts. Lengths count words (runs of non-space text holding a letter or digit).

    The defaults favour a low first-audible latency: a short first chunk (first clause or the first two
    words), then phrase-sized chunks that TTS can render while the previous one plays.
    """

    min_words: int = 4  # a clause boundary ("," ";" ":" dash) cuts only after this many words
    max_words: int = 14  # cut at the last word boundary once a pending phrase reaches this many words
    max_hold_ms: float = 250.0  # release complete committed words that have waited this long for a cut
    first_chunk_short: bool = True  # the first chunk may end at the first clause or after first_min_words
    first_min_words: int = 2

    def __post_init__(self) -> None:
        if self.min_words < 1:
            raise GateConfigError("shaper: min_words must be >= 1")
        if self.max_words < self.min_words:
            raise GateConfigError("shaper: max_words must be >= min_words")
        if self.first_min_words < 1:
            raise GateConfigError("shaper: first_min_words must be >= 1")
        if self.max_hold_ms < 0:
            raise GateConfigError("shaper: max_hold_ms must be >= 0")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A released phrase: `text` (whitespace-normalised, tool spans removed) is what TTS should say."""

    chunk_id: int  # 0, 1, 2 ... within this gate (one reply)
    text: str
    start_char: int  # [start_char, end_char) in the response text
    end_char: int
    t_ns: int  # the now_ns of the feed/tick/finish call that released it
    tokens_end: int  # canvas tokens the release relies on, incl. the one ending its last word (pinned)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A committed, parsed `[name(key=value, ...)]` span."""

    name: str
    args: dict[str, str]
    raw: str  # the span as written, brackets included
    start_char: int = 0
    end_char: int = 0
    t_ns: int = 0
    tokens_end: int = 0

    def to_payload(self) -> dict[str, Any]:
        return {"name": self.name, "args": dict(self.args), "raw": self.raw,
                "start_char": self.start_char, "end_char": self.end_char}


def _cut_kind(text: str, end: int, start: int) -> str:
    """'sentence', 'clause' or 'word': what the text just before a cut at `end` ends with."""
    i = end - 1
    while i > start and text[i] in _CLOSERS:
        i -= 1
    ch = text[i]
    if ch in SENTENCE_PUNCT:
        return "sentence"
    if ch in CLAUSE_PUNCT:
        return "clause"
    return "word"


def _boundaries(text: str, start: int, stop: int, last_kind: str | None) -> list[tuple[int, int, str]]:
    """Legal cuts in text[start:stop] as (cut, words in text[start:cut], kind), in order.

    A cut sits right after a word, where whitespace follows in the committed text; `stop` itself is a cut
    of `last_kind` ('end' or 'tool') when given.
    """
    out: list[tuple[int, int, str]] = []
    words = 0
    run_has_alnum = False
    for i in range(start, stop):
        ch = text[i]
        if ch.isspace():
            if i > start and not text[i - 1].isspace():
                if run_has_alnum:
                    words += 1
                run_has_alnum = False
                out.append((i, words, _cut_kind(text, i, start)))
        elif ch.isalnum():
            run_has_alnum = True
    if last_kind is not None and stop > start:
        out.append((stop, words + (1 if run_has_alnum else 0), last_kind))
    return out


class Gate:
    """The stable-chunk gate for one reply.

    `pin` is called with the number of leading canvas tokens to freeze, after each release, when the policy
    is pinned (it is required then). Not thread-safe: call it from one task.
    """

    def __init__(self, policy: GatePolicy | str = "prefix", shaper: ShaperParams | None = None,
                 pin: Callable[[int], None] | None = None) -> None:
        self.policy = GatePolicy.parse(policy) if isinstance(policy, str) else policy
        self.shaper = shaper if shaper is not None else ShaperParams()
        if self.policy.pinned and pin is None:
            raise GateConfigError(f"policy '{self.policy}' needs a pin callback")
        self._pin = pin
        self._hist: deque[Snapshot] = deque(maxlen=max(1, self.policy.k))
        self._snap: Snapshot | None = None
        self._text = ""  # frontier text of the newest snapshot
        self._complete = False  # the frontier reaches the answer's end
        self._released = 0  # chars of the response released (chunks, tool spans, skipped blanks)
        self._raw: list[str] = []  # released slices, as they stood when released
        self._chunk_raw: list[str] = []
        self._chunks: list[Chunk] = []
        self._tools: list[ToolCall] = []
        self._new_tools: list[ToolCall] = []
        self._malformed: list[str] = []
        self._tokens_released = 0
        self._pinned_sent = 0
        self._wait_since: int | None = None
        self._now = 0
        self._final_text: str | None = None

    # ---- inputs -------------------------------------------------------------------------------------

    def feed(self, snapshot: Snapshot, now_ns: int) -> list[Chunk]:
        """Take the next snapshot of this generation; return the chunks it releases (maybe none)."""
        if self._final_text is not None:
            return []
        if snapshot.done:
            return self.finish(snapshot, now_ns)
        self._hist.append(snapshot)
        self._snap = snapshot
        f = self._frontier(snapshot)
        self._text = snapshot.text(f)
        self._complete = snapshot.eos is not None and f >= snapshot.eos
        return self._release(now_ns)

    def tick(self, now_ns: int) -> list[Chunk]:
        """Release words held longer than `max_hold_ms`; call it from a timer (every ~20-50 ms)."""
        if self._final_text is not None or self._snap is None:
            return []
        return self._release(now_ns)

    def finish(self, snapshot: Snapshot, now_ns: int | None = None) -> list[Chunk]:
        """The generation ended normally: release everything left of the answer in `snapshot`.

        After a cancellation (barge-in) do not call this: nothing more should be spoken.
        """
        if self._final_text is not None:
            return []
        now = self._now if now_ns is None else now_ns
        self._hist.append(snapshot)
        self._snap = snapshot
        self._text = snapshot.text()
        self._complete = True
        out = self._release(now)
        self._final_text = snapshot.text()
        return out

    def pop_tool_calls(self) -> list[ToolCall]:
        """Tool calls released since the last call, in answer order."""
        out, self._new_tools = self._new_tools, []
        return out

    # ---- state --------------------------------------------------------------------------------------

    @property
    def chunks(self) -> list[Chunk]:
        return list(self._chunks)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return list(self._tools)

    @property
    def malformed_tool_spans(self) -> list[str]:
        return list(self._malformed)

    @property
    def released_text(self) -> str:
        """The response text released so far, each part as it stood when it was released."""
        return "".join(self._raw)

    @property
    def released_chars(self) -> int:
        return self._released

    @property
    def frontier_chars(self) -> int:
        """Length of the committed (frontier) text in the newest snapshot."""
        return len(self._text)

    @property
    def final_text(self) -> str | None:
        """The answer text at `finish` (None before)."""
        return self._final_text

    @property
    def finished(self) -> bool:
        return self._final_text is not None

    @property
    def pin_request(self) -> int:
        """How many leading canvas tokens the engine should pin: all that the releases cover."""
        return self._tokens_released

    def chunk_raw(self, chunk_id: int) -> str:
        """The response text slice a chunk was cut from, as it stood when released."""
        return self._chunk_raw[chunk_id]

    def damaged_chunks(self) -> list[Chunk]:
        """Chunks whose text no longer matches the final answer (possible only with unsafe policies)."""
        if self._final_text is None:
            return []
        return [c for c in self._chunks
                if self._final_text[c.start_char:c.end_char] != self._chunk_raw[c.chunk_id]]

    def commit_payload(self, chunk: Chunk) -> dict[str, Any]:
        """The payload of the gate_commit event for `chunk`."""
        return {"chunk_id": chunk.chunk_id, "text": chunk.text, "start_char": chunk.start_char,
                "end_char": chunk.end_char, "tokens_end": chunk.tokens_end, "policy": str(self.policy)}

    # ---- policy -------------------------------------------------------------------------------------

    def _frontier(self, snap: Snapshot) -> int:
        """Leading tokens that may be released under the policy (never past the answer's EOS)."""
        prefix = snap.prefix_len
        base = self.policy.base
        if base == "final":
            f = 0
        elif base == "prefix":
            f = prefix
        elif base == "block":
            f = min(snap.blocks_done, prefix)
        else:  # stable:K: tokens equal in each of the last K snapshots' prefixes
            f = 0
            if len(self._hist) >= self.policy.k:
                n = min(s.prefix_len for s in self._hist)
                while f < n and all(s.tokens[f] == snap.tokens[f] for s in self._hist):
                    f += 1
        if self.policy.pinned:
            f = max(f, min(snap.pinned, prefix))
        return f

    # ---- shaper -------------------------------------------------------------------------------------

    def _release(self, now: int) -> list[Chunk]:
        self._now = now
        out: list[Chunk] = []
        text = self._text
        while True:
            start = self._released
            j = start
            while j < len(text) and text[j].isspace():
                j += 1
            if j < len(text) and text[j] == TOOL_OPEN:
                if not self._take_tool_span(text, j, now):
                    break
                continue
            tool_at = text.find(TOOL_OPEN, start)
            stop = tool_at if tool_at >= 0 else len(text)
            last_kind = "tool" if tool_at >= 0 else ("end" if self._complete else None)
            cut = self._choose(_boundaries(text, start, stop, last_kind), now)
            if cut is None:
                break
            end, words = cut
            raw = text[start:end]
            tokens_end = self._advance(end)
            self._wait_since = None
            if words > 0:
                chunk = Chunk(len(self._chunks), " ".join(raw.split()), start, end, now, tokens_end)
                self._chunks.append(chunk)
                self._chunk_raw.append(raw)
                out.append(chunk)
        if self.policy.pinned and self._pin is not None and self._tokens_released > self._pinned_sent:
            self._pinned_sent = self._tokens_released
            self._pin(self._pinned_sent)
        return out

    def _take_tool_span(self, text: str, open_at: int, now: int) -> bool:
        """Release the tool span opening at `open_at` if it is closed (or the answer ended); False = wait."""
        end = span_end(text, open_at)
        if end < 0:
            if not self._complete:
                return False
            self._malformed.append(text[open_at:])  # never closed: drop it, never speak it
            self._advance(len(text))
            return True
        raw = text[open_at:end]
        parsed = parse_span(raw)
        tokens_end = self._advance(end)
        if parsed is None:
            self._malformed.append(raw)
        else:
            call = ToolCall(parsed[0], parsed[1], raw, open_at, end, now, tokens_end)
            self._tools.append(call)
            self._new_tools.append(call)
        return True

    def _choose(self, cands: list[tuple[int, int, str]], now: int) -> tuple[int, int] | None:
        """Pick the cut for the next chunk: (end char, words), or None to wait for more text."""
        p = self.shaper
        short_first = p.first_chunk_short and not self._chunks
        for end, words, kind in cands:
            if kind in ("end", "tool"):  # the phrase is over: flush it (silently if it has no words)
                return end, words
            if words == 0:
                continue
            if kind == "sentence":
                return end, words
            if kind == "clause" and (short_first or words >= p.min_words):
                return end, words
            if short_first and words >= p.first_min_words:
                return end, words
            if words >= p.max_words:
                return end, words
        speakable = [(end, words) for end, words, _ in cands if words > 0]
        if not speakable:
            self._wait_since = None
            return None
        if self._wait_since is None:
            self._wait_since = now
        if now - self._wait_since >= p.max_hold_ms * 1e6:
            return speakable[-1]
        return None

    def _advance(self, end: int) -> int:
        """Mark the response text up to `end` as released; return the canvas tokens it covers."""
        self._raw.append(self._text[self._released:end])
        self._released = end
        tokens = 0
        if self._snap is not None and end > 0:
            # the cut also relied on the char right after it (the whitespace or "[" that ends the word):
            # cover the token holding it, so pinning keeps the last released word complete
            need = end + 1 if end < len(self._text) else end
            total = 0
            for i, piece in enumerate(self._snap.pieces):
                total += len(piece)
                if total >= need:
                    tokens = i + 1
                    break
            else:
                tokens = len(self._snap.pieces)
            # a cut at the answer's end relied on the EOS: cover it too, so the last word cannot grow
            if end == len(self._text) and self._complete and self._snap.eos is not None:
                tokens = max(tokens, self._snap.eos + 1)
        self._tokens_released = max(self._tokens_released, tokens)
        return tokens
