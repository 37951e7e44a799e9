"""The figure catalogue: one entry makes a figure appear in every view, the docs list exactly its figures, and
the run folder keeps one writer and one direction of imports."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console
from typer.testing import CliRunner

from voicelab.analysis import load_run
from voicelab.analysis.report import build_report
from voicelab.analysis.results_md import find_entries, render_results
from voicelab.analysis.tables import is_finished, parquet_tables
from voicelab.cli.app import app
from voicelab.measure import catalogue_doc
from voicelab.measure import figures as catalogue
from voicelab.measure.events import read_events
from voicelab.measure.figure import CatalogueError, Figure
from voicelab.measure.figure_summary import Summary
from voicelab.measure.figure_views import Narrow, Overall, Paired, ReportSummary, ReportTurn, Result, Wide
from voicelab.measure.figures import views
from voicelab.measure.metrics import turn_table
from voicelab.measure.turn_facts import TurnFacts
from voicelab.runs.console import print_summary, print_turns
from voicelab.runs.synthetic import barge_in_call, plain_call, write_run

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "metrics.md"
TOY = "toy_reply_rows"


def _reply_rows(t: TurnFacts) -> int:
    """The toy figure: how many event rows the reply that answers the turn has."""
    return len(t.reply)


TOY_FIGURE = Figure(
    TOY, "rows", "lower", "event rows of the reply (a toy figure of the catalogue's test)", _reply_rows, "int32",
    summary=(Summary("toy_reply_rows", "sum over turns", lambda s: s.total(TOY), 1000),),
    views=(Narrow("toy", 100, justify="right"), Wide("toy rows", 100), Overall("toy reply rows", 100, TOY),
           Paired("toy_p50", "toy reply rows p50", "p50", "rows", 100, "+1"),
           Result("toy", "toy reply rows", "toy rows", 100, TOY, "count"),
           ReportSummary("toy rows", 100, TOY), ReportTurn(100)))


def _render(fn, *args, **kw) -> str:  # noqa: ANN001
    console = Console(width=200, record=True, color_system=None, force_terminal=False)
    fn(console, *args, **kw)
    return console.export_text()


class TestToyFigure:
    """A toy figure, one function and one catalogue entry, shows in every view of runs written while it is
    registered (and nowhere once it is removed)."""

    @pytest.fixture(scope="class")
    def toy(self) -> Iterator[Figure]:
        catalogue.register(TOY_FIGURE)
        try:
            yield TOY_FIGURE
        finally:
            catalogue.unregister(TOY)

    @pytest.fixture(scope="class")
    def runs(self, toy: Figure, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
        """Two small synthetic run folders (events, WAVs, tables, summary), no audio pipeline."""
        out = tmp_path_factory.mktemp("runs")
        calls = [plain_call("c0"), barge_in_call("c1")]
        return write_run(out, calls=calls, seed=1, run_id="a"), write_run(out, calls=calls, seed=2, run_id="b")

    def test_turn_table_and_summary(self, runs: tuple[Path, Path]) -> None:
        a, _ = runs
        rows = turn_table(read_events(a / "events.jsonl"))
        assert all(isinstance(r[TOY], int) and r[TOY] > 0 for r in rows)
        summary = json.loads((a / "summary.json").read_text())
        assert summary[TOY] == sum(r[TOY] for r in rows)
        assert list(summary)[-2:] == [TOY, "price"]  # after the others; the run adds the price last

    def test_console_tables(self, runs: tuple[Path, Path]) -> None:
        a, _ = runs
        rows = turn_table(read_events(a / "events.jsonl"))
        narrow = _render(print_turns, rows)
        assert "┃ toy ┃" in narrow and all(re.search(rf"│\s+{r[TOY]} │", narrow) for r in rows), narrow
        assert "toy rows" in _render(print_turns, rows, wide=True)
        overall = _render(print_summary, [json.loads((a / "summary.json").read_text())])
        assert re.search(rf"toy reply rows\s+│\s+{sum(r[TOY] for r in rows)}\b", overall), overall

    def test_turns_parquet(self, runs: tuple[Path, Path]) -> None:
        a, _ = runs
        schema = pq.read_schema(a / "turns.parquet")
        assert schema.field(TOY).type == pa.int32()  # its declared type, documented
        assert schema.field(TOY).metadata[b"doc"].decode() == TOY_FIGURE.doc
        assert list(load_run(a).turns[TOY]) == [r[TOY] for r in turn_table(read_events(a / "events.jsonl"))]

    def test_compare_and_its_gate(self, runs: tuple[Path, Path]) -> None:
        a, b = runs
        res = CliRunner().invoke(app, ["compare", str(a), str(b), "--resamples", "199", "--fail-on",
                                       "toy_p50:+1000"])
        assert "toy reply rows p50" in res.output, res.output
        assert res.exit_code in (0, 3), res.output  # 3: too few turns to decide, and it says so
        bad = CliRunner().invoke(app, ["compare", str(a), str(b), "--fail-on", "toy_p50:+1ms"])
        assert bad.exit_code == 2 and "toy_p50 is not in ms" in bad.output

    def test_results_page_and_report(self, runs: tuple[Path, Path], tmp_path: Path) -> None:
        a, b = runs
        page = render_results(find_entries([a, b]), tmp_path / "results.md")
        total = json.loads((a / "summary.json").read_text())[TOY]
        assert f"| toy reply rows | {total} |" in page and "| `toy` | toy reply rows |" in page
        html = build_report(a, tmp_path / "report.html").read_text()
        assert "<th>toy rows</th>" in html and f"<th>{TOY}</th>" in html

    def test_declared_once_and_gone_once_removed(self, toy: Figure) -> None:
        with pytest.raises(CatalogueError):
            catalogue.register(toy)  # a name is declared once
        catalogue.unregister(TOY)
        try:
            assert TOY not in {f.name for f in catalogue.figures()}
            assert not [v for kind in (Narrow, Wide, Overall, Paired, Result) for f, v in views(kind) if f.name == TOY]
        finally:
            catalogue.register(toy)


# ---- the docs list exactly the catalogue ----------------------------------------------------------------------

def _doc_rows() -> dict[str, list[str]]:
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index(catalogue_doc.BEGIN):text.index(catalogue_doc.END)]
    figure_table = block.split("`voicelab compare` figures", 1)[0]
    rows = {}
    for line in figure_table.splitlines():
        m = re.match(r"^\| `([a-z0-9_]+)` \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = m.group(2).split(" | ")
    return rows


def test_docs_catalogue_block_is_generated() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert catalogue_doc.replace_block(text, catalogue_doc.catalogue_markdown()) == text, (
        "docs/metrics.md's figure catalogue differs from voicelab/measure/figures.py: run "
        "`python -m voicelab.measure.catalogue_doc`")


def test_every_figure_is_documented_with_its_unit_and_direction_and_nothing_else() -> None:
    rows = _doc_rows()
    names = {f.name for f in catalogue.figures()}
    assert set(rows) == names
    for f in catalogue.figures():
        unit, better = rows[f.name][:2]
        assert unit == f.unit and better == (f.better or "—"), f.name


def test_the_summary_json_table_names_only_catalogue_keys() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("## summary.json", 1)[1].split("\n## ", 1)[0]
    documented = {k for line in table.splitlines() if line.startswith("| `")
                  for k in re.findall(r"`([a-z_0-9]+)`", line.split(" | ")[0])}
    keys = {s.key.split(".")[0] for _, s in catalogue.summaries()}
    what_ran = {"run_id", "engine", "sampler", "policy"}
    assert documented - what_ran == keys


# ---- the catalogue holds together ---------------------------------------------------------------------------

def test_names_and_positions_are_unique() -> None:
    names = [f.name for f in catalogue.figures()]
    assert len(names) == len(set(names))
    for kind in (Narrow, Wide, Overall, Paired, Result, ReportSummary, ReportTurn):
        ats = [v.at for _, v in views(kind)]
        assert len(ats) == len(set(ats)), kind.__name__
    keys = [s.key for _, s in catalogue.summaries()]
    assert len(keys) == len(set(keys))


def test_views_read_what_exists() -> None:
    """A compared figure has a per-turn column; the results page, console and report read summary keys that a
    figure declares."""
    keys = {s.key for _, s in catalogue.summaries()}
    for f, _ in views(Paired):
        assert f.computed, f.name
    for kind in (Result, Overall, ReportSummary):
        for _, v in views(kind):  # a key, or a statistic of one (far_ms.p50)
            assert v.key in keys or v.key.rsplit(".", 1)[0] in keys, (kind.__name__, v.key)
    for f in catalogue.figures():
        assert f.part_of is None or catalogue.figure(f.part_of).computed


# figures a line run has learned to read from its recording since the committed line run was recorded
LEARNED_SINCE_LINE_CALL = ("false_cut_ins",)


def test_line_runs_leave_out_what_the_committed_line_runs_do() -> None:
    s = json.loads((ROOT / "docs" / "runs" / "line_call" / "summary.json").read_text())
    then = [k for k in s["not_measured"] if k != "answers"]
    assert [k for k in then if k not in LEARNED_SINCE_LINE_CALL] == list(catalogue.line_not_measured())
    assert all(k not in catalogue.line_not_measured() for k in LEARNED_SINCE_LINE_CALL)


# ---- one writer, one direction ------------------------------------------------------------------------------

def test_a_run_folder_is_finished_once_sealed(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    assert not is_finished(run)
    (run / "summary.json").write_text("{}")
    assert is_finished(run)
    (run / "INCOMPLETE").write_text("")
    assert not is_finished(run)


def test_making_the_tables_writes_nothing(tmp_path: Path) -> None:
    a = write_run(tmp_path, calls=[plain_call("c0")], run_id="a")
    before = {p: p.stat().st_mtime_ns for p in a.rglob("*")}
    tables = parquet_tables(a)
    assert set(tables) == {"events", "turns", "chunks"} and all(isinstance(b, bytes) for b in tables.values())
    assert {p: p.stat().st_mtime_ns for p in a.rglob("*")} == before


def test_analysis_does_not_import_the_runs_package_at_load_time() -> None:
    """voicelab.runs imports voicelab.analysis; the report reads the seal and the accuracy bar from below."""
    bad = []
    for path in sorted((ROOT / "voicelab" / "analysis").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("voicelab.runs"):
                bad.append(f"{path.name}: {node.module}")
    assert not bad, bad
