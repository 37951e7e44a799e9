"""The telephone media stream's messages, as the carrier (the lab) writes and reads them.

One WebSocket per call, text frames, one JSON object each with an ``event`` field (Twilio Media Streams,
https://www.twilio.com/docs/voice/media-streams/websocket-messages; Telnyx, Plivo, Exotel and Vonage use the
same shape). Carrier to agent: ``connected``, ``start`` (stream and call ids, media format, custom
parameters), ``media`` (base64 µ-law, 8 kHz mono, 20 ms a message here), ``dtmf``, ``mark`` (echo of the
agent's mark once played or cleared) and ``stop``. Agent to carrier: ``media``, ``mark`` and ``clear``.

Pure Python: builders for what the carrier sends, and `parse_agent` for what the agent sends, which refuses a
message the line cannot carry with a `LineProtocolError` saying what is wrong in one line.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, Literal

ENCODING = "audio/x-mulaw"
SAMPLE_RATE = 8000
MEDIA_FORMAT = {"encoding": ENCODING, "sampleRate": SAMPLE_RATE, "channels": 1}
# keys some carriers use to declare a media payload's format (Plivo, Vonage, Exotel variants)
_FORMAT_KEYS = ("encoding", "contentType", "content_type", "format", "mediaFormat")
_MULAW_NAMES = {"audio/x-mulaw", "audio/mulaw", "mulaw", "ulaw", "pcmu", "audio/pcmu", "g711_ulaw", "x-mulaw"}


class LineProtocolError(ValueError):
    """A message the media stream cannot carry; the text is one line saying what is wrong."""


def _short(text: str, n: int = 60) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= n else text[:n] + "…"


# ---- carrier -> agent ------------------------------------------------------------------------------------

@dataclass
class StreamIds:
    """The ids a carrier gives one call (Twilio's streamSid and callSid shapes) and the counters it keeps."""

    stream_sid: str
    call_sid: str
    account_sid: str = "AC00000000000000000000000000000000"
    sequence: int = 0  # every message but `connected` carries the next sequenceNumber ("1", "2", ...)
    chunk: int = 0  # media chunk counter

    def next_seq(self) -> str:
        self.sequence += 1
        return str(self.sequence)


def connected() -> str:
    return json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"})


def start(ids: StreamIds, custom_parameters: dict[str, str] | None = None) -> str:
    return json.dumps({
        "event": "start", "sequenceNumber": ids.next_seq(), "streamSid": ids.stream_sid,
        "start": {"streamSid": ids.stream_sid, "accountSid": ids.account_sid, "callSid": ids.call_sid,
                  "tracks": ["inbound"], "customParameters": dict(custom_parameters or {}),
                  "mediaFormat": dict(MEDIA_FORMAT)},
    })


def media(ids: StreamIds, payload: bytes, timestamp_ms: int) -> str:
    ids.chunk += 1
    return json.dumps({
        "event": "media", "sequenceNumber": ids.next_seq(), "streamSid": ids.stream_sid,
        "media": {"track": "inbound", "chunk": str(ids.chunk), "timestamp": str(timestamp_ms),
                  "payload": base64.b64encode(payload).decode("ascii")},
    })


def mark(ids: StreamIds, name: str) -> str:
    return json.dumps({"event": "mark", "sequenceNumber": ids.next_seq(), "streamSid": ids.stream_sid,
                       "mark": {"name": name}})


def dtmf(ids: StreamIds, digit: str) -> str:
    return json.dumps({"event": "dtmf", "sequenceNumber": ids.next_seq(), "streamSid": ids.stream_sid,
                       "dtmf": {"track": "inbound_track", "digit": digit}})


def stop(ids: StreamIds) -> str:
    return json.dumps({"event": "stop", "sequenceNumber": ids.next_seq(), "streamSid": ids.stream_sid,
                       "stop": {"accountSid": ids.account_sid, "callSid": ids.call_sid}})


# ---- agent -> carrier ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AgentMessage:
    kind: Literal["media", "mark", "clear", "other"]
    audio: bytes = b""  # µ-law bytes of a media message
    name: str = ""  # a mark's name; the event name of an "other" message
    raw: dict[str, Any] = field(default_factory=dict)


def _declared_format(obj: dict[str, Any]) -> str | None:
    """The codec a media message declares, when it declares one that is not 8 kHz µ-law (else None)."""
    enc: str | None = None
    rate = obj.get("sampleRate") or obj.get("sample_rate")
    for key in _FORMAT_KEYS:
        v = obj.get(key)
        if isinstance(v, dict):
            enc = v.get("encoding") or v.get("contentType") or enc
            rate = v.get("sampleRate") or v.get("sample_rate") or rate
        elif isinstance(v, str):
            enc = v
    bad_enc = enc is not None and str(enc).lower().split(";")[0].strip() not in _MULAW_NAMES
    bad_rate = rate is not None and rate != SAMPLE_RATE
    if not (bad_enc or bad_rate):
        return None
    return f"{enc or ENCODING}" + (f" at {rate} Hz" if rate else "")


def parse_agent(data: str | bytes, stream_sid: str) -> AgentMessage:
    """One message from the agent; raises LineProtocolError for anything the line cannot carry."""
    if isinstance(data, bytes):
        raise LineProtocolError(f"sent a binary WebSocket frame ({len(data)} bytes); the media stream carries "
                                "JSON text messages (raw audio in binary frames is another protocol)")
    try:
        msg = json.loads(data)
    except json.JSONDecodeError as e:
        raise LineProtocolError(f"sent malformed JSON ({e.msg} at column {e.colno}): {_short(data)!r}") from None
    if not isinstance(msg, dict) or not isinstance(msg.get("event"), str):
        raise LineProtocolError(f"sent a message without an \"event\" field: {_short(data)!r}")
    event = msg["event"]
    sid = msg.get("streamSid")
    if event in ("media", "mark", "clear") and sid is not None and sid != stream_sid:
        raise LineProtocolError(f"sent {event} for stream {sid!r}; this call's stream is {stream_sid!r}")
    if event == "media":
        body = msg.get("media")
        if not isinstance(body, dict) or not isinstance(body.get("payload"), str):
            raise LineProtocolError(f"sent a media message without media.payload: {_short(data)!r}")
        other = _declared_format(body) or _declared_format(msg)
        if other:
            raise LineProtocolError(f"sent audio as {other}; the line carries {ENCODING} at {SAMPLE_RATE} Hz")
        try:
            audio = base64.b64decode(body["payload"], validate=True)
        except (binascii.Error, ValueError):
            raise LineProtocolError(f"sent a media payload that is not base64: {_short(body['payload'])!r}") from None
        if audio[:4] == b"RIFF" or audio[:4] == b"OggS" or audio[:3] == b"ID3":
            raise LineProtocolError(f"sent a {audio[:4].decode('latin-1').strip()} file in a media payload; the "
                                    f"line carries raw {ENCODING} at {SAMPLE_RATE} Hz")
        return AgentMessage("media", audio=audio, raw=msg)
    if event == "mark":
        body = msg.get("mark")
        name = body.get("name") if isinstance(body, dict) else None
        if not isinstance(name, str):
            raise LineProtocolError(f"sent a mark without mark.name: {_short(data)!r}")
        return AgentMessage("mark", name=name, raw=msg)
    if event == "clear":
        return AgentMessage("clear", raw=msg)
    return AgentMessage("other", name=event, raw=msg)
