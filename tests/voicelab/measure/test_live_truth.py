"""Caller utterances of a live call from a synthetic server recording (voicelab.measure.live_truth)."""

from __future__ import annotations

import numpy as np

from voicelab.measure.events import Event, EventKind
from voicelab.measure.live_truth import LiveTurn, caller_rows, live_turns, live_utterances

SR = 16000
K = EventKind
TOL_S = 0.006  # the onset rule's marks sit up to half a 10 ms window outside a loud sound's edges


def tone(seconds: float, dbfs: float = -20.0) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (10 ** (dbfs / 20) * 32767 * np.sin(2 * np.pi * 220 * t)).astype(np.int16)


def channel(total_s: float, pieces: list[tuple[float, np.ndarray]]) -> np.ndarray:
    out = np.zeros(int(total_s * SR), dtype=np.int16)
    for at, x in pieces:
        out[int(at * SR): int(at * SR) + x.size] = x
    return out


def test_turns_from_vad_and_turn_end_rows() -> None:
    ev = [Event("c", 0, 1_300_000_000, K.VAD_START, {"start_secs": 0.2}),
          Event("c", 0, 2_000_000_000, K.VAD_STOP, {"stop_secs": 0.2}),
          Event("c", 0, 2_100_000_000, K.VAD_START, {"start_secs": 0.2}),  # a pause inside the turn
          Event("c", 0, 3_000_000_000, K.TURN_END, {}),
          Event("c", 1, 5_200_000_000, K.VAD_START, {"start_secs": 0.2})]  # the call ended inside turn 1
    assert live_turns(ev) == [LiveTurn(0, 1_100_000_000, 3_000_000_000), LiveTurn(1, 5_000_000_000, None)]


def test_utterances_are_the_acoustic_speech_of_each_turn() -> None:
    # turn 0: 1.0-1.6 s and 1.8-2.4 s (a 0.2 s pause joins them); a 20 ms click at 3.5 s (not speech);
    # turn 1: 5.0-6.2 s; turn 2: the VAD fired but nothing the onset rule counts is in its window
    left = channel(10.0, [(1.0, tone(0.6)), (1.8, tone(0.6)), (3.5, tone(0.02)), (5.0, tone(1.2))])
    turns = [LiveTurn(0, 1_150_000_000, 3_000_000_000), LiveTurn(1, 5_100_000_000, 6_800_000_000),
             LiveTurn(2, 8_000_000_000, 8_900_000_000)]
    utts = live_utterances(left, SR, turns)
    assert [u.turn for u in utts] == [0, 1]
    assert abs(utts[0].speech_start_s - 1.0) < TOL_S and abs(utts[0].speech_end_s - 2.4) < TOL_S
    assert abs(utts[1].speech_start_s - 5.0) < TOL_S and abs(utts[1].speech_end_s - 6.2) < TOL_S


def test_speech_before_the_window_belongs_to_no_turn() -> None:
    # speech at 0.5 s that no VAD start explains, then turn 0 from 3 s: the early speech is not turn 0's
    left = channel(6.0, [(0.5, tone(0.5)), (3.0, tone(0.8))])
    utts = live_utterances(left, SR, [LiveTurn(0, 3_050_000_000, 4_500_000_000)])
    assert len(utts) == 1 and abs(utts[0].speech_start_s - 3.0) < TOL_S


def test_a_turn_without_turn_end_runs_to_the_next_turn() -> None:
    left = channel(8.0, [(1.0, tone(0.5)), (4.0, tone(0.5))])
    utts = live_utterances(left, SR, [LiveTurn(0, 1_000_000_000, None), LiveTurn(1, 4_000_000_000, None)])
    assert [(u.turn, round(u.speech_end_s, 1)) for u in utts] == [(0, 1.5), (1, 4.5)]


def test_caller_rows_carry_the_turn_and_source() -> None:
    utts = live_utterances(channel(3.0, [(1.0, tone(0.5))]), SR, [LiveTurn(0, 1_000_000_000, 2_000_000_000)])
    rows = caller_rows("c", utts)
    assert [r.kind for r in rows] == [K.CALLER_SPEECH_START, K.CALLER_SPEECH_END]
    assert all(r.turn == 0 and r.payload["source"] == "server_recording" for r in rows)
    assert abs(rows[1].t_ns / 1e9 - 1.5) < TOL_S
