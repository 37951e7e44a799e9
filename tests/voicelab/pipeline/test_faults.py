"""Fault injection (`voicelab run --inject`): every fault kind through the real pipeline, and what handled it.

The end-to-end part plays `single_question` with the fixture's transcript as STT and a replay engine (fast,
deterministic), one call per fault kind, with short watchdog limits so a stall ends in about a second.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.voicelab.pipeline.test_pipeline import write_trace
from voicelab.analysis.tables import is_finished
from voicelab.cli.common import quiet_pipecat_logs
from voicelab.fixtures.format import FIXTURES_ROOT
from voicelab.measure.events import Event, read_events
from voicelab.measure.events import EventKind as K
from voicelab.pipeline.config import PipelineConfig
from voicelab.pipeline.processors.watchdog import Limits
from voicelab.pipeline.resources import Resources
from voicelab.rules.faults import KINDS, Fault, FaultSpecError, outcomes
from voicelab.runs.calls import run_config

FAST = Limits(engine_first_snapshot_s=1.0, engine_total_s=5.0, tts_chunk_s=1.0, stt_final_s=1.0)


def test_parse_round_trips_and_refuses_bad_specs() -> None:
    assert Fault.parse("engine-stall@turn:2") == Fault("engine-stall", turn=2)
    assert Fault.parse("caller-disconnect@t:1.5").spec == "caller-disconnect@t:1.5"
    for bad in ("engine-melt@turn:1", "tts-raise", "stt-stall@turn:-1", "engine-raise@t:inf", "tts-stall@when:3"):
        with pytest.raises(FaultSpecError):
            Fault.parse(bad)


def test_outcome_is_the_next_watchdog_or_error_of_the_same_call() -> None:
    ev = [Event("a", 0, 10, K.FAULT, {"fault": "engine-stall", "where": "turn:0"}),
          Event("b", 0, 20, K.ERROR, {"where": "tts", "message": "other call"}),
          Event("a", 0, 30, K.WATCHDOG, {"what": "engine_first_snapshot", "limit_s": 1.0}),
          Event("a", 1, 90, K.BOT_AUDIBLE_ONSET, {})]
    (row,) = outcomes(ev)
    assert row["handled_by"] == "watchdog engine_first_snapshot (1 s)" and row["bot_heard_after"] is True


@pytest.fixture(scope="module")
def replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PipelineConfig, Resources]]:
    if not (FIXTURES_ROOT / "single_question" / "fixture.json").is_file():
        pytest.skip("audio_fixtures/single_question not built")
    trace = write_trace(tmp_path_factory.mktemp("trace") / "t.jsonl",
                        [("hi what time do you open on saturday", "we open at nine on saturday.")])
    cfg = PipelineConfig(engine=f"replay:{trace}", stt="transcript", greeting="")
    res = Resources(cfg)
    yield cfg, res
    res.close()


EXPECTED = {
    "engine-raise@turn:0": "error in engine: InjectedFault",
    "engine-stall@turn:0": "watchdog engine_first_snapshot",
    "tts-raise@turn:0": "error in tts: InjectedFault",
    "tts-stall@turn:0": "watchdog tts_chunk",
    "stt-raise@turn:0": "error in stt: InjectedFault",
    "stt-stall@turn:0": "watchdog stt_final",
    "caller-disconnect@t:1.0": "call ended (hung up)",
}
assert {s.split("@")[0] for s in EXPECTED} == set(KINDS)  # every kind has its test


@pytest.mark.slow
@pytest.mark.parametrize("spec", list(EXPECTED))
def test_every_fault_is_handled_and_recorded(replay: tuple[PipelineConfig, Resources], tmp_path: Path,
                                              spec: str) -> None:
    cfg, res = replay
    quiet_pipecat_logs("ERROR")
    run = run_config(cfg, ["single_question"], tmp_path, resources=res, faults=(Fault.parse(spec),), limits=FAST)
    assert is_finished(run)  # the run ended and its folder is whole
    events = read_events(run / "events.jsonl")
    (row,) = outcomes(events)
    assert row["fault"] == spec.split("@")[0] and row["handled_by"].startswith(EXPECTED[spec]), row
    assert [e for e in events if e.kind == K.CALL_END]  # the call ended cleanly
    if spec.startswith("caller"):
        assert not [e for e in events if e.kind == K.CALL_LIMIT]
