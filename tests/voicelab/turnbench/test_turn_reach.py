"""benchmarks/turn_reach.py's rules on a replayed trace: the two-level rule and the capped table do what they say."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

from tests.voicelab.turnbench.test_curve import _trace
from voicelab.rules.turn_end import TurnThresholds
from voicelab.turnbench.replay import WAITS, DecideTurnEndReplay, bounded, score_points

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture
def reach(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the script imports turn_evidence beside it
    return importlib.import_module("turn_reach")


def test_two_level_ends_short_where_the_weighted_logit_reaches_tau(reach: ModuleType) -> None:
    audio_only = reach.TwoLevel(alpha=1.0, tau=0.0, lo=300.0, hi=3000.0)
    assert audio_only.evidence_silence_ms(0.9, 0.01)[0] == 300.0
    assert audio_only.evidence_silence_ms(0.1, 0.99)[0] == 3000.0
    assert audio_only.evidence_silence_ms(None, None)[0] == 300.0  # no source: logit 0, at tau
    words_only = reach.TwoLevel(alpha=0.0, tau=1.0, lo=300.0, hi=200.0)
    assert words_only.evidence_silence_ms(0.99, 0.5)[0] == 300.0  # below tau: hi, never under lo
    assert words_only.cap_ms == 300.0


def test_two_level_sweep_cuts_the_pause_only_while_its_short_wait_is_shorter(reach: ModuleType) -> None:
    t = _trace(0.9, 0.9, pause_s=1.0)  # both sources say complete inside a 1 s pause
    s = reach.TwoLevelSweep(rule={"alpha": 0.5, "tau": 0.0, "hi": 3000.0, "resumed_bound": False})
    assert score_points(t, s.declarations(t, 200.0, False)).cut == [True]
    assert score_points(t, s.declarations(t, 1500.0, False)).cut == [False]


def test_capped_cuts_every_wait_and_keeps_the_shipped_table_at_its_cap(reach: ModuleType) -> None:
    c = reach.Capped()
    th = c.weighing_at(1000.0)
    assert max(th.floor_ms, th.single_sure_ms, th.medium_ms, th.disputed_ms, th.vetoed_ms, th.cap_ms) == 1000.0
    assert c.weighing_at(TurnThresholds().cap_ms) == TurnThresholds()
    vetoed = _trace(0.9, 0.05, pause_s=1.0)  # the words say cut off, the voice done: the veto's 1.2 s waits it out
    assert score_points(vetoed, DecideTurnEndReplay().declarations(vetoed, 1.0, False)).cut == [False]
    assert score_points(vetoed, c.declarations(vetoed, 600.0, False)).cut == [True]


def test_bounded_floors_or_caps_every_wait_of_the_table() -> None:
    th = TurnThresholds()
    floored, capped = bounded(th, low=1500.0), bounded(th, high=500.0)
    assert [getattr(floored, w) for w in WAITS] == [max(1500.0, getattr(th, w)) for w in WAITS]
    assert [getattr(capped, w) for w in WAITS] == [min(500.0, getattr(th, w)) for w in WAITS]
    assert bounded(th) == th and (floored.sure, floored.veto) == (th.sure, th.veto)
