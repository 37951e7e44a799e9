"""The human speech set: every file has its source, licence and attribution; the set meets its size and coverage
targets; the manifest's checks catch what they claim to."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voicelab.fixtures.format import check_fixture, select
from voicelab.fixtures.human_import import DIGITS_PER_STRING, choose_train, import_digits
from voicelab.fixtures.human_set import (
    HUMAN_ROOT,
    LICENCES,
    MANIFEST_COLUMNS,
    MANIFEST_FILE,
    TRANSCRIPTS_FILE,
    HumanSetError,
    ManifestRow,
    audio_files,
    check_set,
    read_manifest,
    read_transcripts,
    row_problems,
    write_manifest,
)

MAX_MB = 80.0


def test_every_file_of_the_set_has_source_licence_and_attribution() -> None:
    assert check_set() == []


def test_the_set_fits_its_size_budget() -> None:
    size = sum(f.stat().st_size for f in HUMAN_ROOT.rglob("*") if f.is_file())
    assert size / 1e6 <= MAX_MB


def test_the_set_has_forty_speakers_and_two_hundred_long_transcribed_utterances() -> None:
    rows = read_manifest(HUMAN_ROOT / MANIFEST_FILE)
    assert len({r.speaker for r in rows}) >= 40
    texts = read_transcripts(HUMAN_ROOT / "speech" / TRANSCRIPTS_FILE)
    # sentences, not the digit strings (LibriSpeech, VCTK and LJ Speech readers: 227 of them)
    assert sum(len(t.split()) >= 5 for t in texts.values()) >= 200
    rows = [r for r in rows if r.group == "speech"]
    stems = {Path(r.path).stem for r in rows}
    assert stems == set(texts), "every utterance has exactly one reference transcript"


def test_transcripts_name_the_audio_files_of_each_data_folder() -> None:
    for group in ("speech", "digits"):
        folder = HUMAN_ROOT / group
        texts = read_transcripts(folder / TRANSCRIPTS_FILE)
        assert sorted(texts) == sorted(f.stem for f in audio_files(folder))


def test_human_callers_are_valid_fixtures() -> None:
    callers = sorted((HUMAN_ROOT / "speech").glob("*/fixture.json"))
    assert len(callers) >= 5
    for c in callers:
        assert check_fixture(c) == []


def _tiny_set(tmp_path: Path) -> Path:
    root = tmp_path / "human"
    src = next(iter(audio_files(HUMAN_ROOT / "digits")))
    (root / "digits").mkdir(parents=True)
    shutil.copyfile(src, root / "digits" / "a.flac")
    write_manifest(root / MANIFEST_FILE, [ManifestRow("digits/a.flac", "digits", "fsdd:x", "o/r", "recordings/1.wav",
                                                      "0" * 40, "CC-BY-SA-4.0", "FSDD, speaker x", "none")])
    return root


def test_a_file_without_a_manifest_row_is_named(tmp_path: Path) -> None:
    root = _tiny_set(tmp_path)
    assert check_set(root) == []
    shutil.copyfile(root / "digits" / "a.flac", root / "digits" / "b.flac")
    (problem,) = check_set(root)
    assert "b.flac" in problem and "no row" in problem


@pytest.mark.parametrize(("field", "value", "said"), [
    ("licence", "CC-BY-NC-4.0", "licence"), ("attribution", " ", "empty attribution"),
    ("source_commit", "abc", "40 hex"), ("path", "digits/missing.flac", "no such file"),
])
def test_a_bad_row_is_named(tmp_path: Path, field: str, value: str, said: str) -> None:
    root = _tiny_set(tmp_path)
    (row,) = read_manifest(root / MANIFEST_FILE)
    write_manifest(root / MANIFEST_FILE, [ManifestRow(**{**row.__dict__, field: value})])
    assert any(said in p for p in check_set(root))


def test_only_redistributable_licences_are_known() -> None:
    assert set(LICENCES) == {"CC-BY-4.0", "CC-BY-SA-4.0", "public-domain"}
    assert MANIFEST_COLUMNS[0] == "path"


def test_bad_manifest_and_transcript_lines_name_the_line(tmp_path: Path) -> None:
    m = tmp_path / MANIFEST_FILE
    m.write_text("\t".join(MANIFEST_COLUMNS) + "\nonly\ttwo\n", encoding="utf-8")
    with pytest.raises(HumanSetError, match=r":2: 2 fields"):
        read_manifest(m)
    t = tmp_path / TRANSCRIPTS_FILE
    t.write_text("# c\nok\tfine words\nno tab here\n", encoding="utf-8")
    with pytest.raises(HumanSetError, match=r":3: expected"):
        read_transcripts(t)


def test_train_speakers_alternate_women_and_men() -> None:
    genders = {"1": "F", "2": "M", "3": "F", "4": "M", "5": "F"}
    assert choose_train(["5-1-0000", "1-9-0000", "2-1-0000", "3-1-0000", "4-1-0000"], genders, 4) == [
        "1-9-0000", "2-1-0000", "3-1-0000", "4-1-0000"]
    assert choose_train(["1-1-0000", "3-1-0000"], genders, 5) == ["1-1-0000", "3-1-0000"]


def test_digit_strings_join_distinct_recordings_of_one_speaker(tmp_path: Path) -> None:
    rec = tmp_path / "src" / "recordings"
    rec.mkdir(parents=True)
    for d in range(10):
        for i in range(5):
            sf.write(str(rec / f"{d}_ann_{i}.wav"), np.full(800, 0.1 * (i + 1), np.float32), 8000)
    rows = import_digits(tmp_path / "src", "a" * 40, per_speaker=3, root=tmp_path / "human")
    texts = read_transcripts(tmp_path / "human" / "digits" / TRANSCRIPTS_FILE)
    assert len(rows) == 3 and sorted(texts) == ["ann_00", "ann_01", "ann_02"]
    for r in rows:
        sources = r.source_path.split()
        assert len(sources) == DIGITS_PER_STRING == len(set(sources))
        assert [s.split("/")[1][0] for s in sources] == texts[Path(r.path).stem].split()
        assert r.licence == "CC-BY-SA-4.0" and not row_problems(r)


def test_the_human_list_plays_the_callers_and_all_leaves_them_out() -> None:
    human = select(["human"])
    assert human and all(p.is_relative_to(HUMAN_ROOT) for p in human)
    assert not any(p.is_relative_to(HUMAN_ROOT) for p in select(["all"]))
