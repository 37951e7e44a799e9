"""eot-bench's data as input (`voicelab.turnbench.eot_data`) and `voicelab bench turns --mode eot` end to end.

The parquet files are written here, in eot-bench-data's schema, from the lab's own phone-call turns; the model's
scores are made up (no model runs), except in the slow test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
from typer.testing import CliRunner

from voicelab.cli.bench_turns import bench_turns
from voicelab.turnbench import eot_data, eot_scores
from voicelab.turnbench.eot import ScoredCase, spans_of
from voicelab.turnbench.phone_calls import CALLS_DIR, load
from voicelab.turnbench.turn_bench import SHIPPED

pytestmark = pytest.mark.skipif(not (CALLS_DIR / "labels.json").is_file(), reason="the phone calls are not here")


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(bench_turns)

    @app.command("other")
    def other() -> None:  # keeps `bench_turns` a named subcommand
        pass

    return app


@pytest.fixture(scope="module")
def calls() -> list[Any]:
    return load()[:4]


@pytest.fixture()
def parquet(tmp_path: Path, calls: list[Any]) -> Path:
    path = tmp_path / "validation-en.parquet"
    eot_data.write_rows(path, calls)
    return path


def test_rows_read_back_as_the_cases_they_were_written_from(parquet: Path, calls: list[Any]) -> None:
    rows = eot_data.read_rows(parquet)
    assert [r.id for r in rows] == [c.id for c in calls]
    for r, c in zip(rows, calls, strict=True):
        assert r.case().group == "eot-bench-en"
        assert np.max(np.abs(r.audio - c.audio)) < 1e-3  # FLAC at 16 bits
        want = [(p.kind, p.t_s, p.resume_s) for p in c.points]
        got = [(p.kind, p.t_s, p.resume_s) for p in r.points]
        assert [g[0] for g in got] == [w[0] for w in want]
        assert np.allclose([g[1] for g in got], [w[1] for w in want])
        assert np.allclose([g[2] or 0.0 for g in got], [w[2] or 0.0 for w in want])
    assert eot_data.read_rows(parquet, language="de") == []


def test_an_audio_array_with_its_sampling_rate_is_read_too(tmp_path: Path) -> None:
    x = np.zeros(8000, np.float32)
    x[1000:3000] = 0.3
    table = pa.Table.from_pylist([{"id": "a", "language": "en",
                                   "audio": {"array": x.tolist(), "sampling_rate": 8000},
                                   "silence_spans": [{"start": 0.2, "end": 0.4}, {"start": 0.5, "end": 1.0}]}])
    pq.write_table(table, tmp_path / "a.parquet")
    (row,) = eot_data.read_rows(tmp_path)
    assert row.audio.size == 16000
    assert [(p.kind, p.t_s, p.resume_s) for p in row.points] == [("pause", 0.2, 0.4), ("end", 0.5, None)]


def _bad(tmp_path: Path, parquet: Path, change: str) -> Path:
    table = pq.read_table(parquet)
    if change == "column":
        table = table.drop(["silence_spans"])
    else:
        rows = table.to_pylist()
        rows[1]["silence_spans"][-1]["end"] = 999.0
        table = pa.Table.from_pylist(rows, schema=table.schema)
    out = tmp_path / f"bad-{change}.parquet"
    pq.write_table(table, out)
    return out


@pytest.mark.parametrize(("change", "says"), [("column", "missing column silence_spans"),
                                              ("span", "row 1 (id ")])
def test_a_bad_file_is_one_line_naming_the_file_and_row(tmp_path: Path, parquet: Path, change: str, says: str) -> None:
    bad = _bad(tmp_path, parquet, change)
    res = CliRunner().invoke(_app(), ["bench-turns", "--mode", "eot", "--eot-bench", str(bad)])
    assert res.exit_code != 0
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and str(bad.name) in lines[0] and says in lines[0]
    if change == "span":
        assert "outside the audio" in lines[0]


def _fake_scores(refs: list[Any], *_: Any, **__: Any) -> list[ScoredCase]:
    """Scores that rise through an end's silence and stay low through a pause."""
    out = []
    for r in refs:
        spans = spans_of(r.points)
        scores = [np.linspace(0.3, 0.95, sp.instants).astype(np.float32) if sp.label == "eot"
                  else np.full(sp.instants, 0.1, np.float32) for sp in spans]
        out.append(ScoredCase(r.id, r.group, spans, scores, [50.0] * sum(sp.instants for sp in spans)))
    return out


def test_eot_mode_json_rows(monkeypatch: pytest.MonkeyPatch, parquet: Path, tmp_path: Path) -> None:
    monkeypatch.setattr(eot_scores, "score_refs", _fake_scores)
    res = CliRunner().invoke(_app(), ["bench-turns", "--mode", "eot", "--eot-bench", str(parquet), "--json",
                                      "--resamples", "50", "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    ours = [r for r in rows if not r.get("reference")]
    assert {(r["group"], r["strategy"]) for r in ours} == {("eot-bench-en", "smart"), ("eot-bench-en", "timeout")}
    for r in rows:
        assert r["mode"] == "eot"
        assert set(r["latency_ms_at"]) == {"5%", "10%"} and set(r["false_cutoffs_at_ms"]) == {"300", "600"}
        assert r["default"] == (r["strategy"] == SHIPPED and not r.get("reference"))
    smart = next(r for r in ours if r["strategy"] == "smart")
    # pauses never reach 0.1 < threshold: the model holds through every pause and answers before the timeout
    assert smart["latency_ms_at"]["5%"] < 3000 and smart["setting"]["5%"]["threshold"] > 0.1
    refs = [r for r in rows if r.get("reference")]
    assert {r["latency_ms_at"]["5%"] for r in refs} == {543, 1051, 1600}
    assert all("another dataset" in r["dataset"] for r in refs)
    saved = json.loads((tmp_path / "out" / "turn_bench_eot.json").read_text())
    assert saved["cpu"]["eot-bench-en"]["ms_per_silence_s"] == 500


def test_pipeline_mode_options_are_refused_in_eot_mode(parquet: Path) -> None:
    for extra in (["--strategy", "m:a"], ["--limit", "3"], ["--group", "human"]):
        res = CliRunner().invoke(_app(), ["bench-turns", "--mode", "eot", "--eot-bench", str(parquet), *extra])
        assert res.exit_code != 0
    res = CliRunner().invoke(_app(), ["bench-turns", "--eot-bench", str(parquet)])
    assert res.exit_code != 0 and "--mode eot" in res.output


@pytest.mark.slow
def test_eot_mode_scores_smart_turn_on_a_written_file(tmp_path: Path, calls: list[Any]) -> None:
    path = tmp_path / "one.parquet"
    eot_data.write_rows(path, calls[:1])
    res = CliRunner().invoke(_app(), ["bench-turns", "--mode", "eot", "--eot-bench", str(path), "--json",
                                      "--resamples", "0", "--cache", str(tmp_path / "cache")])
    assert res.exit_code == 0, res.output
    rows = [r for r in json.loads(res.stdout) if not r.get("reference")]
    assert {r["strategy"] for r in rows} == {"smart", "timeout"}
    assert rows[0]["ends"] == 1
