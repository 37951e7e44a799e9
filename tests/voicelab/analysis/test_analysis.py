"""Parquet tables of a run: documented schema, round trip, fallback to events.jsonl, folders of runs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from voicelab.analysis import SCHEMA, AnalysisError, arrow_schema, load_run, load_runs
from voicelab.analysis import tables as analysis
from voicelab.measure.events import read_events
from voicelab.measure.metrics import turn_table
from voicelab.runs import synthetic

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic.write_run(tmp_path_factory.mktemp("runs"), seed=2)


def test_files_follow_the_documented_schema(run: Path) -> None:
    for table in analysis.TABLES:
        written = pq.read_schema(run / f"{table}.parquet")
        want = arrow_schema(table)
        assert written.names[: len(want)] == want.names, table
        for f in want:
            assert written.field(f.name).type == f.type, (table, f.name)
            assert written.field(f.name).metadata[b"doc"]  # every column says what it is
        assert written.metadata[b"voicelab.schema_version"] == analysis.SCHEMA_VERSION.encode()


def test_schema_covers_every_turn_table_column(run: Path) -> None:
    """If the figures grow a column, the documented schema must grow too (else it lands untyped)."""
    cols = set(turn_table(read_events(run / "events.jsonl"))[0])
    assert cols <= {c.name for c in SCHEMA["turns"]}


def test_schema_doc_is_in_step() -> None:
    assert (ROOT / "docs" / "data-schema.md").read_text(encoding="utf-8") == analysis.schema_markdown() + "\n"


def test_round_trip_parquet_equals_events_jsonl(run: Path, tmp_path: Path) -> None:
    from_parquet = load_run(run)
    assert from_parquet.source == "parquet" and not from_parquet.summary_derived
    copy = tmp_path / run.name
    copy.mkdir()
    for name in ("config.json", "events.jsonl", "summary.json"):
        (copy / name).write_bytes((run / name).read_bytes())
    (copy / "calls").symlink_to(run / "calls")
    from_jsonl = load_run(copy)
    assert from_jsonl.source == "events.jsonl"
    for table in analysis.TABLES:
        pd.testing.assert_frame_equal(getattr(from_parquet, table), getattr(from_jsonl, table), check_dtype=True)
    # the events survive whole: back to Event rows, equal to the log
    assert from_parquet.event_list() == read_events(run / "events.jsonl")
    assert from_parquet.summary == json.loads((run / "summary.json").read_text())


def test_turns_and_chunks_content(run: Path) -> None:
    rd = load_run(run)
    t = rd.turns.set_index(["call_id", "turn"])
    assert (rd.turns["run_id"] == rd.run_id).all()
    cut = t.loc[("c1", 0)]
    assert bool(cut["interrupted"]) and cut["heard_word_errors"] == 0
    assert abs(t.loc[("c1", 1), "far_diff_ms"]) <= 20  # events vs recording, per turn
    assert t.loc[("c1", 1), "truth_stop_latency_ms"] == pytest.approx(t.loc[("c1", 1), "stop_latency_ms"], abs=20)
    ch = rd.chunks[(rd.chunks["call_id"] == "c1") & (rd.chunks["turn"] == 0)].sort_values("chunk_id")
    played = ch[ch["playout_start_ms"].notna()]
    assert bool(played["interrupted"].iloc[-1]) and not any(played["interrupted"].iloc[:-1])
    assert isinstance(played["played"].iloc[-1], str)
    assert ch["playout_start_ms"].isna().any()  # the chunk after the cut never played
    assert (ch["commit_ms"].diff().dropna() >= 0).all()
    snaps = rd.payloads("engine_snapshot")
    assert {"step", "mask", "confidence", "revised"} <= set(snaps.columns)


def test_folder_of_runs_and_unfinished_runs(tmp_path: Path) -> None:
    a = synthetic.write_run(tmp_path / "sweep", {"policy": "prefix"}, [synthetic.plain_call()], run_id="a")
    b = synthetic.write_run(tmp_path / "sweep", {"policy": "final"}, [synthetic.plain_call()], run_id="b")
    crashed = synthetic.write_run(tmp_path / "sweep", {"policy": "final"}, [synthetic.plain_call()], run_id="c",
                                  finish=False)
    runs = load_runs(tmp_path / "sweep")
    assert [r.run_id for r in runs.runs] == ["a", "b"]  # only finished runs
    s = runs.summaries.set_index("run_id")
    assert s.loc["b", "far_ms.p50"] > s.loc["a", "far_ms.p50"]  # 'final' waits for the whole answer
    assert set(runs.turns["run_id"]) == {"a", "b"} and "label" in runs.turns.columns
    assert len(runs.events) == len(load_run(a).events) + len(load_run(b).events)
    rd = load_run(crashed)
    assert rd.source == "events.jsonl" and rd.summary_derived and rd.summary["far_ms"]["n"] > 0


def test_not_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(AnalysisError, match="not a run folder"):
        load_run(tmp_path)
    with pytest.raises(AnalysisError, match="no such run folder"):
        load_run(tmp_path / "nope")
    (tmp_path / "events.jsonl").write_text('{"call_id": 1}\n')
    with pytest.raises(AnalysisError, match=r"events.jsonl:1: .*call_id"):
        load_run(tmp_path)


def test_config_label_names_only_the_shaper_settings_that_differ() -> None:
    shaper = {"first_chunk_short": True, "first_min_words": 2, "max_hold_ms": 250.0, "max_words": 14, "min_words": 4}
    config = {"engine": "diffusion", "sampler": "threshold", "policy": "pinned", "shaper": shaper}
    assert analysis.config_label(config) == "diffusion / threshold / pinned"
    config["shaper"] = {**shaper, "max_words": 20}
    assert analysis.config_label(config) == "diffusion / threshold / pinned / max_words=20"
    config["shaper"] = {**shaper, "first_chunk_short": False, "max_hold_ms": 0.0}
    assert analysis.config_label(config) == "diffusion / threshold / pinned / first_chunk_short=False,max_hold_ms=0.0"
