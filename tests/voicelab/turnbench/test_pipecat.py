"""The bench's virtual-clock replay against the real strategies on a handful of cases.

Each case is played frame by frame (20 ms) through pipecat's own `SileroVADAnalyzer` and a real user-turn stop
strategy (pipecat's `SpeechTimeoutUserTurnStopStrategy` and `TurnAnalyzerUserTurnStopStrategy` around
smart-turn v3, and the lab's `DecideTurnEndStopStrategy`), on an asyncio loop whose clock jumps to the next timer
when nothing is ready (so the strategies' own timers run, in virtual time, in milliseconds). The model passes
run inline (no executor thread, which a virtual clock cannot wait for); everything else is the strategies' code.
The time of the first turn end must be the replay's first declaration.

smart-turn's verdict can flip with 20 ms more or less audio at the start of its window, and which 20 ms frame
opens the window depends on float comparisons of frame timestamps (in a live pipeline, on their jitter): the
bench's cached window and the one the analyzer took here may differ by that one frame. So the replay is checked
on the probabilities the analyzer gave in the run (the timers, the VAD and the rule are what is compared), and
its window is checked to be the bench's within one frame.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from pipecat.audio.turn.base_turn_analyzer import EndOfTurnState
from pipecat.audio.turn.smart_turn import base_smart_turn
from pipecat.audio.turn.smart_turn.base_smart_turn import SmartTurnParams
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams, VADState
from pipecat.frames.frames import (
    InputAudioRawFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import SpeechTimeoutUserTurnStopStrategy
from pipecat.turns.user_stop.turn_analyzer_user_turn_stop_strategy import TurnAnalyzerUserTurnStopStrategy

from engines.decision.model import Decision
from tests.virtual_loop import VirtualLoop, started
from voicelab.pcm import to_int16
from voicelab.pipeline.turns import listen_through_strategy, turn_end_strategy
from voicelab.pipeline.turns.listen_through_strategy import ListenReplay, ListenThroughStopStrategy
from voicelab.pipeline.turns.turn_end_strategy import DecideTurnEndStopStrategy
from voicelab.pipeline.turns.turn_models import SharedSmartTurnAnalyzer
from voicelab.rules.listen_through import ListenPolicy
from voicelab.turnbench.audio import render_turn
from voicelab.turnbench.cases import load_corpus
from voicelab.turnbench.replay import DecideTurnEndReplay, SmartReplay, TimeoutReplay, Trace
from voicelab.turnbench.scores import Models, score_turn, trace_of

CASES = ("g0000", "g0003", "g0005", "g0010")
TEXT_P = 0.9  # the fake decision model's P(complete) on any words


class InlineSmartTurn(SharedSmartTurnAnalyzer):
    """smart-turn with its pass run inline: pipecat's `analyze_end_of_turn` without the executor; it records
    (when, samples, P(complete)) of each pass."""

    calls: list[tuple[float, int, float]] = []

    def _predict_endpoint(self, audio_array: np.ndarray) -> dict[str, Any]:
        r = super()._predict_endpoint(audio_array)
        InlineSmartTurn.calls.append((asyncio.get_event_loop().time(), audio_array.size, float(r["probability"])))
        return r

    async def analyze_end_of_turn(self) -> tuple[EndOfTurnState, Any]:
        state, result = self._process_speech_segment(self._audio_buffer)
        if state == EndOfTurnState.COMPLETE:
            self._clear(state)
        return state, result


class FixedDecision:
    def ask(self, task: str, text: str, context: str | None = None) -> Decision:
        return Decision(answer=True, confidence=TEXT_P, ms=0.0)


@pytest.fixture(scope="module")
def cases() -> list[tuple[Any, Trace]]:
    turns = {t.id: t for t in load_corpus()[0]}
    models = Models()
    out = []
    for cid in CASES:
        audio = render_turn(turns[cid])
        doc = score_turn(models, audio, readings=False)
        # the fake decision model's words and verdict at every stop, as the real strategy will get them
        for s in doc["stops"]:
            s["text"], s["text_p"] = "words", TEXT_P
        doc |= {"id": audio.id, "group": "generated", "duration_s": audio.duration_s, "meta": {},
                "points": [p.__dict__ for p in audio.points]}
        out.append((audio, trace_of(doc)))
    return out


def _play(audio: np.ndarray, make: Any, stop_secs: float, transcript: bool,
          monkeypatch: pytest.MonkeyPatch) -> float | None:
    """Play the case through the VAD and the strategy `make(models)` on a virtual clock; the first turn end."""
    loop = VirtualLoop()
    clock = SimpleNamespace(monotonic=loop.time, perf_counter=time.perf_counter, time=time.time)
    monkeypatch.setattr(base_smart_turn, "time", clock)
    monkeypatch.setattr(turn_end_strategy, "time", clock)
    monkeypatch.setattr(listen_through_strategy, "time", clock)

    async def inline(f: Any, *args: Any) -> Any:
        return f(*args)

    monkeypatch.setattr(turn_end_strategy.asyncio, "to_thread", inline)

    async def run() -> float | None:
        strategy = make()
        ended = await started(strategy, loop)
        vad = SileroVADAnalyzer(sample_rate=16000, params=VADParams(stop_secs=stop_secs))
        vad.set_sample_rate(16000)
        pcm = to_int16(audio)  # as the fixture transport sends it
        state = VADState.QUIET
        try:
            for i in range(pcm.size // 320):
                await asyncio.sleep(max(0.0, (i + 1) * 0.02 - loop.time()))
                chunk = pcm[i * 320:(i + 1) * 320].tobytes()
                new = vad._run_analyzer(chunk)
                # pipecat's user aggregator queues the VAD's frames behind the audio frame that caused them
                await strategy.process_frame(InputAudioRawFrame(audio=chunk, sample_rate=16000, num_channels=1))
                if new == VADState.SPEAKING and state in (VADState.QUIET, VADState.STARTING):
                    await strategy.process_frame(VADUserStartedSpeakingFrame(start_secs=0.2))
                elif new == VADState.QUIET and state == VADState.STOPPING:
                    await strategy.process_frame(VADUserStoppedSpeakingFrame(stop_secs=stop_secs))
                    if transcript:  # the final reading, at the stop (pass times left out)
                        await strategy.process_frame(TranscriptionFrame("words", "u", "t", finalized=True))
                state = new
                await asyncio.sleep(0)
                if ended:
                    return ended[0]
            return None
        finally:
            await strategy.cleanup()
            await vad.cleanup()

    try:
        return loop.run_until_complete(run())
    finally:
        loop.close()


@pytest.mark.slow
def test_the_replay_ends_turns_when_the_real_strategies_do(cases: list[tuple[Any, Trace]],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    models = Models()
    checked = 0
    for audio, trace in cases:
        runs = [
            (TimeoutReplay(), 0.2, lambda: SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=0.0,
                                                                               wait_for_transcript=False), False),
            (TimeoutReplay(), 0.6, lambda: SpeechTimeoutUserTurnStopStrategy(user_speech_timeout=0.0,
                                                                               wait_for_transcript=False), False),
            (SmartReplay(), 0.5, lambda: TurnAnalyzerUserTurnStopStrategy(
                turn_analyzer=InlineSmartTurn(models._tm().smart_turn_session()), wait_for_transcript=False), False),
            (DecideTurnEndReplay(), 1.0, lambda: DecideTurnEndStopStrategy(
                analyzer=InlineSmartTurn(models._tm().smart_turn_session()), decision=FixedDecision()), True),
        ]
        for strategy, value, make, transcript in runs:
            stop_secs = value if strategy.name == "timeout" else 0.2
            InlineSmartTurn.calls = []
            real = _play(audio.audio, make, stop_secs, transcript, monkeypatch)
            stops = []
            for s in trace.stops:
                at = [c for c in InlineSmartTurn.calls if abs(c[0] - s.t_s) < 0.005]
                if at:  # the run's own P(complete) at this stop; its window is the bench's within one frame
                    want = round((s.t_s - trace.starts[0] + 0.7) * 16000)
                    assert abs(at[0][1] - want) <= 320, (audio.id, at[0][1], want)
                    s = replace(s, audio_p=at[0][2])
                stops.append(s)
            replayed = strategy.declarations(replace(trace, stops=stops), value, False)
            first = replayed[0] if replayed else None
            assert (real is None) == (first is None), (audio.id, strategy.name, value, real, first)
            if real is not None:
                # the decide strategy wakes on its 50 ms tick or at the due time; the rest act on a frame
                assert real == pytest.approx(first, abs=0.025), (audio.id, strategy.name, value, real, first)
                checked += 1
    assert checked >= 3 * len(cases)


def audio_id(trace: Trace) -> str:
    return trace.id


def _run_scores(trace: Trace) -> list[np.ndarray]:
    """Per VAD stop, the probabilities the strategy's own passes gave at the instants of its silence (the
    replay is fed these: the rule and the clock are what is compared), each window checked to be the one the
    bench scores (`eot_scores.listen_scores`)."""
    out = []
    for s in trace.stops:
        speech_end = s.t_s - 0.2
        nxt = next((t for t in trace.starts if t > s.t_s), float("inf"))
        ps = []
        for k in range(2, 31):
            t = speech_end + k * 0.1
            at = [c for c in InlineSmartTurn.calls if abs(c[0] - t) < 0.005]
            if t >= nxt or not at:
                break
            end = t if k == 2 else t - 0.02  # at later instants the frame ending then is mostly not in yet
            want = min(round((end - trace.starts[0] - 0.02 + 0.7) * 16000), 8 * 16000)
            assert abs(at[0][1] - want) <= 320, (audio_id(trace), t, at[0][1], want)  # one frame: clock ties
            ps.append(at[0][2])
        out.append(np.asarray(ps, np.float32))
    return out


@pytest.mark.slow
def test_listen_replay_ends_turns_when_the_strategy_does(cases: list[tuple[Any, Trace]],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    models = Models()
    checked = 0
    for policy in (ListenPolicy(0.5, 300, 1500), ListenPolicy(0.95, 700, 1000)):
        for audio, trace in cases:
            InlineSmartTurn.calls = []
            real = _play(audio.audio, lambda policy=policy: ListenThroughStopStrategy(
                analyzer=InlineSmartTurn(models._tm().smart_turn_session(),
                                         params=SmartTurnParams(stop_secs=policy.timeout_ms / 1000 + 1)),
                policy=policy), 0.2, False, monkeypatch)
            replayed = ListenReplay(policy=policy).declarations(replace(trace, listen=_run_scores(trace)),
                                                                policy.threshold, False)
            first = replayed[0] if replayed else None
            assert (real is None) == (first is None), (audio.id, policy, real, first)
            if real is not None:
                assert real == pytest.approx(first, abs=0.005), (audio.id, policy, real, first)
                checked += 1
    assert checked >= len(cases)
