"""The event rows of docs/metrics.md: schema, payload contract and JSON-lines I/O.

Pure Python (no pipecat, no torch). Every observer writes `Event`s; `voicelab.measure.metrics` reads them.

Turn attribution (the contract the figures rely on, `voicelab.measure.metrics`):
- caller events (`caller_clip_*`, `caller_speech_*`) carry the fixture index of their utterance;
- everything on the reply path (`turn_end` .. `llm_request`, `engine_*`, `gate_commit`, `tool_call`, `tts_*`,
  `playout_*`, `bot_audible_*`, `context_update`) carries the turn of the caller utterance being answered
  (the "reply turn"), including the tail of a reply that keeps playing while the next caller speaks;
- `interruption` may carry any turn: the figures attribute it by time to the caller utterance that caused it;
- call-level events (`call_start`, `call_end`, `error` outside a turn) use turn -1.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from engines.snapshot import Snapshot


class EventLogError(ValueError):
    """A malformed event row or log file; the message is one line naming the file and line or field."""


class EventKind(StrEnum):
    # ground truth from the fixture player (payload: text, expect, clip) and call bounds
    CALL_START = "call_start"
    CALL_END = "call_end"
    CALLER_CLIP_START = "caller_clip_start"
    CALLER_CLIP_END = "caller_clip_end"
    CALLER_SPEECH_START = "caller_speech_start"  # payload: expect ("interrupt" | "no_interrupt" | None), text
    CALLER_SPEECH_END = "caller_speech_end"
    # input side of the pipeline
    VAD_START = "vad_start"
    VAD_STOP = "vad_stop"
    TURN_END = "turn_end"
    TURN_DECISION = "turn_decision"  # payload: audio_p, text_p, text, silence_ms, required_ms, reason (--turn decide)
    PREEMPT_START = "preempt_start"  # payload: gen_id, text (an answer started before the turn was confirmed)
    PREEMPT_RESULT = "preempt_result"  # payload: gen_id, outcome (hit | miss), text, final, wasted_engine_ms
    STT_FINAL = "stt_final"  # payload: text
    LLM_REQUEST = "llm_request"  # payload: messages (count) or text
    # engine and gate
    ENGINE_SNAPSHOT = "engine_snapshot"  # payload: see snapshot_payload()
    ENGINE_DONE = "engine_done"  # payload: tokens, steps, forwards, cancelled
    GATE_COMMIT = "gate_commit"  # payload: chunk_id, text, start_char, end_char, tokens_end, policy
    TOOL_CALL = "tool_call"  # payload: name, args, raw, start_char, end_char
    # speculative synthesis: a chunk not committed yet sent to TTS, its audio held
    SPECULATIVE_REQUEST = "speculative_request"  # payload: spec_id, text, start_char, end_char, confidence
    SPECULATIVE_RESULT = "speculative_result"  # payload: spec_id, outcome (hit | drop), reason, chunk_id, tts_ms_saved
    # output side
    TTS_REQUEST = "tts_request"  # payload: chunk_id, text
    TTS_FIRST_AUDIO = "tts_first_audio"  # payload: chunk_id
    TTS_AUDIO_DONE = "tts_audio_done"  # payload: chunk_id
    PLAYOUT_START = "playout_start"  # payload: chunk_id, text
    PLAYOUT_STOP = "playout_stop"  # payload: chunk_id, text, played (words heard, if known), interrupted
    PLAYOUT_PAUSE = "playout_pause"  # the speaker held the bot's audio (t: its last handed-over sample); payload: reason
    PLAYOUT_RESUME = "playout_resume"  # paused audio continues (t: its next sample); payload: gap_ms, reason
    PAUSE_DECISION = "pause_decision"  # a paused bot's verdict; payload: action, reason, text, interruption_p, ...
    BOT_AUDIBLE_ONSET = "bot_audible_onset"  # acoustic, from the output side (the onset rule, docs/metrics.md)
    BOT_AUDIBLE_END = "bot_audible_end"
    BOT_STARTED_SPEAKING = "bot_started_speaking"  # pipecat frames
    BOT_STOPPED_SPEAKING = "bot_stopped_speaking"
    INTERRUPTION = "interruption"  # payload: bot_speaking (bool, whether the bot was talking)
    CONTEXT_UPDATE = "context_update"  # payload: content, interrupted
    ERROR = "error"  # payload: where, message
    # robustness (voicelab.pipeline.processors.watchdog, voicelab.pipeline.processors.faults_wrappers)
    WATCHDOG = "watchdog"  # payload: what (engine_first_snapshot, engine_total, tts_chunk, stt_final), limit_s
    CALL_LIMIT = "call_limit"  # payload: limit_s; the call was ended there
    FAULT = "fault"  # payload: fault (e.g. engine-stall), where (turn:N or t:S); an injected failure fired
    # the live page (voicelab.web): its own figures and its clock, in performance.now() ms
    CLIENT_FAR = "client_far"  # payload: far_ms, mic/bot times, jb_delay_s, jb_emitted, jb_window_end_ms
    CLOCK_SYNC = "clock_sync"  # payload: page_send_ms, page_recv_ms (a ping's round trip), server_ms


# Payload keys the figures read; rows missing them are refused on write and on read.
REQUIRED_PAYLOAD: dict[EventKind, tuple[str, ...]] = {
    EventKind.ENGINE_SNAPSHOT: ("step", "text"),
    EventKind.GATE_COMMIT: ("chunk_id", "text", "start_char", "end_char"),
    EventKind.TOOL_CALL: ("name", "raw"),
    EventKind.SPECULATIVE_REQUEST: ("spec_id", "text"),
    EventKind.SPECULATIVE_RESULT: ("spec_id", "outcome"),
    EventKind.TTS_REQUEST: ("chunk_id",),
    EventKind.TTS_FIRST_AUDIO: ("chunk_id",),
    EventKind.PLAYOUT_START: ("chunk_id",),
    EventKind.PLAYOUT_STOP: ("chunk_id",),
    EventKind.PLAYOUT_RESUME: ("gap_ms",),
    EventKind.CONTEXT_UPDATE: ("content", "interrupted"),
    EventKind.ERROR: ("where", "message"),
    EventKind.WATCHDOG: ("what", "limit_s"),
    EventKind.CALL_LIMIT: ("limit_s",),
    EventKind.FAULT: ("fault", "where"),
    EventKind.CLIENT_FAR: ("far_ms", "mic_end_ms", "bot_onset_ms"),
    EventKind.CLOCK_SYNC: ("page_send_ms", "page_recv_ms", "server_ms"),
}


@dataclass(frozen=True, slots=True)
class Event:
    """One row: which call, which turn, when (ns on the call clock, zero at call start), what, details."""

    call_id: str
    turn: int
    t_ns: int
    kind: str
    payload: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"call_id": self.call_id, "turn": self.turn, "t_ns": self.t_ns, "kind": str(self.kind),
                "payload": self.payload}

    @classmethod
    def from_dict(cls, d: Any) -> Event:
        """Build and check an event; raises EventLogError naming the bad field."""
        if not isinstance(d, dict):
            raise EventLogError("event row is not a JSON object")
        for key, typ in (("call_id", str), ("turn", int), ("t_ns", int), ("kind", str), ("payload", dict)):
            if key not in d:
                raise EventLogError(f"missing field '{key}'")
            v = d[key]
            if not isinstance(v, typ) or isinstance(v, bool):
                raise EventLogError(f"field '{key}' must be {typ.__name__}, got {type(v).__name__}")
        e = cls(call_id=d["call_id"], turn=d["turn"], t_ns=d["t_ns"], kind=d["kind"], payload=d["payload"])
        validate_event(e)
        return e


def validate_event(e: Event) -> None:
    """Raise EventLogError if the kind is unknown or a payload key the figures need is missing."""
    try:
        kind = EventKind(e.kind)
    except ValueError:
        raise EventLogError(f"field 'kind': unknown event kind '{e.kind}'") from None
    for key in REQUIRED_PAYLOAD.get(kind, ()):
        if key not in e.payload:
            raise EventLogError(f"field 'payload.{key}' missing for kind '{kind}'")


def event_to_json(e: Event) -> str:
    validate_event(e)
    try:
        return json.dumps(e.to_dict(), ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise EventLogError(f"field 'payload' of {e.kind} event is not JSON-serializable: {exc}") from None


def write_events(path: str | Path, events: Iterable[Event]) -> None:
    """Write events as JSON lines (one object per line), replacing the file."""
    p = Path(path)
    lines = []
    for i, e in enumerate(events):
        try:
            lines.append(event_to_json(e))
        except EventLogError as exc:
            raise EventLogError(f"{p}: event {i}: {exc}") from None
    p.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def read_events(path: str | Path) -> list[Event]:
    """Read a JSON-lines event log; a malformed line raises EventLogError('FILE:LINE: what is wrong')."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise EventLogError(f"{p}: cannot read event log: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise EventLogError(f"{p}: event log is not UTF-8 text") from None
    return list(_parse_lines(p, text.splitlines()))


def _parse_lines(p: Path, lines: Iterable[str]) -> Iterator[Event]:
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EventLogError(f"{p}:{lineno}: not valid JSON ({exc.msg})") from None
        try:
            yield Event.from_dict(d)
        except EventLogError as exc:
            raise EventLogError(f"{p}:{lineno}: {exc}") from None


class EventWriter:
    """Append events to a JSON-lines file as they happen (one flushed line each), for live observers."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._f: IO[str] | None = self.path.open("a", encoding="utf-8")

    def write(self, e: Event) -> None:
        if self._f is None:
            raise EventLogError(f"{self.path}: event writer is closed")
        try:
            line = event_to_json(e)
        except EventLogError as exc:
            raise EventLogError(f"{self.path}: {exc}") from None
        self._f.write(line + "\n")
        self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def revised_char_offsets(snap: Snapshot, prev: Snapshot | None) -> list[int]:
    """Char offsets, in the previous snapshot's text, of the positions `snap` revised.

    The offset of position p is the length of the text of the positions before it (masked ones count as
    ''), so a position past the contiguous prefix maps at or beyond the prefix text's end.
    """
    pieces = prev.pieces if prev is not None else snap.pieces
    cum = [0]
    for piece in pieces:
        cum.append(cum[-1] + len(piece))
    return [cum[min(p, len(pieces))] for p in snap.revised]


def snapshot_payload(snap: Snapshot, prev: Snapshot | None = None, canvas: bool = False) -> dict[str, Any]:
    """The payload of an engine_snapshot event (pass the previous snapshot of the same reply, if any).

    With `canvas=True` it also carries the per-position state the report's canvas heatmap draws:
    `mask` (one character per canvas position, "1" masked, "0" unmasked) and `confidence` (per position,
    3 decimals). It costs a few bytes per position and step, so it is opt-in.
    """
    payload: dict[str, Any] = {
        "step": snap.step,
        "prefix_len": snap.prefix_len,
        "masked": sum(snap.masked),
        "text": snap.text(),
        "revised": list(snap.revised),
        "revised_chars": revised_char_offsets(snap, prev),
        "forwards": snap.forwards,
        "blocks_done": snap.blocks_done,
        "pinned": snap.pinned,
        "eos": snap.eos,
        "done": snap.done,
    }
    if canvas:
        payload["mask"] = "".join("1" if m else "0" for m in snap.masked)
        payload["confidence"] = [round(float(c), 3) for c in snap.confidence]
    return payload
