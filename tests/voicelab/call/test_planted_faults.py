"""The tester trusted on agents with planted faults: benchmarks/planted_faults.py calls the reference agent with a
timing fault (slow), a content fault (wrong-fact) and no fault over the phone line, once each, and every detector
reads the calls. Each fault is flagged by its own detector, the clean agent by none. (The run-level gate,
`voicelab compare --fail-on far_p50:+500ms`, needs 10 answered turns a side, four calls of this fixture: the
bench checks it, not this test.)"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("planted_faults")


@pytest.mark.slow
def test_each_planted_fault_is_flagged_by_its_detector_and_the_clean_agent_by_none(bench: ModuleType,
                                                                                   tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    assert bench.main(["--reps", "1", "--faults", "none", "slow", "wrong-fact", "--out", str(tmp_path / "runs"),
                       "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    calls = {c["fault"]: c for c in result["calls"]}
    assert set(calls) == {"none", "slow", "wrong-fact"}
    assert [d for d, on in calls["none"]["flags"].items() if on] == []
    assert calls["slow"]["flags"]["far_vs_clean"]
    assert calls["wrong-fact"]["flags"]["expectations"]
