"""The turn-end rule after pauses inside the turn: a caller who went on after a pause is not cut at one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voicelab.rules.turn_end import TurnAction, TurnThresholds, decide_turn, required_silence_ms

TH = TurnThresholds()
P = st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0))


def test_a_wait_lasts_at_least_the_longest_resumed_pause() -> None:
    # the words call the fragment complete, the audio is unsure: a medium wait unless the caller has shown longer
    assert required_silence_ms(0.2, 0.99)[0] == TH.medium_ms
    need, why = required_silence_ms(0.2, 0.99, resumed_pause_ms=1400.0)
    assert need == 1400.0 and "went on" in why
    assert decide_turn(1000.0, 0.2, 0.99, resumed_pause_ms=1400.0).action is TurnAction.WAIT
    assert required_silence_ms(0.2, 0.99, resumed_pause_ms=300.0)[0] == TH.medium_ms  # shorter: no change


def test_no_wait_passes_the_cap() -> None:
    assert required_silence_ms(0.2, 0.1, resumed_pause_ms=9000.0)[0] == TH.cap_ms
    with pytest.raises(ValueError, match="resumed_pause_ms"):
        required_silence_ms(0.5, 0.5, resumed_pause_ms=-1.0)


@given(P, P, st.floats(min_value=0.0, max_value=5000.0), st.floats(min_value=0.0, max_value=5000.0))
def test_a_longer_resumed_pause_never_shortens_the_wait(audio, text, shorter: float, more: float) -> None:
    lo = required_silence_ms(audio, text, resumed_pause_ms=shorter)[0]
    hi = required_silence_ms(audio, text, resumed_pause_ms=shorter + more)[0]
    assert lo <= hi <= TH.cap_ms
    assert lo >= required_silence_ms(audio, text)[0]


@given(P, P, st.floats(min_value=0.0, max_value=5000.0), st.floats(min_value=0.0, max_value=3000.0),
       st.floats(min_value=0.0, max_value=3000.0))
def test_still_monotone_in_silence(audio, text, pause: float, silence: float, later: float) -> None:
    if decide_turn(silence, audio, text, resumed_pause_ms=pause).action is TurnAction.END:
        assert decide_turn(silence + later, audio, text, resumed_pause_ms=pause).action is TurnAction.END


def test_agreement_of_any_strength_waits_out_a_resumed_pause() -> None:
    """JFK: "and so my fellow americans asked not" (text 1.0, audio 0.55) after he went on from a 1.2 s pause, and
    "... ask not" (text 0.967, audio 0.952) after a 1.8 s one: both cut in when agreement was exempt."""
    assert required_silence_ms(0.55, 1.0)[0] == TH.floor_ms  # no pause resumed: agreement ends at the floor
    need, why = required_silence_ms(0.55, 1.0, resumed_pause_ms=1400.0)
    assert need == 1400.0 and "went on" in why
    assert required_silence_ms(0.952, 0.967, resumed_pause_ms=1759.0)[0] == 1759.0  # both sure: still the pause
    assert decide_turn(405.0, 0.952, 0.967, resumed_pause_ms=1759.0).action is TurnAction.WAIT
