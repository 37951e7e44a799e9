"""The line's codec, frame pacing and messages: pure logic, no sockets."""

from __future__ import annotations

import base64
import json
import warnings

import numpy as np
import pytest

from voicelab.call import protocol
from voicelab.call.pacing import FRAME_SAMPLES, ArrivalJitter, FrameClock, split_frames
from voicelab.pipeline.transport import mulaw

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop  # the reference G.711 of Python <= 3.12


def test_mulaw_encode_matches_the_reference_for_every_sample() -> None:
    x = np.arange(-32768, 32768, dtype=np.int16)
    assert mulaw.encode(x) == audioop.lin2ulaw(x.tobytes(), 2)


def test_mulaw_decode_matches_the_reference_table() -> None:
    codes = bytes(range(256))
    assert np.array_equal(mulaw.decode(codes), np.frombuffer(audioop.ulaw2lin(codes, 2), dtype=np.int16))


def test_mulaw_round_trip_keeps_speech_level_audio_close() -> None:
    t = np.arange(8000) / 8000
    x = (0.3 * 32767 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
    y = mulaw.decode(mulaw.encode(x))
    snr = 10 * np.log10(np.sum(x.astype(float) ** 2) / np.sum((x.astype(float) - y) ** 2))
    assert snr > 35  # G.711 gives ~38 dB on a loud tone
    with pytest.raises(ValueError, match="int16"):
        mulaw.encode(x.astype(np.float32))


def test_frames_are_20_ms_and_padded() -> None:
    frames = split_frames(np.ones(401, dtype=np.int16))
    assert FRAME_SAMPLES == 160 and len(frames) == 3 and all(f.size == 160 for f in frames)
    assert frames[2][:81].sum() == 81 and frames[2][81:].sum() == 0


def test_frame_clock_dues_and_lateness() -> None:
    c = FrameClock()
    assert c.due_ns(0) == 20_000_000 and c.due_ns(9) == 200_000_000
    c.sent(0, 20_000_000)
    c.sent(1, 43_500_000)
    c.sent(2, 55_000_000)  # early counts as on time
    assert c.late_ms == [0.0, 3.5, 0.0]


def test_arrival_jitter_is_zero_at_line_rate_and_large_for_bursts() -> None:
    paced = ArrivalJitter()
    for i in range(50):
        paced.arrived(20.0 * i, 160)
    assert paced.jitter_ms == pytest.approx(0.0) and paced.audio_ms == pytest.approx(1000.0)
    burst = ArrivalJitter()
    for i in range(50):
        burst.arrived(0.1 * i, 160)  # a second of audio in 5 ms
    assert burst.jitter_ms > 15 and max(burst.gaps_ms) < 1


def test_carrier_messages_have_the_twilio_shape() -> None:
    ids = protocol.StreamIds("MZ1", "CA1")
    assert json.loads(protocol.connected()) == {"event": "connected", "protocol": "Call", "version": "1.0.0"}
    start = json.loads(protocol.start(ids, {"caller": "x"}))
    assert start["sequenceNumber"] == "1" and start["start"]["mediaFormat"] == {
        "encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}
    assert start["start"]["customParameters"] == {"caller": "x"} and start["start"]["callSid"] == "CA1"
    m = json.loads(protocol.media(ids, b"\xff" * 160, 40))
    assert m["sequenceNumber"] == "2" and m["media"]["chunk"] == "1" and m["media"]["timestamp"] == "40"
    assert base64.b64decode(m["media"]["payload"]) == b"\xff" * 160
    assert json.loads(protocol.mark(ids, "m1"))["mark"] == {"name": "m1"}
    assert json.loads(protocol.stop(ids))["stop"]["callSid"] == "CA1"


def test_agent_messages_parse_and_bad_ones_are_refused_in_one_line() -> None:
    sid = "MZ1"
    payload = base64.b64encode(b"\x7f" * 160).decode()
    m = protocol.parse_agent(json.dumps({"event": "media", "streamSid": sid, "media": {"payload": payload}}), sid)
    assert m.kind == "media" and m.audio == b"\x7f" * 160
    assert protocol.parse_agent('{"event": "clear", "streamSid": "MZ1"}', sid).kind == "clear"
    assert protocol.parse_agent('{"event": "mark", "mark": {"name": "a"}}', sid).name == "a"
    assert protocol.parse_agent('{"event": "whatever"}', sid).kind == "other"
    bad = {
        "not json": "malformed JSON",
        '{"media": {}}': "without an \"event\" field",
        '{"event": "media", "media": {}}': "without media.payload",
        '{"event": "media", "streamSid": "MZ2", "media": {"payload": ""}}': "this call's stream is 'MZ1'",
        '{"event": "media", "media": {"payload": "***"}}': "not base64",
        json.dumps({"event": "media", "media": {"payload": base64.b64encode(b"RIFF0000WAVE").decode()}}): "RIFF",
        '{"event": "media", "media": {"payload": "", "encoding": "audio/l16"}}': "audio/l16",
        '{"event": "media", "media": {"payload": "", "sampleRate": 16000}}': "at 16000 Hz",
        '{"event": "mark", "mark": {}}': "without mark.name",
    }
    for text, what in bad.items():
        with pytest.raises(protocol.LineProtocolError, match=None) as e:
            protocol.parse_agent(text, sid)
        assert what in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(protocol.LineProtocolError, match="binary WebSocket frame"):
        protocol.parse_agent(b"\0\0", sid)


def test_the_line_modules_load_without_the_heavy_stack() -> None:
    import subprocess
    import sys

    code = ("import sys, voicelab.call.line_run, voicelab.call.carrier, voicelab.call.readback; "
            "print([m for m in ('torch', 'pipecat', 'onnxruntime', 'ctranslate2', 'faster_whisper') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
