"""The live page's figures: the canvas states, the live FAR and its breakdown, turn numbering, playout."""

from __future__ import annotations

import time

import numpy as np
import pytest

from engines.snapshot import Snapshot
from voicelab.measure.events import Event, EventKind
from voicelab.web.live import LIVE_PARTS, CanvasView, chars_after_words, live_latency

K = EventKind


def snap(pieces: list[str], masked: list[bool], step: int = 0, revised: tuple[int, ...] = (),
         eos: int | None = None, done: bool = False) -> Snapshot:
    n = len(pieces)
    return Snapshot(step=step, t_ns=0, tokens=tuple(range(n)), masked=tuple(masked), confidence=(0.5,) * n,
                    guesses=tuple(range(n)), pieces=tuple(pieces), eos=eos, block_size=n, blocks_done=0, pinned=0,
                    forwards=step + 1, done=done, revised=revised)


def test_chars_after_words() -> None:
    assert chars_after_words("on saturday we", 0) == 0
    assert chars_after_words("on saturday we", 1) == 2
    assert chars_after_words("  on  saturday we", 2) == 14
    assert chars_after_words("on saturday", 5) == len("on saturday")


def test_canvas_states_follow_the_reply_from_mask_to_speech() -> None:
    v = CanvasView()
    assert v.message() is None  # nothing to show yet
    v.on_step(1, turn=0, step=0)  # the engine_snapshot row comes first, then the snapshot itself
    v.snapshot(snap(["on", " saturday", " we", "", ""], [False, False, False, True, True]), 1, 0)
    m = v.message()
    assert m is not None and m["state"] == "tttmm" and m["pieces"][1] == " saturday" and m["turn"] == 0
    assert m["steps"] == []  # step 0's row waits until the gate is done with it
    assert v.message() is None  # unchanged since the last message

    v.commit(0, 0, len("on saturday"), "on saturday")  # the gate releases at step 0
    assert v.message()["state"] == "cctmm"
    v.on_step(1, 0, 1)  # the engine took step 1: the gate was done with step 0
    assert v.message()["steps"] == [[0, "cctmm", []]]
    v.snapshot(snap(["on", " saturday", " we", " are", ""], [False, False, False, False, True], step=1), 1, 0)
    v.spoken_words(0, 1)  # "on" has started playing
    assert v.message()["state"] == "scttm"
    v.spoken_words(0, 2)
    assert v.message()["state"] == "ssttm"

    # a revision of a tentative position flashes once; the answer's end shows past-the-end positions
    v.on_step(1, 0, 2)
    v.snapshot(snap(["on", " saturday", " they", ".", ""], [False] * 5, step=2, revised=(2,), eos=4), 1, 0)
    m = v.message()
    assert m["state"] == "sstte" and m["revised"] == [2] and m["revisions"] == 1
    assert [row[0] for row in m["steps"]] == [1]
    v.on_step(1, 0, 3)
    v.snapshot(snap(["on", " saturday", " they", ".", ""], [False] * 5, step=3, eos=4, done=True), 1, 0)
    v.on_done(1)
    m = v.message()
    assert m["revised"] == [] and m["done"]
    assert m["steps"] == [[2, "sstte", [2]], [3, "sstte", []]]  # every step, even between two messages


def test_canvas_step_rows_wait_for_late_snapshots() -> None:
    v = CanvasView()
    v.on_step(1, 0, 0)
    v.on_step(1, 0, 1)  # the row of step 1 came before the snapshot of step 0 reached the view
    v.snapshot(snap(["a", ""], [False, True], step=0), 1, 0)
    assert v.message()["steps"] == [[0, "tm", []]]  # sealed at once: the gate is past step 0
    v.snapshot(snap(["a", " b"], [False, False], step=1), 1, 0)
    assert v.message()["steps"] == []
    v.on_done(1)
    assert v.message()["steps"] == [[1, "tt", []]]


def test_canvas_starts_over_for_a_new_reply_and_ignores_stale_rows() -> None:
    v = CanvasView()
    v.on_step(1, 0, 0)
    v.snapshot(snap(["a", " b"], [False, False]), 1, 0)
    v.commit(0, 0, 3, "a b")
    assert v.message()["state"] == "cc"
    v.on_step(2, 1, 0)
    v.snapshot(snap(["x", " y"], [False, True]), 2, 1)
    v.spoken_words(0, 2)  # playout of the old reply's chunk: not this canvas
    m = v.message()
    assert m["state"] == "tm" and m["gen"] == 2 and m["turn"] == 1
    v.snapshot(snap(["a", " b"], [False, False]), 1, 0)  # a late snapshot of reply 1
    v.on_done(1)
    assert v.message() is None


def _ev(kind: EventKind, t_ms: float, turn: int = 0, **payload: object) -> Event:
    return Event("live", turn, int(t_ms * 1e6), str(kind), dict(payload))


def test_live_latency_uses_the_vad_estimate_and_the_lab_breakdown() -> None:
    evs = [
        _ev(K.VAD_START, 1000, start_secs=0.2),
        _ev(K.VAD_STOP, 2000, stop_secs=0.2),  # a pause inside the turn
        _ev(K.VAD_START, 2300, start_secs=0.2),
        _ev(K.VAD_STOP, 3000, stop_secs=0.2),  # speech ended at about 2800
        _ev(K.STT_FINAL, 3010, text="hi"),
        _ev(K.TURN_END, 3300),
        _ev(K.LLM_REQUEST, 3320, messages=1),
        _ev(K.GATE_COMMIT, 3400, chunk_id=0, text="we open", start_char=0, end_char=7),
        _ev(K.TTS_REQUEST, 3410, chunk_id=0),
        _ev(K.TTS_FIRST_AUDIO, 3600, chunk_id=0),
        _ev(K.VAD_START, 3650, turn=1, start_secs=0.2),  # the next turn's rows do not count
    ]
    assert live_latency(evs, 0) is None  # not heard yet
    evs.append(_ev(K.BOT_AUDIBLE_ONSET, 3700))
    lat = live_latency(evs, 0)
    assert lat is not None and lat["server_far_ms"] == pytest.approx(900.0)
    assert lat["breakdown"] == {"endpointing": 500.0, "stt": 20.0, "engine_first_commit": 80.0, "gate_to_tts": 10.0,
                                "tts_first_audio": 190.0, "playout": 100.0}
    assert sum(lat["breakdown"][p] for p in LIVE_PARTS) == pytest.approx(lat["server_far_ms"])
    assert live_latency(evs, 1) is None


def test_live_call_log_numbers_caller_turns_from_the_vad() -> None:
    from voicelab.web.calllog import LiveCallLog

    seen: list[Event] = []
    log = LiveCallLog("live", on_event=seen.append)
    # the observer computes the turn before the log knows of the new speech: the log fixes it
    log.log(K.VAD_START, log.caller_turn_at(log.now_ns()), {"start_secs": 0.2})
    log.log(K.VAD_STOP, None, {"stop_secs": 0.2})
    log.log(K.VAD_START, -1, {"start_secs": 0.2})  # same turn: pipecat has not ended it
    assert log.on_turn_end() == 0 and log.reply_turn == 0
    log.log(K.VAD_START, -1, {"start_secs": 0.2})
    assert log.on_turn_end() == 1
    assert [e.turn for e in seen if e.kind == K.VAD_START] == [0, 0, 1]
    assert len(log.turn_starts) == 2 and not any(e.kind.startswith("caller_") for e in seen)


async def test_live_playout_logs_marks_and_the_acoustic_onset() -> None:
    from pipecat.frames.frames import OutputAudioRawFrame
    from pipecat.tests.utils import SleepFrame, run_test

    from voicelab.measure.calllog import CallLog
    from voicelab.pipeline.frames import PlayoutMarkFrame
    from voicelab.pipeline.transport.live_playout import LivePlayout

    sr = 16000
    log = CallLog("live")
    words_seen: list[tuple[int, int]] = []
    proc = LivePlayout(log, sr, on_words=lambda c, n: words_seen.append((c, n)), tick_ms=10, lag_ms=60)
    tone = (0.3 * 32767 * np.sin(2 * np.pi * 220 * np.arange(sr * 40 // 1000) / sr)).astype(np.int16).tobytes()
    silence = bytes(sr * 40 // 1000 * 2)
    words = ["we", "open"]
    # as the WebRTC output pushes them: each 40 ms frame once its audio has gone out (so after 40 ms)
    frames: list = [SleepFrame(0.2)]
    for _ in range(3):  # 120 ms of silence, then the chunk: 400 ms of tone
        frames += [SleepFrame(0.04), OutputAudioRawFrame(silence, sr, 1)]
    frames.append(PlayoutMarkFrame(chunk_id=5, turn=2, word_index=0, words=words, text="we open"))
    for i in range(10):
        if i == 5:
            frames.append(PlayoutMarkFrame(chunk_id=5, turn=2, word_index=1, words=words, text="we open"))
        frames += [SleepFrame(0.04), OutputAudioRawFrame(tone, sr, 1)]
    frames.append(PlayoutMarkFrame(chunk_id=5, turn=2, word_index=2, words=words, text="we open"))
    frames += [SleepFrame(0.04), OutputAudioRawFrame(silence, sr, 1), SleepFrame(0.6)]
    arrivals: list[tuple[int, bool]] = []  # (log clock, a tone frame?) as each audio frame reached the playout
    take_audio = proc._on_audio

    def seen(frame: OutputAudioRawFrame) -> None:
        arrivals.append((log.now_ns(), frame.audio == tone))
        take_audio(frame)

    proc._on_audio = seen  # type: ignore[method-assign]
    t0 = time.monotonic()
    await run_test(proc, frames_to_send=frames)
    kinds = [e.kind for e in log.events]
    assert kinds.count(K.PLAYOUT_START) == 1 and kinds.count(K.PLAYOUT_STOP) == 1
    assert kinds.count(K.BOT_AUDIBLE_ONSET) == 1 and kinds.count(K.BOT_AUDIBLE_END) == 1
    start = next(e for e in log.events if e.kind == K.PLAYOUT_START)
    onset = next(e for e in log.events if e.kind == K.BOT_AUDIBLE_ONSET)
    stop = next(e for e in log.events if e.kind == K.PLAYOUT_STOP)
    assert onset.turn == 2 and start.payload["chunk_id"] == 5
    assert stop.payload["played"] == "we open" and stop.payload["interrupted"] is False
    # the onset is where the first tone frame went out: it arrived once its last 10 ms had left, so it began 30 ms
    # before it arrived (to within two 10 ms ticks), and never before the chunk's start. When it arrived is the
    # machine's (76 ms after the mark once beside a busy loop, where 40 ms was sent): read from the frames
    tone_at = next(t for t, is_tone in arrivals if is_tone)
    assert start.t_ns - 20_000_000 <= onset.t_ns, (start.t_ns, onset.t_ns)
    assert -20 <= (onset.t_ns - (tone_at - 30_000_000)) / 1e6 <= 20, (tone_at, onset.t_ns)
    assert words_seen[0] == (5, 1) and words_seen[-1] == (5, 2)
    assert time.monotonic() - t0 < 10
