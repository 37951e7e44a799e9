"""`voicelab run`'s tables fit a terminal: at 80 and 100 columns nothing is cut, and every figure of the wide
table still appears in the narrow one (on a committed run of a barge-in and a backchannel call)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from voicelab.measure.events import read_events
from voicelab.measure.figure_views import Flag, Narrow, Part, Wide
from voicelab.measure.figures import views
from voicelab.measure.metrics import turn_table
from voicelab.runs.console import (
    breakdown_cell,
    flags_cell,
    fmt,
    print_summary,
    print_turns,
    summary_figures,
)

RUN = Path(__file__).parents[2] / "data" / "run_barge_in_backchannel"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return turn_table(read_events(RUN / "events.jsonl"))


def _render(width: int, fn, *args, **kw) -> str:  # noqa: ANN001
    console = Console(width=width, record=True, color_system=None, force_terminal=False)
    fn(console, *args, **kw)
    return console.export_text()


@pytest.mark.parametrize("width", [80, 100])
def test_narrow_turn_tables_fit_and_keep_every_figure(rows: list[dict], width: int) -> None:
    text = _render(width, print_turns, rows, title="run: per turn")
    assert all(len(line) <= width for line in text.splitlines())
    assert "…" not in text  # no header or cell cut short
    for r in rows:
        assert f"call {r['call_id']}" in text
        cell = breakdown_cell(r)
        for f, part in views(Part):
            if r.get(f.name) is not None:
                assert f"{part.label} {fmt(r[f.name])}" in cell
        joined = " ".join(text.split())  # folded cells: compare without line breaks
        for figure in (r.get("far_ms"), r.get("stop_latency_ms")):
            if figure is not None:
                assert fmt(figure) in joined
        for flag in filter(None, flags_cell(r).split(", ")):
            assert flag.split()[0] in joined


def test_flags_name_each_defect_present_and_nothing_for_a_clean_turn() -> None:
    clean = {"false_cut_in": False, "false_barge_in": False, "heard_word_errors": 0, "audible": 0, "coherent": True,
             "errors": 0}
    assert flags_cell(clean) == ""
    dirty = {**clean, "false_barge_in": True, "heard_word_errors": 2, "audible": 1, "coherent": False}
    assert flags_cell(dirty) == "false BI, heard err 2, audible 1, incoherent"


def test_every_wide_column_has_a_home_in_the_narrow_table() -> None:
    narrow_keys = {"call_id"} | {f.name for view in (Narrow, Part, Flag) for f, _ in views(view)}
    assert {f.name for f, _ in views(Wide)} <= narrow_keys


@pytest.mark.parametrize("width", [80, 100])
def test_overall_table_is_figure_value_with_intervals(width: int) -> None:
    s = json.loads((RUN / "summary.json").read_text(encoding="utf-8"))
    text = _render(width, print_summary, [s])
    assert all(len(line) <= width for line in text.splitlines())
    assert "…" not in text
    joined = " ".join(text.split())
    for name, value in summary_figures(s):
        assert name.split()[0] in joined and value.split()[0] in joined
    if s["far_ms"].get("p50_ci"):
        assert "[" in text  # the interval is printed beside the figure
