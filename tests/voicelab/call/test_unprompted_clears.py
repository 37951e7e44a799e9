"""A clear the caller did not prompt (voicelab.call.line.caller_spoke): while the caller speaks or within a
second of its end, a clear answers the caller; later, the agent cut itself off (the line's clears_unprompted)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from voicelab.call.line import PROMPT_S, LineStats, caller_spoke, line_summary
from voicelab.measure.calllog import PlayedUtterance

NS = 1_000_000_000


def said(*spans: tuple[float, float]) -> list[PlayedUtterance]:
    return [PlayedUtterance(i, int((a - 0.2) * NS), int((b + 0.3) * NS), int(a * NS), int(b * NS), None, "")
            for i, (a, b) in enumerate(spans)]


def test_a_clear_during_or_just_after_the_callers_speech_answers_it() -> None:
    calls = said((2.0, 3.5), (8.0, 9.0))
    assert caller_spoke(2.5, calls) and caller_spoke(3.5 + PROMPT_S, calls) and caller_spoke(8.0, calls)
    assert not caller_spoke(1.9, calls) and not caller_spoke(5.0, calls) and not caller_spoke(10.5, calls)
    assert not caller_spoke(1.0, [])


@given(st.integers(0, 30_000), st.integers(100, 5_000), st.integers(0, 40_000))
def test_only_time_inside_the_speech_and_its_prompt_window_counts(start_ms: int, length_ms: int, t_ms: int) -> None:
    inside = start_ms <= t_ms <= start_ms + length_ms + PROMPT_S * 1000
    assert caller_spoke(t_ms / 1000, said((start_ms / 1000, (start_ms + length_ms) / 1000))) == inside


def test_the_line_summary_adds_up_the_unprompted_clears() -> None:
    a, b = LineStats(), LineStats()
    a.clears_unprompted, b.clears_unprompted = 1, 2
    assert line_summary([a, b])["clears_unprompted"] == 3 and line_summary([])["clears_unprompted"] == 0
