"""The planted faults' rules (examples/fault_rules.py, the reference agents' `--fault`): one word wrong, the
silences of `garbled` wherever the TTS cuts its chunks, every fault a plan, and the same names as the lab's
detector table."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voicelab.analysis.fault_flags import FAULTS

ROOT = Path(__file__).resolve().parents[3]


def _rules() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fault_rules", ROOT / "examples" / "fault_rules.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fault_rules", module)
    spec.loader.exec_module(module)
    return module


R = _rules()


def test_the_agents_faults_are_the_detector_tables_faults() -> None:
    assert tuple(R.FAULTS) == FAULTS
    assert R.plan("none") == R.FaultPlan()
    assert all(R.plan(f).fault == f for f in R.FAULTS)
    with pytest.raises(ValueError, match="one of"):
        R.plan("sleepy")


def test_each_fault_changes_what_it_names() -> None:
    assert R.plan("slow").reply_delay_s == 1.5
    assert not R.plan("deaf").interruptions
    assert R.plan("cuts-in").turn_end_pause_s + 0.2 == pytest.approx(0.3)  # pipecat's VAD stop adds 0.2 s
    assert R.plan("garbled").gap_s == 0.2
    assert R.plan("mute-turn").mute_reply == 2 and R.plan("drops").drop_reply == 1


def test_wrong_word_swaps_a_day_then_a_number_then_the_last_word() -> None:
    assert R.wrong_word("when do you close on friday") == "when do you close on Saturday"
    assert R.wrong_word("book me at 11 am on Sunday.") == "book me at 11 am on Monday."
    assert R.wrong_word("a table for four") == "a table for five"
    assert R.wrong_word("a table for 12") == "a table for 13"
    assert R.wrong_word("where are you located?") == "where are you Sunday?"
    assert R.wrong_word("") == ""
    assert R.next_day("SUNDAY") == "Monday"


words = st.lists(st.sampled_from(["hi", "what", "are", "your", "hours", "tuesday", "3", "nine", "week."]),
                 min_size=1, max_size=8)


@given(words)
def test_wrong_word_changes_exactly_one_word(ws: list[str]) -> None:
    text = " ".join(ws)
    wrong = R.wrong_word(text).split(" ")
    assert len(wrong) == len(ws)
    assert sum(a != b for a, b in zip(ws, wrong, strict=True)) == 1


@given(st.lists(st.integers(1, 3000), min_size=1, max_size=40), st.sampled_from([8000, 16000]))
def test_gaps_fall_at_the_same_samples_however_the_reply_is_chunked(chunks: list[int], sr: int) -> None:
    total = sum(chunks)
    whole = {s for a, b in R.gap_spans(0, total, sr, 1.0) for s in range(a, b)}
    pieces, at = set(), 0
    for n in chunks:
        pieces |= {at + s for a, b in R.gap_spans(at, n, sr, 1.0) for s in range(a, b)}
        at += n
    assert pieces == whole
    first, gap, every = round(0.3 * sr), round(0.2 * sr), sr
    assert whole == {s for s in range(total) if s >= first and (s - first) % every < gap}
