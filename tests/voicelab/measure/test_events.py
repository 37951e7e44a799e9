"""Event rows: the kinds of docs/metrics.md, JSON-lines round trip, and one-line errors for bad logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.snapshot import Snapshot
from voicelab.measure.events import (
    REQUIRED_PAYLOAD,
    Event,
    EventKind,
    EventLogError,
    EventWriter,
    read_events,
    snapshot_payload,
    write_events,
)

BRIEF_KINDS = {
    "caller_clip_start", "caller_clip_end", "caller_speech_start", "caller_speech_end", "vad_start", "vad_stop",
    "turn_end", "stt_final", "llm_request", "engine_snapshot", "engine_done", "gate_commit", "tool_call",
    "tts_request", "tts_first_audio", "tts_audio_done", "playout_start", "playout_stop", "bot_audible_onset",
    "bot_audible_end", "bot_started_speaking", "bot_stopped_speaking", "interruption", "context_update",
    "error", "call_start", "call_end",
    "watchdog", "call_limit", "fault",  # watchdogs and injected faults
    "client_far", "clock_sync",  # the live page's own figures and its clock
}


def one_of_each() -> list[Event]:
    out = []
    for i, kind in enumerate(EventKind):
        payload = {key: f"v{i}" for key in REQUIRED_PAYLOAD.get(kind, ())}
        payload["note"] = "ünïcode ok"
        out.append(Event("call-1", i % 3 - 1, i * 1000, kind, payload))
    return out


def test_kinds_cover_the_design() -> None:
    assert BRIEF_KINDS <= {k.value for k in EventKind}  # the design's kinds, and the later issues' on top


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    events = one_of_each()
    write_events(path, events)
    back = read_events(path)
    assert back == events
    assert len(path.read_text(encoding="utf-8").splitlines()) == len(events)
    assert all(isinstance(EventKind(e.kind), EventKind) for e in back)


def test_writer_appends_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    events = one_of_each()[:3]
    with EventWriter(path) as w:
        w.write(events[0])
        assert read_events(path) == events[:1]  # flushed: readable while the call runs
        w.write(events[1])
    with EventWriter(path) as w:
        w.write(events[2])
    assert read_events(path) == events
    with pytest.raises(EventLogError, match="closed"):
        w.write(events[0])


GOOD = '{"call_id":"c","turn":0,"t_ns":5,"kind":"vad_start","payload":{}}'


@pytest.mark.parametrize("bad,message", [
    ('{"call_id":"c","turn":0,', "not valid JSON"),
    ('[1, 2]', "not a JSON object"),
    ('{"turn":0,"t_ns":5,"kind":"vad_start","payload":{}}', "missing field 'call_id'"),
    ('{"call_id":"c","turn":"0","t_ns":5,"kind":"vad_start","payload":{}}', "field 'turn' must be int"),
    ('{"call_id":"c","turn":true,"t_ns":5,"kind":"vad_start","payload":{}}', "field 'turn' must be int"),
    ('{"call_id":"c","turn":0,"t_ns":5.5,"kind":"vad_start","payload":{}}', "field 't_ns' must be int"),
    ('{"call_id":"c","turn":0,"t_ns":5,"kind":"vad_begin","payload":{}}', "unknown event kind 'vad_begin'"),
    ('{"call_id":"c","turn":0,"t_ns":5,"kind":"gate_commit","payload":{"chunk_id":0}}', "payload.text"),
    ('{"call_id":"c","turn":0,"t_ns":5,"kind":"vad_start","payload":[]}', "field 'payload' must be dict"),
])
def test_malformed_line_names_file_and_line(tmp_path: Path, bad: str, message: str) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(GOOD + "\n\n" + bad + "\n", encoding="utf-8")
    with pytest.raises(EventLogError) as info:
        read_events(path)
    text = str(info.value)
    assert text.startswith(f"{path}:3: ") and message in text
    assert "\n" not in text


def test_missing_file_and_bad_payload_on_write(tmp_path: Path) -> None:
    with pytest.raises(EventLogError, match="cannot read event log"):
        read_events(tmp_path / "nope.jsonl")
    with pytest.raises(EventLogError, match="not JSON-serializable"):
        write_events(tmp_path / "x.jsonl", [Event("c", 0, 1, EventKind.VAD_START, {"x": object()})])
    with pytest.raises(EventLogError, match="payload.content"):
        write_events(tmp_path / "x.jsonl", [Event("c", 0, 1, EventKind.CONTEXT_UPDATE, {"interrupted": True})])


def _snap(tokens: tuple[int, ...], pieces: tuple[str, ...], revised: tuple[int, ...] = (), eos: int | None = None,
          ) -> Snapshot:
    masked = tuple(p == "" and (eos is None or i != eos) for i, p in enumerate(pieces))
    return Snapshot(step=3, t_ns=0, tokens=tokens, masked=masked, confidence=(0.5,) * len(tokens),
                    guesses=tokens, pieces=pieces, eos=eos, block_size=len(tokens), blocks_done=0, pinned=1,
                    forwards=7, done=False, revised=revised)


def test_snapshot_payload_maps_revised_positions_to_chars_of_the_previous_text() -> None:
    prev = _snap((1, 2, 3, 9), ("we", " open", " at", ""))
    snap = _snap((1, 4, 3, 9), ("we", " shut", " at", ""), revised=(1, 3))
    p = snapshot_payload(snap, prev)
    assert p == {"step": 3, "prefix_len": 3, "masked": 1, "text": "we shut at", "revised": [1, 3],
                 "revised_chars": [2, 10], "forwards": 7, "blocks_done": 0, "pinned": 1, "eos": None,
                 "done": False}
    json.dumps(p)  # the payload is plain JSON
    assert snapshot_payload(snap)["revised_chars"] == [2, 10]
