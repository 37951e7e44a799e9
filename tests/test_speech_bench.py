"""`voicelab bench stt`: the suite split by voice, the summary arithmetic, bad settings named, one real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from voicelab.cli.app import app
from voicelab.speech.bench import BenchError, SttRow, parse_systems, suite_utterances, summarise


def _row(system: str, suite: str, errors: int, words: int, ms: float) -> SttRow:
    return SttRow(system, suite, "f", 0, 1.0, "x", "y", errors / words, errors, words, ms)


def test_systems_are_checked() -> None:
    assert parse_systems("whisper, moonshine") == ["whisper", "moonshine"]
    for bad in ("", "whisper,foo", ","):
        with pytest.raises(BenchError, match="systems"):
            parse_systems(bad)


def test_turns_are_split_into_synthetic_and_real_voices() -> None:
    utts = suite_utterances(["single_question", "hr_two_speakers"])
    assert {(u.fixture, u.suite) for u in utts} == {("single_question", "synthetic"), ("hr_two_speakers", "real")}
    assert all(u.audio.ndim == 1 and u.audio.size > 16000 * 0.5 for u in utts) and len(utts) == 3


def test_summary_per_system_and_voice() -> None:
    rows = [_row("whisper", "synthetic", 1, 4, 100.0), _row("whisper", "synthetic", 0, 6, 300.0),
            _row("whisper", "real", 2, 10, 200.0)]
    by = {(s.system, s.suite): s for s in summarise(rows)}
    assert set(by) == {("whisper", "synthetic"), ("whisper", "real"), ("whisper", "all")}
    syn, every = by[("whisper", "synthetic")], by[("whisper", "all")]
    assert syn.n == 2 and syn.wer_mean == pytest.approx(0.125) and syn.wer_corpus == pytest.approx(0.1)
    assert syn.ms_p50 == pytest.approx(200.0)
    assert every.n == 3 and every.wer_corpus == pytest.approx(3 / 20) and every.ms_p95 == pytest.approx(290.0)


def test_the_command_measures_and_writes_its_document(tmp_path: Path) -> None:
    out = tmp_path / "stt.json"
    res = CliRunner().invoke(app, ["bench", "stt", "single_question", "--systems", "whisper,pocketsphinx",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["versions"] and doc["machine"]["threads"] == 2
    summary = {(s["system"], s["suite"]): s for s in doc["summary"]}
    assert set(summary) == {("whisper", "synthetic"), ("whisper", "all"), ("pocketsphinx", "synthetic"),
                            ("pocketsphinx", "all")}
    assert summary[("whisper", "synthetic")]["wer_mean"] <= 0.2  # tiny.en reads this clean clip
    assert len(doc["rows"]) == 2 and all(r["ms"] > 0 for r in doc["rows"])


def test_bad_settings_exit_with_one_line() -> None:
    for args in (["--systems", "foo"], ["nosuch_fixture"], ["--threads", "0"]):
        res = CliRunner().invoke(app, ["bench", "stt", *args])
        assert res.exit_code != 0 and res.output.strip().startswith("error:") and "Traceback" not in res.output
