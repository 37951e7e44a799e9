"""`voicelab bench stt`: the suite split by voice, the summary arithmetic, bad settings named, one real run;
folders of recordings with transcripts (`--data`, the human groups) read, checked and benched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import soxr
from typer.testing import CliRunner

from voicelab.cli.app import app
from voicelab.cpu_threads import ENV
from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture
from voicelab.pipeline.config import PipelineConfig
from voicelab.speech.transcribed_folder import TranscribedFolderError, load_audio, pair_recordings
from voicelab.sttbench import recogniser_bench as bench
from voicelab.sttbench.recogniser_bench import (
    SttBenchError,
    SttRow,
    bench_utterances,
    default_system,
    parse_groups,
    parse_systems,
    suite_utterances,
    summarise,
)


def _row(system: str, suite: str, errors: int, words: int, ms: float) -> SttRow:
    return SttRow(system, suite, "f", 0, 1.0, "x", "y", errors / words, errors, words, ms)


def test_systems_are_checked() -> None:
    assert parse_systems("whisper, moonshine") == ["whisper", "moonshine"]
    assert parse_systems("whisper-base,whisper-base+lm") == ["whisper-base", "whisper-base+lm"]
    for bad in ("", "whisper,foo", ",", "moonshine+lm"):
        with pytest.raises(SttBenchError, match="systems"):
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
    lo, hi = every.wer_corpus_ci  # type: ignore[misc]
    assert 0.0 <= lo <= every.wer_corpus <= hi <= 1.0


def test_the_pipelines_default_recogniser_is_marked() -> None:
    assert default_system() == "whisper+lm"  # PipelineConfig(): tiny.en with the callers' language model
    assert default_system(PipelineConfig(stt="whisper-base")) == "whisper-base+lm"  # a new default follows
    assert default_system(PipelineConfig(stt_lm=0.0)) == "whisper"
    assert default_system(PipelineConfig(stt="moonshine")) == "moonshine"  # the model re-ranks Whisper only
    assert default_system(PipelineConfig(stt="transcript")) is None
    rows = [_row("whisper", "real", 1, 4, 100.0), _row("whisper+lm", "real", 0, 4, 100.0)]
    marked = {(s.system, s.suite) for s in summarise(rows) if s.default}
    assert marked == {("whisper+lm", "real"), ("whisper+lm", "all")}
    assert {s.system for s in summarise(rows, default="whisper") if s.default} == {"whisper"}


@pytest.mark.slow
def test_the_command_measures_and_writes_its_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "stt.json"
    monkeypatch.setenv(ENV, "3")  # no --threads: VOICELAB_CPU_THREADS, recorded as the bench ran
    res = CliRunner().invoke(app, ["bench", "stt", "single_question", "--systems", "whisper,pocketsphinx",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["versions"] and doc["machine"]["threads"] == 3
    summary = {(s["system"], s["suite"]): s for s in doc["summary"]}
    assert set(summary) == {("whisper", "synthetic"), ("whisper", "all"), ("pocketsphinx", "synthetic"),
                            ("pocketsphinx", "all")}
    assert summary[("whisper", "synthetic")]["wer_mean"] <= 0.2  # tiny.en reads this clean clip
    assert len(doc["rows"]) == 2 and all(r["ms"] > 0 for r in doc["rows"])


def test_bad_settings_exit_with_one_line() -> None:
    for args in (["--systems", "foo"], ["nosuch_fixture"], ["--threads", "0"]):
        res = CliRunner().invoke(app, ["bench", "stt", *args])
        assert res.exit_code != 0 and res.output.strip().startswith("error:") and "Traceback" not in res.output


# ---- folders of recordings with transcripts -------------------------------------------------------------------

def _clips() -> list[tuple[np.ndarray, str]]:
    """Two real voices of a bundled recording (16 kHz) with their transcripts."""
    fx = load_fixture(FIXTURES_ROOT / "hr_two_speakers", sample_rate=16000)
    return [(t.audio, t.text) for t in fx.turns]


def _folder(root: Path) -> Path:
    """A --data folder: one mono 16 kHz FLAC, one stereo 44.1 kHz Ogg in a sub-folder, comments and a blank line."""
    (men, men_text), (phil, phil_text) = _clips()
    root.mkdir(parents=True)
    sf.write(root / "men.flac", men, 16000)
    (root / "sub").mkdir()
    st = soxr.resample(phil, 16000, 44100)
    sf.write(root / "sub" / "phil.ogg", np.stack([st, st], axis=1), 44100)
    (root / "transcripts.tsv").write_text(f"# reference texts\nmen\t{men_text}\n\nphil\t{phil_text}\n")
    return root


def test_a_folder_pairs_each_line_with_its_audio(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "calls")
    recs = pair_recordings(folder)
    assert [(r.stem, r.path.name) for r in recs] == [("men", "men.flac"), ("phil", "phil.ogg")]
    (men, _), (phil, _) = _clips()
    assert load_audio(recs[0].path).shape == men.shape
    stereo = load_audio(recs[1].path)  # mixed to mono, back at 16 kHz
    assert stereo.ndim == 1 and stereo.dtype == np.float32 and abs(stereo.size - phil.size) <= 2


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: (d / "transcripts.tsv").write_text("men only a stem and no tab\n"), r"transcripts\.tsv:1: expected"),
    (lambda d: (d / "transcripts.tsv").write_text("# c\nmen\tx\nmen\ty\n"), r"transcripts\.tsv:3: men is listed twice"),
    (lambda d: (d / "transcripts.tsv").unlink(), r"transcripts\.tsv: not found"),
    (lambda d: (d / "transcripts.tsv").write_text("# nothing\n"), "lists no recordings"),
    (lambda d: (d / "men.flac").unlink(), r"transcripts\.tsv:2: men has no audio file"),
    (lambda d: shutil.copy(d / "men.flac", d / "sub" / "men.wav"), r"transcripts\.tsv:2: men has 2 audio files"),
    (lambda d: (d / "extra.wav").write_bytes(b""), r"extra\.wav: no line for extra"),
], ids=["bad-line", "stem-twice", "no-transcripts", "empty-transcripts", "no-audio", "two-audio", "no-line"])
def test_a_bad_folder_is_named(tmp_path: Path, change, message: str) -> None:  # type: ignore[no-untyped-def]
    folder = _folder(tmp_path / "calls")
    change(folder)
    with pytest.raises(TranscribedFolderError, match=message) as err:
        pair_recordings(folder)
    assert "\n" not in str(err.value)
    with pytest.raises(TranscribedFolderError, match="not a folder"):
        pair_recordings(tmp_path / "nowhere")


def test_the_human_groups_are_benched_when_their_folders_exist(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    human = _folder(tmp_path / "speech")
    monkeypatch.setattr(bench, "HUMAN_GROUPS", {"human": human, "human-digits": tmp_path / "none"})
    assert bench.available_groups() == ["synthetic", "real", "human"]
    assert {(u.suite, u.fixture) for u in bench_utterances(groups=["human"])} == {("human", "men"), ("human", "phil")}
    assert {u.suite for u in bench_utterances(groups=["real,human"])} == {"real", "human"}
    assert parse_groups(["synthetic", "real,human"]) == ["synthetic", "real", "human"]
    with pytest.raises(SttBenchError, match="--group human-digits: .*none not found"):
        parse_groups(["human-digits"])
    # a --data folder replaces the default groups, unless fixtures or groups are named too
    assert {u.suite for u in bench_utterances(data=[human])} == {"speech"}
    assert {u.suite for u in bench_utterances(["single_question"], [human], "mine")} == {"synthetic", "mine"}


def test_the_bundled_groups_leave_out_the_human_sets_callers(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES_ROOT / "single_question", tmp_path / "single_question")
    shutil.copytree(FIXTURES_ROOT / "single_question", tmp_path / "human" / "speech" / "1")  # a reactive caller
    assert [u.fixture for u in suite_utterances(root=tmp_path)] == ["single_question"]


@pytest.mark.slow
def test_the_command_benches_a_folder(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "calls")
    out = tmp_path / "stt.json"
    res = CliRunner().invoke(app, ["bench", "stt", "--data", str(folder), "--suite", "phone",
                                   "--systems", "whisper+lm,pocketsphinx", "--json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert {(s["system"], s["suite"]) for s in summary} == {(s, g) for s in ("whisper+lm", "pocketsphinx")
                                                             for g in ("phone", "all")}
    for s in summary:
        assert {"system", "suite", "n", "wer_corpus", "wer_mean", "ms_p50", "ms_p95", "default"} <= set(s)
        assert s["n"] == 2 and s["default"] == (s["system"] == "whisper+lm")  # the pipeline's default recogniser
    heard = next(s for s in summary if s["system"] == "whisper+lm" and s["suite"] == "phone")
    assert heard["wer_corpus"] <= 0.3 and heard["ms_p50"] > 0  # tiny.en reads these real voices (a word or two off)
    lo, hi = heard["wer_corpus_ci"]
    assert lo <= heard["wer_corpus"] <= hi
    doc = json.loads(out.read_text())
    assert doc["default_system"] == "whisper+lm" and {r["fixture"] for r in doc["rows"]} == {"men", "phil"}


def test_a_bad_folder_or_group_exits_with_one_line(tmp_path: Path) -> None:
    good = _folder(tmp_path / "good")
    bad = _folder(tmp_path / "bad")
    (bad / "sub" / "phil.ogg").write_bytes(b"not audio at all")
    no_tsv = _folder(tmp_path / "no_tsv")
    (no_tsv / "transcripts.tsv").unlink()
    bad_line = _folder(tmp_path / "bad_line")
    (bad_line / "transcripts.tsv").write_text("men\tfine\nphil\n")
    orphan = _folder(tmp_path / "orphan")
    (orphan / "transcripts.tsv").write_text("men\tfine\n")
    missing = _folder(tmp_path / "missing")
    (missing / "men.flac").unlink()
    cases = {
        "phil.ogg: cannot read the audio": ["--data", str(bad)],
        "transcripts.tsv: not found": ["--data", str(no_tsv)],
        "transcripts.tsv:2: expected": ["--data", str(bad_line)],
        "phil.ogg: no line for phil": ["--data", str(orphan)],
        "transcripts.tsv:2: men has no audio file": ["--data", str(missing)],
        "not a folder": ["--data", str(tmp_path / "nowhere")],
        "--suite": ["--data", str(good), "--data", str(bad), "--suite", "x"],
        "--group: 'humans'": ["--group", "humans"],
        "name fixtures or groups": ["single_question", "--group", "real"],
    }
    for want, args in cases.items():
        res = CliRunner().invoke(app, ["bench", "stt", "--systems", "pocketsphinx", *args])
        lines = res.output.strip().splitlines()
        assert res.exit_code != 0 and len(lines) == 1 and lines[0].startswith("error:"), (args, res.output)
        assert want in lines[0] and "Traceback" not in res.output, (want, res.output)
