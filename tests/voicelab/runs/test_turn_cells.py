"""The per-turn tables say what the summary says: every answer, checks and flags cell is made from the row that
goes to turns.csv / turns.parquet, and counted over the rows the cells give the summary's figures (synthetic
rows of `voicelab run` and of `voicelab call`, read back from turns.csv as `voicelab call` reads them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from voicelab.call.line_run import _answers
from voicelab.cli.call import call_figures, print_call_tables, read_turn_rows
from voicelab.measure.events import Event, EventKind
from voicelab.measure.expectations import tally
from voicelab.measure.metrics import summarize, turn_table
from voicelab.runs.console import print_turns, turn_cells
from voicelab.runs.folder import RunFolder

K = EventKind


def ev(turn: int, ms: float, kind: K, **payload: Any) -> Event:
    return Event("c1", turn, int(ms * 1_000_000), kind, payload)


def _events() -> list[Event]:
    """Turn 0 answered right, with checks; turn 1 answered wrong; turn 2 a backchannel that stops the bot;
    turn 3 checks only (any agent's words), one failing."""
    saturday = {"intent": "hours", "slots": {"day": "saturday"}, "says_any": ["open"]}
    return [
        ev(0, 100, K.CALLER_SPEECH_START, text="when do you open on saturday", expect_reply=saturday),
        ev(0, 1000, K.CALLER_SPEECH_END),
        ev(0, 1400, K.ENGINE_DONE, tokens=12, cancelled=False, text="on saturday we are open from 10 am to 4 pm."),
        ev(1, 3000, K.CALLER_SPEECH_START, text="when do you open on monday",
           expect_reply={"intent": "hours", "slots": {"day": "monday"}}),
        ev(1, 4000, K.CALLER_SPEECH_END),
        ev(1, 4300, K.ENGINE_DONE, tokens=12, cancelled=False, text="on monday we are open from 9 am to 6 help you"),
        ev(2, 4800, K.CALLER_SPEECH_START, expect="no_interrupt", text="mm hmm"),
        ev(2, 5000, K.INTERRUPTION, bot_speaking=True),
        ev(2, 5200, K.CALLER_SPEECH_END),
        ev(3, 7000, K.CALLER_SPEECH_START, text="thanks bye", expect_reply={"says_any": ["bye", "goodbye"],
                                                                           "not_says": ["monday"]}),
        ev(3, 7800, K.CALLER_SPEECH_END),
        ev(3, 8200, K.ENGINE_DONE, tokens=5, cancelled=False, text="Goodbye, see you on Monday!"),
    ]


def _agree(rows: list[dict[str, Any]], s: dict[str, Any]) -> None:
    """Each cell from its row; the cells counted give the summary's figures."""
    cells = turn_cells(rows)
    for row, cell in zip(rows, cells, strict=True):
        want = {None: "—", True: "ok", False: "wrong"}[row.get("answer_correct")]
        assert cell["answer"] == want
        assert ("false BI" in cell["flags"]) == (row.get("false_barge_in") is True)
        assert ("incoherent" in cell["flags"]) == (row.get("coherent") is False)
        passed, checked = tally(row.get("expectations"))
        assert cell.get("checks", "") == ("" if not checked else
                                          f"{passed}/{checked}" + (" ok" if passed == checked else " failed"
                                                                   + cell["checks"].split("failed", 1)[-1]))
    marks = [c["answer"] for c in cells if c["answer"] != "—"]
    assert len(marks) == s["answers"]["n"]
    assert round(marks.count("ok") / len(marks), 3) == s["answers"]["correct"]
    assert sum("false BI" in c["flags"] for c in cells) == s["false_barge_ins"]
    shown = [c["checks"].split()[0].split("/") for c in cells if c.get("checks")]
    assert sum(int(p) for p, _ in shown) == s["answers"]["expectations_passed"]
    assert sum(int(n) for _, n in shown) == s["answers"]["expectations"]


def test_run_rows_and_summary_agree() -> None:
    events = _events()
    rows, s = turn_table(events), summarize(events, {"run_id": "r"})
    assert [r["answer_correct"] for r in rows] == [True, False, None, None]
    assert [tally(r["expectations"]) for r in rows] == [(1, 1), (0, 0), (0, 0), (1, 2)]
    assert s["answers"]["expectations_passed"] == 2 and s["answers"]["expectations"] == 3
    assert s["false_barge_ins"] == 1
    _agree(rows, s)


def _line_rows() -> list[dict[str, Any]]:
    """Rows as the line run sets them: the read-back words, their shop scores and checks."""
    rows = turn_table(_events())
    heard = ["on saturday we are open from 10 am to 4 pm", "you said when do you open on monday", None,
             "goodbye see you on monday"]
    scores = [(True, True), (False, False), (None, None), (None, None)]
    for r, words, (correct, coherent) in zip(rows, heard, scores, strict=True):
        r.update(readback_text=words, answer_text=words, answer_correct=correct, coherent=coherent,
                 wrong_tool_call=None, talk_over_ms=0.0 if words else None, false_barge_in_by=None)
    rows[2]["false_barge_in_by"] = "silence"
    return rows


def test_call_rows_read_back_from_turns_csv_keep_their_types(tmp_path: Path) -> None:
    """The cause of "ok" beside 0 % correct: turns.csv read back as text makes "False" a true value, and
    `is True` never holds for "True" (no false barge-in flag). Read back by the catalogue's types, the cells
    are the cells of the rows the summary was made from."""
    rows = _line_rows()
    RunFolder.create(tmp_path / "run").write_turns_csv(rows)
    back = read_turn_rows(tmp_path / "run")
    for a, b in zip(rows, back, strict=True):
        for k in ("answer_correct", "coherent", "false_barge_in", "expectations", "far_ms", "turn", "talk_over_ms"):
            assert a[k] == b[k], k
    s = {**summarize(_events(), {"run_id": "r"}), "answers": _answers(_events(), back, None)}
    assert turn_cells(back) == turn_cells(rows)
    _agree(back, s)
    assert s["answers"]["correct"] == 0.5 and s["answers"]["replies"] == 3


def test_call_tables_print_the_catalogues_columns_and_the_summarys_answers(tmp_path: Path) -> None:
    rows = _line_rows()
    s = {**summarize(_events(), {"run_id": "r"}), "answers": _answers(_events(), rows, None), "calls": 1,
         "calls_failed": 0, "talk_over_ms": {"p95": 0.0}, "line": {}, "not_measured": ["engine_figures"]}
    console = Console(width=100, record=True, color_system=None, force_terminal=False)
    print_call_tables(console, rows, s)
    text = " ".join(console.export_text().split())
    assert "heard" in text and "checks" in text and "goodbye see you on" in text
    assert "1/2 failed not_says" in text and "false BI" in text
    figures = dict(call_figures(s))
    assert figures["answers correct"] == "50.0 % of 2" and figures["expectations passed"] == "2 of 3"
    assert figures["false barge-ins"] == "1"


def test_run_tables_leave_out_the_line_only_columns() -> None:
    rows = turn_table(_events()[:6])  # no checks but turn 0's
    rows[0]["expectations"] = None
    console = Console(width=80, record=True, color_system=None, force_terminal=False)
    print_turns(console, rows)
    text = console.export_text()
    assert "heard" not in text and "checks" not in text
    assert all(len(line) <= 80 for line in text.splitlines())
