"""What the live page shows, as plain functions of snapshots and event rows (no pipecat, no torch).

- `CanvasView` keeps the canvas of the reply being generated and says, per response position, whether it
  is masked, tentative (unmasked but not released), committed (released by the gate), spoken (its word has
  started playing) or past the answer's end; revised positions are collected between two messages so the
  page can flash them, and each step's states are kept for the page's step history (a tiny engine
  denoises a reply in a few steps within a tenth of a second: too fast to watch, not to read back).
- `live_latency` is the server-side first audible response of one live turn, with the breakdown of
  docs/metrics.md. A live call has no fixture ground truth, so the caller's speech end is estimated from the
  VAD: its stop row minus the VAD's `stop_secs` (the silence it waited for). The figure is then computed
  by `voicelab.measure.metrics.turn_table` itself, on a copy of the turn's rows with that estimate standing in
  for the truth rows, so the definitions are the lab's, not a second implementation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engines.snapshot import Snapshot
from voicelab.measure.events import Event, EventKind
from voicelab.measure.metrics import turn_table

K = EventKind

MASKED, TENTATIVE, COMMITTED, SPOKEN, END = "m", "t", "c", "s", "e"
# the breakdown the page draws: the summary's five parts plus the gate-to-TTS hop, so the parts add up
LIVE_PARTS = ("endpointing", "stt", "engine_first_commit", "gate_to_tts", "tts_first_audio", "playout")


def chars_after_words(text: str, words: int) -> int:
    """Offset in `text` just after its first `words` whitespace-separated words (len(text) if fewer)."""
    if words <= 0:
        return 0
    seen = 0
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        while i < n and not text[i].isspace():
            i += 1
        seen += 1
        if seen >= words:
            return i
    return n


@dataclass
class _CommittedSpan:
    """A gate_commit row as the page keeps it: its reply (`gen`), its [start, end) in the response text and
    its text (`voicelab.gate.Chunk` is the released phrase itself, with its timing)."""

    gen: int
    start: int
    end: int
    text: str


class CanvasView:
    """The canvas of the current reply (one generation) and how far it travelled: gate, then speaker.

    Feed it from the event rows (`on_step` on an engine_snapshot row, `on_done` on an engine_done row,
    `commit` on a gate_commit row), the snapshots themselves (`snapshot`, which carry the per-position
    pieces the rows leave out) and the playout progress (`spoken_words`). `message()` returns the page's
    canvas message when something changed since the last one, else None.

    Step history: a step's row is written once the gate is done with that step, so it shows what the gate
    released at that step. The engine takes its next step only after the gate has acked the previous
    snapshot, so the next engine_snapshot row (or the engine_done row) says the gate is done.
    """

    def __init__(self) -> None:
        self.gen: int | None = None
        self.turn = -1
        self.snap: Snapshot | None = None
        self.committed_chars = 0
        self.spoken_chars = 0
        self.revisions = 0  # positions revised over this reply
        self._revised: set[int] = set()  # positions revised since the last message
        self._chunks: dict[int, _CommittedSpan] = {}
        self._pending: list[Snapshot] = []  # snapshots whose step row waits for the gate
        self._seal_below = 0  # steps below this are done with by the gate
        self._steps: list[list[Any]] = []  # [step, states, revised] rows not yet sent
        self._dirty = False

    def begin(self, gen: int, turn: int) -> None:
        """A row of generation `gen` was logged; a new generation starts a new canvas."""
        if gen == self.gen:
            return
        if self.gen is not None and gen < self.gen:
            return  # a late row of an older reply
        self.gen, self.turn = gen, turn
        self.snap = None
        self.committed_chars = self.spoken_chars = self.revisions = 0
        self._revised.clear()
        self._pending.clear()
        self._steps.clear()
        self._seal_below = 0
        self._chunks = {cid: c for cid, c in self._chunks.items() if c.gen == gen}
        self._dirty = True

    def on_step(self, gen: int, turn: int, step: int) -> None:
        """An engine_snapshot row: the gate is done with every earlier step of this reply."""
        self.begin(gen, turn)
        if gen == self.gen:
            self._seal(step)

    def on_done(self, gen: int) -> None:
        """An engine_done row: the gate is done with every step of this reply."""
        if gen == self.gen:
            self._seal(1 << 30)

    def snapshot(self, snap: Snapshot, gen: int, turn: int) -> None:
        if self.gen is None or gen > self.gen:
            self.begin(gen, turn)
        if gen != self.gen:
            return
        self.snap = snap
        if snap.revised:
            self._revised.update(snap.revised)
            self.revisions += len(snap.revised)
        self._pending.append(snap)
        self._seal(self._seal_below)
        self._dirty = True

    def _seal(self, below: int) -> None:
        self._seal_below = max(self._seal_below, below)
        while self._pending and self._pending[0].step < self._seal_below:
            snap = self._pending.pop(0)
            self._steps.append([snap.step, self.states(snap), sorted(snap.revised)])
            self._dirty = True

    def commit(self, chunk_id: int, start_char: int, end_char: int, text: str) -> None:
        if self.gen is None:
            return
        self._chunks[chunk_id] = _CommittedSpan(self.gen, start_char, end_char, text)
        self.committed_chars = max(self.committed_chars, end_char)
        self._dirty = True

    def spoken_words(self, chunk_id: int, words_started: int) -> None:
        """Words [0, words_started) of a chunk have started playing."""
        c = self._chunks.get(chunk_id)
        if c is None or c.gen != self.gen:
            return
        raw = self._response_text()[c.start:c.end]
        if not raw:
            raw = c.text
        end = c.start + min(c.end - c.start, chars_after_words(raw, words_started))
        if end > self.spoken_chars:
            self.spoken_chars = end
            self._dirty = True

    def _response_text(self) -> str:
        return "" if self.snap is None else "".join(self.snap.pieces)

    def states(self, snap: Snapshot | None = None) -> str:
        """One letter per canvas position: m masked, t tentative, c committed, s spoken, e past the end."""
        snap = self.snap if snap is None else snap
        if snap is None:
            return ""
        out = []
        pos = 0  # chars of response text before this position
        for i, (piece, masked) in enumerate(zip(snap.pieces, snap.masked, strict=True)):
            end = pos + len(piece)
            if snap.eos is not None and i >= snap.eos:
                out.append(END)
            elif masked:
                out.append(MASKED)
            elif end <= self.spoken_chars and end > 0:
                out.append(SPOKEN)
            elif end <= self.committed_chars and end > 0:
                out.append(COMMITTED)
            else:
                out.append(TENTATIVE)
            pos = end
        return "".join(out)

    def message(self) -> dict[str, Any] | None:
        if not self._dirty or self.snap is None:
            return None
        snap = self.snap
        msg = {
            "type": "canvas", "turn": self.turn, "gen": self.gen, "step": snap.step, "done": snap.done,
            "pieces": list(snap.pieces), "state": self.states(), "revised": sorted(self._revised),
            "revisions": self.revisions, "pinned": snap.pinned, "steps": list(self._steps),
        }
        self._revised.clear()
        self._steps.clear()
        self._dirty = False
        return msg


def live_latency(events: Iterable[Event], turn: int) -> dict[str, Any] | None:
    """Server-side FAR of a live turn and its breakdown in ms (see the module doc); None if not heard yet.

    Anchors: the turn's first vad_start minus its start_secs (speech start) and the last vad_stop before
    the turn's turn_end minus its stop_secs (speech end).
    """
    evs = sorted((e for e in events if e.turn == turn), key=lambda e: e.t_ns)
    turn_end = next((e for e in evs if e.kind == K.TURN_END), None)
    if turn_end is None or not any(e.kind == K.BOT_AUDIBLE_ONSET for e in evs):
        return None
    starts = [e for e in evs if e.kind == K.VAD_START]
    stops = [e for e in evs if e.kind == K.VAD_STOP and e.t_ns <= turn_end.t_ns]
    if not stops:
        return None
    stop = stops[-1]
    speech_end = stop.t_ns - int(float(stop.payload.get("stop_secs", 0.0)) * 1e9)
    speech_start = (starts[0].t_ns - int(float(starts[0].payload.get("start_secs", 0.0)) * 1e9)
                    if starts else speech_end)
    call_id = stop.call_id
    truth = [Event(call_id, turn, speech_start, str(K.CALLER_SPEECH_START), {"text": "", "expect": None}),
             Event(call_id, turn, speech_end, str(K.CALLER_SPEECH_END), {"text": "", "expect": None})]
    rows = [r for r in turn_table(truth + evs) if r["turn"] == turn]
    if not rows or rows[0]["far_ms"] is None:
        return None
    row = rows[0]
    return {
        "type": "latency", "turn": turn, "server_far_ms": row["far_ms"],
        "breakdown": {p: row[f"{p}_ms"] for p in LIVE_PARTS},
        "speech_end_estimate": "vad_stop - stop_secs",
    }
