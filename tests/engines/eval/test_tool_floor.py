"""Picking the tool-call check's floor on the validation split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engines.eval.tool_floor import floor_between, main

scores = st.lists(st.floats(0.0, 1.0, allow_nan=False), max_size=20)


@given(right=scores, wrong=scores)
def test_the_floor_separates_right_from_wrong_calls_or_is_none(right: list[float], wrong: list[float]) -> None:
    floor = floor_between(right, wrong)
    if not right or max(wrong, default=0.0) >= min(right):
        assert floor is None
        return
    assert floor is not None
    # the midpoint, to two decimals: within half a hundredth of it
    mid = (max(wrong, default=0.0) + min(right)) / 2
    assert abs(floor - mid) <= 0.005 + 1e-9


def test_the_command_scores_the_shipped_models_calls_and_writes_them(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "floor.json"
    main(["--model", "ar", "--n", "12", "--garbled", "12", "--out", str(out)])
    res = json.loads(out.read_text())
    assert res["right_calls"] > 0 and res["floor"] is not None
    assert all(0.0 <= s <= 1.0 for s in res["lowest_right"])
    assert res["floor"] <= min(res["lowest_right"])
    assert json.loads(capsys.readouterr().out)["floor"] == res["floor"]
