"""`VOICELAB_CPU_THREADS`: read in one place, a bad value is one clear line, and every model pool follows it."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from voicelab.cli import app
from voicelab.cpu_threads import DEFAULT, ENV, CpuThreadsError, configured_threads, cpu_threads


def test_unset_or_blank_keeps_each_librarys_default() -> None:
    for env in ({}, {ENV: ""}, {ENV: "  "}):
        assert configured_threads(env) is None and cpu_threads(env) == DEFAULT == 2


@given(st.integers(min_value=1, max_value=512))
def test_a_whole_number_from_one_up_is_taken(n: int) -> None:
    assert configured_threads({ENV: f" {n} "}) == cpu_threads({ENV: str(n)}) == n


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5", "2x"])
def test_anything_else_is_refused_naming_the_variable(raw: str) -> None:
    with pytest.raises(CpuThreadsError, match=f"{ENV}='{raw}'"):
        configured_threads({ENV: raw})


def test_the_command_line_refuses_a_bad_value_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "many")
    res = CliRunner().invoke(app, ["bench", "stt", "--data", "nowhere"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [f"error: {ENV}='many': not a whole number of threads from 1 up"]


def test_the_command_line_sizes_torchs_pool_from_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # restored as it was when the test ends
    res = CliRunner().invoke(app, ["report", "no_such_run_folder"])
    assert res.exit_code != 0  # the folder is refused; the callback ran first
    assert os.environ.pop("OMP_NUM_THREADS") == "1"


def test_the_recognisers_and_the_voice_take_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from voicelab.pipeline.services.tts_piper import load_voice
    from voicelab.speech.recognizers import make_recognizer

    monkeypatch.setenv(ENV, "1")
    assert make_recognizer("moonshine")._enc.get_session_options().intra_op_num_threads == 1
    voice = load_voice()
    assert voice.session.get_session_options().intra_op_num_threads == 1
    # the voice built with its own session still times words: the alignments output is there
    chunk = next(iter(voice.synthesize("Your table is booked.", include_alignments=True)))
    assert chunk.phoneme_alignments and chunk.audio_float_array.size > 0
