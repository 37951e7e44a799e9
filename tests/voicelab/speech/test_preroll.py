"""The pre-roll ring buffer the streaming recognizers replay at the VAD's start."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from voicelab.speech.preroll import PreRoll

SR = 16000


def _chunk(i: int, ms: int = 20) -> bytes:
    return bytes([i % 256]) * (2 * SR * ms // 1000)


def test_tail_is_the_latest_audio_in_order() -> None:
    pre = PreRoll(SR, keep_s=0.1)
    for i in range(10):
        pre.push(_chunk(i))
    tail = pre.tail(0.04)
    assert [c[0] for c in tail] == [8, 9]


@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=60),
       st.floats(min_value=0.0, max_value=0.5))
def test_keeps_about_keep_s_and_tail_covers_what_it_can(chunk_ms: list[int], seconds: float) -> None:
    pre = PreRoll(SR, keep_s=0.3)
    for i, ms in enumerate(chunk_ms):
        pre.push(_chunk(i, ms))
    kept = pre.tail(10.0)
    kept_s = sum(len(c) for c in kept) / (2 * SR)
    total_s = sum(chunk_ms) / 1000
    assert kept_s <= 0.3 + max(chunk_ms) / 1000 + 1e-9  # never much more than asked to keep
    assert kept_s >= min(total_s, 0.3) - 1e-9  # and never less
    got = sum(len(c) for c in pre.tail(seconds)) / (2 * SR)
    assert got >= min(seconds, kept_s) - 1e-9


def test_clear_forgets_what_came_before() -> None:
    pre = PreRoll(SR, keep_s=0.1)
    for i in range(5):
        pre.push(_chunk(i))
    pre.clear()
    assert pre.tail(0.1) == []
    pre.push(_chunk(7))
    assert [c[0] for c in pre.tail(0.1)] == [7]  # only what came after, however much is asked for
