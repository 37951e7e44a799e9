"""The tables of turn-end and barge-in kinds (`voicelab.rules.turn_kinds`), and the one rule both sides run.

A toy turn-end kind (`tests/voicelab/rules/toy_turn_kind.py`: one module, one table entry) goes through everything a kind
reaches: the configuration, the pipecat factory, `voicelab run` (slow), `voicelab bench turns`, and a replay
that ends the turn when its pipecat strategy does. The same check holds `decide`: its pipecat adapter and its
bench replay run the one pure rule, `DecideTurnEnd`, and end a turn on one event sequence at the same moment.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest
from pipecat.frames.frames import (
    Frame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from typer.testing import CliRunner

import tests.voicelab.rules.toy_turn_kind as toy_module
import voicelab.pipeline.resources as resources
from engines.decision.model import Decision
from tests.virtual_loop import VirtualLoop, started
from tests.voicelab.rules.toy_turn_kind import TOY, ToyTurnEndReplay, ToyTurnEndStopStrategy
from tests.voicelab.turnbench.test_cli import _app, _turn_doc
from voicelab.pipeline.config import PipelineConfig, PipelineConfigError
from voicelab.pipeline.turns import barge_in_strategy, turn_end_strategy
from voicelab.pipeline.turns.factory import turn_strategies
from voicelab.pipeline.turns.turn_end_strategy import DecideTurnEndStopStrategy
from voicelab.pipeline.turns.turn_models import TurnModels
from voicelab.rules import barge_in as barge_rule
from voicelab.rules import turn_kinds
from voicelab.rules.turn_end import DecideTurnEnd
from voicelab.rules.turn_kinds import BARGE_IN_KINDS, TURN_KINDS, BargeInSpec, TurnSpec, register
from voicelab.turnbench import bargein, replay
from voicelab.turnbench import turn_bench as bench
from voicelab.turnbench.replay import DecideTurnEndReplay, StopScores, Trace


@pytest.fixture
def toy() -> Iterator[turn_kinds.TurnKind]:
    register(TOY)
    try:
        yield TOY
    finally:
        del TURN_KINDS[TOY.name]


# ---- the tables ----------------------------------------------------------------------------------------------


def test_the_tables_hold_the_kinds_and_their_help() -> None:
    assert list(TURN_KINDS) == ["timeout", "smart", "decide", "fuse", "listen"]  # the bench's row order
    assert list(BARGE_IN_KINDS) == ["pause", "vad", "words"]
    assert all(k.help in turn_kinds.turn_help() for k in TURN_KINDS.values())
    assert PipelineConfig(turn="decide").turn_spec() == TurnSpec("decide")
    assert PipelineConfig(barge_in="words:2").barge_in_spec() == BargeInSpec("words", 2)
    assert TURN_KINDS["decide"].models == {turn_kinds.SMART_TURN, turn_kinds.DECISION}
    assert BARGE_IN_KINDS["pause"].models == {turn_kinds.INTERRUPTION_JUDGE}
    with pytest.raises(ValueError, match="not a new name"):
        register(TURN_KINDS["decide"])


def test_a_kind_s_own_replay_is_named_as_the_kind() -> None:
    assert [r.name for k in TURN_KINDS.values() for r in k.bench_replays()] == [
        "timeout", "smart", "decide", "decide+early", "fuse", "listen"]  # the bench's rows, in order
    with pytest.raises(ValueError, match="must be named 'toy2'"):
        replace(TOY, name="toy2").bench_replays()


def test_the_models_loaded_are_the_ones_the_kinds_name(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[str] = []
    models = TurnModels()
    monkeypatch.setattr(models, "silero_session", lambda: loaded.append("silero"))
    monkeypatch.setattr(models, "smart_turn_session", lambda: loaded.append("smart_turn"))
    monkeypatch.setattr(models, "interruption_judge", lambda d=None: loaded.append("judge"))
    for turn, barge, want in (("decide", "pause", ["smart_turn", "judge"]), ("smart", "vad", ["smart_turn"]),
                              ("timeout:500", "words:3", [])):
        loaded.clear()
        cfg = PipelineConfig(turn=turn, barge_in=barge, vad="webrtc")
        models.preload(cfg)
        assert loaded == want, (turn, barge)
        assert resources.wants_decision(cfg) == (turn == "decide")


def test_a_toy_kind_is_one_module_and_one_entry(toy: turn_kinds.TurnKind) -> None:
    cfg = PipelineConfig(turn="toy:300", barge_in="vad")
    assert cfg.turn_spec() == TurnSpec("toy", 0.3) and cfg.turn_spec().entry is toy
    stop = turn_strategies(cfg).stop
    assert len(stop) == 1 and isinstance(stop[0], ToyTurnEndStopStrategy) and stop[0].rule.silence_s == 0.3
    assert [s.name for s in replay.builtin_strategies()][-1] == "toy"
    assert not resources.wants_decision(cfg)
    with pytest.raises(PipelineConfigError, match="milliseconds"):
        PipelineConfig(turn="toy:0.3")


def test_an_unregistered_kind_is_refused() -> None:
    with pytest.raises(PipelineConfigError, match="turn: 'toy:300' is not timeout:MS"):
        PipelineConfig(turn="toy:300")


# ---- the toy in `voicelab run` and `voicelab bench turns` ------------------------------------------------------


@pytest.mark.slow
def test_voicelab_run_takes_the_toy_kind(toy: turn_kinds.TurnKind, tmp_path: Path) -> None:
    from voicelab.cli.app import app
    from voicelab.measure.events import read_events
    from voicelab.runs.folder import CONFIG, EVENTS, SUMMARY

    out = tmp_path / "runs"
    res = CliRunner().invoke(app, ["run", "single_question", "--stt", "transcript", "--turn", "toy:300",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    root = next(p.parent for p in out.rglob(CONFIG))
    assert "toy:300" in json.dumps(json.loads((root / CONFIG).read_text()))
    summary = json.loads((root / SUMMARY).read_text())
    assert summary["calls"] == 1 and summary["turns"] == 1 and summary["far_ms"]["n"] == 1
    kinds = [e.kind for e in read_events(root / EVENTS)]
    assert "turn_end" in kinds and "turn_decision" not in kinds  # the toy, not `decide`, ended the turn


def test_voicelab_bench_turns_rows_include_the_toy(toy: turn_kinds.TurnKind, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    docs = [_turn_doc(i, float(rng.random()), float(rng.random()), float(rng.uniform(0.2, 2.5))) for i in range(6)]
    monkeypatch.setattr(bench, "load_scores", lambda *a, **k: docs)
    monkeypatch.setattr(bench, "bundled_refs", lambda: [])
    monkeypatch.setattr(bench, "generated_refs", lambda limit=None: [])
    res = CliRunner().invoke(_app(), ["bench-turns", "--json", "--resamples", "0"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["strategy"] for r in rows] == ["timeout", "smart", "decide", "decide+early", "fuse", "listen", "toy"]
    toy_row = rows[-1]
    assert toy_row["knob"] == "silence_ms" and toy_row["pauses"] == 6 and toy_row["ends"] == 6


# ---- one event sequence through the pipecat strategy and the bench replay -------------------------------------


def _play(make: Callable[[], Any], frames: list[tuple[float, Frame]], module: ModuleType,
          monkeypatch: pytest.MonkeyPatch) -> float | None:
    """The frames, each at its time, through the stop strategy `make()` on a virtual clock (`module`'s
    `time.monotonic` follows it); when it first ended the turn."""
    loop = VirtualLoop()
    monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=loop.time, perf_counter=time.perf_counter,
                                                        time=time.time))

    async def inline(f: Any, *args: Any) -> Any:
        return f(*args)

    monkeypatch.setattr(turn_end_strategy.asyncio, "to_thread", inline)  # no executor thread on a virtual clock

    async def run() -> float | None:
        strategy = make()
        ended = await started(strategy, loop)
        try:
            for t, frame in frames:
                await asyncio.sleep(max(0.0, t - loop.time()))
                if ended:
                    break
                await strategy.process_frame(frame)
            await asyncio.sleep(10.0)  # the strategy's own timers, in virtual time
            return ended[0] if ended else None
        finally:
            await strategy.cleanup()

    try:
        return loop.run_until_complete(run())
    finally:
        loop.close()


# a caller says "i want", pauses 0.9 s, then "a table": the VAD's starts and stops, a final at each stop
STRETCHES = ((0.3, 1.0, "i want", 0.05), (1.9, 2.6, "a table", 0.95))  # (VAD start, VAD stop, words, P(complete))
AUDIO_P = 0.9


def _frames() -> list[tuple[float, Frame]]:
    out: list[tuple[float, Frame]] = []
    for start, stop, words, _ in STRETCHES:
        out += [(start, VADUserStartedSpeakingFrame(start_secs=0.2)),
                (stop, VADUserStoppedSpeakingFrame(stop_secs=0.2)),
                (stop, TranscriptionFrame(words, "u", "t", finalized=True))]
    return out


def _trace() -> Trace:
    stops, said = [], ""
    for _, stop, words, p in STRETCHES:
        said = f"{said} {words}".strip()
        stops.append(StopScores(t_s=stop, first_silent_s=stop - 0.2, audio_p=AUDIO_P, smart_ms=0.0, text=said,
                                text_p=p, stt_ms=0.0, decision_ms=0.0))
    return Trace("sequence", "user", 6.0, np.zeros(188, dtype=bool), [], stops, [s[0] for s in STRETCHES])


@pytest.mark.parametrize(("silence_ms", "want"), [(300.0, 1.1), (1200.0, 3.6)])
def test_the_toy_replays_as_its_pipecat_strategy_ends(silence_ms: float, want: float,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ended = _play(lambda: ToyTurnEndStopStrategy(silence_s=silence_ms / 1000.0), _frames(), toy_module, monkeypatch)
    replayed = ToyTurnEndReplay().declarations(_trace(), silence_ms, False)
    assert ended == pytest.approx(want, abs=1e-6) and replayed[0] == pytest.approx(want, abs=1e-6)


class _FakeSmartTurn:
    def set_sample_rate(self, rate: int) -> None: ...

    def append_audio(self, audio: bytes, speaking: bool) -> None: ...

    def update_vad_start_secs(self, secs: float) -> None: ...

    def clear(self) -> None: ...

    async def analyze_end_of_turn(self) -> tuple[None, Any]:
        return None, SimpleNamespace(probability=AUDIO_P)

    async def cleanup(self) -> None: ...


class _FakeDecision:
    """P(complete) of each turn so far, as the trace holds it."""

    def ask(self, task: str, text: str, context: str | None = None) -> Decision:
        p = {"i want": 0.05, "i want a table": 0.95}[text]
        return Decision(answer=p >= 0.5, confidence=max(p, 1 - p), ms=0.0)


def test_decide_replays_as_its_pipecat_strategy_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first stop's words are cut off (2.2 s needed): the caller goes on; the second turn end waits out the
    resumed 0.9 s pause plus `start_secs`: 2.4 + 1.1 = 3.5 s."""
    ended = _play(lambda: DecideTurnEndStopStrategy(analyzer=_FakeSmartTurn(), decision=_FakeDecision()),  # type: ignore[arg-type]
                  _frames(), turn_end_strategy, monkeypatch)
    replayed = DecideTurnEndReplay().declarations(_trace(), 1.0, False)
    assert replayed == [pytest.approx(3.5)]
    assert ended == pytest.approx(replayed[0], abs=0.002)


def test_decide_pipeline_and_bench_run_one_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = DecideTurnEndStopStrategy(analyzer=_FakeSmartTurn(), decision=None)  # type: ignore[arg-type]
    assert type(adapter.rule) is DecideTurnEnd and turn_end_strategy.DecideTurnEnd is replay.DecideTurnEnd
    made: list[DecideTurnEnd] = []

    class Recording(DecideTurnEnd):
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(replay, "DecideTurnEnd", Recording)
    DecideTurnEndReplay().declarations(_trace(), 1.0, False)
    assert len(made) == 1 and made[0].resumed_pause_ms == pytest.approx(900.0)


def test_the_barge_in_adapter_and_bench_share_the_paused_bot() -> None:
    assert barge_in_strategy.PausedBot is bargein.PausedBot is barge_rule.PausedBot
    bot = barge_rule.PausedBot(paused_at_ms=0.0)
    bot.onset_quiet(turn_vad_speaking=True)
    assert bot.caller_speaking
    bot.onset_quiet(turn_vad_speaking=False)
    assert not bot.caller_speaking


def test_the_listen_kind_builds_its_strategy_from_the_spec() -> None:
    from voicelab.pipeline.turns.listen_through_strategy import ListenThroughStopStrategy
    from voicelab.rules.listen_through import ListenPolicy

    cfg = PipelineConfig(turn="listen:0.6:300:2000", barge_in="vad")
    (stop,) = turn_strategies(cfg).stop
    assert isinstance(stop, ListenThroughStopStrategy) and stop.rule.policy == ListenPolicy(0.6, 300, 2000)
    assert stop._analyzer._params.stop_secs == 3.0  # smart-turn's own fallback past the policy's timeout
    assert TURN_KINDS["listen"].models == {turn_kinds.SMART_TURN}
