"""What the recorded line alone says about turn-taking: which caller turn a stretch of the agent's audio
answers, how long the agent talked over the caller, whether it began to speak inside the caller's sentence, and
whether it fell silent on a backchannel.

Pure numpy over the bot channel (int16) with the onset rule of `voicelab.measure.onset`, so these figures
are re-derivable from calls/<id>.wav and calls/<id>.json alone, like the truth analyzer's.

Attribution (the same as `voicelab.measure.truth`): a stretch of the agent's speech answers the latest caller
turn, backchannels aside, whose speech ended at or before the stretch's onset; before any, it is the greeting
(turn -1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from voicelab.measure import onset

if TYPE_CHECKING:  # typing only: the caller utterances' ground truth, seconds on the call clock
    from voicelab.measure.truth import Utterance


def reply_turn(said: Sequence[Utterance], t_s: float) -> int:
    """The caller turn an agent onset at t_s answers (-1: the greeting)."""
    turn = -1
    for u in said:
        if u.expect != "no_interrupt" and u.speech_end_s <= t_s:
            turn = max(turn, u.turn)
    return turn


def reply_spans(bot: np.ndarray, sr: int, said: Sequence[Utterance]) -> dict[int, list[tuple[float, float]]]:
    """The agent's speech stretches (onset, last audible sample), grouped by the turn they answer."""
    out: dict[int, list[tuple[float, float]]] = {}
    for on, off in onset.segments(bot, sr):
        out.setdefault(reply_turn(said, on), []).append((on, off))
    return out


def cut_in_turns(bot: np.ndarray, sr: int, said: Sequence[Utterance]) -> set[int]:
    """The answered caller turns (no `expect`) inside whose true speech the agent began a stretch of speech: a
    reply to half a sentence (the line's false cut-in). Stretches the agent began before the caller spoke are
    talk-over, not cut-ins; barge-ins and backchannels are judged by their own figures."""
    ons = [on for on, _ in onset.segments(bot, sr)]
    return {u.turn for u in said if u.expect is None
            and any(u.speech_start_s < on < u.speech_end_s for on in ons)}


def talk_over_ms(bot: np.ndarray, sr: int, said: Sequence[Utterance]) -> dict[int, float]:
    """Per caller turn: milliseconds of its true speech during which the agent was audible (10 ms windows
    above the gate, 1 ms hops)."""
    active = onset.active_windows(bot, sr)
    hop_s = max(1, round(sr * onset.RULE.hop_ms / 1000)) / sr
    out = {}
    for u in said:
        a, b = int(np.ceil(u.speech_start_s / hop_s)), int(np.floor(u.speech_end_s / hop_s))
        out[u.turn] = round(float(active[max(0, a):max(0, b)].sum()) * hop_s * 1000.0, 1)
    return out


def silence_stops(bot: np.ndarray, sr: int, said: Sequence[Utterance], silence_s: float,
                  grace_s: float) -> dict[int, float]:
    """Backchannel turns on which the agent fell silent: {turn: time of its last audible sample}.

    The agent was audible when the backchannel began, its audio stopped before the backchannel's end plus
    `grace_s` (the agent's time to react), and stayed silent for at least `silence_s` (a pause between
    sentences is shorter). Audio alone cannot tell such a stop from a reply that happened to end there; the
    fixtures place backchannels early in long replies for that reason.
    """
    end_of_audio = bot.size / sr
    stretches = onset.segments(bot, sr, min_gap_s=silence_s)
    out = {}
    for u in said:
        if u.expect != "no_interrupt":
            continue
        for on, off in stretches:
            if on <= u.speech_start_s <= off + 1e-9 and off <= u.speech_end_s + grace_s \
                    and off + silence_s <= end_of_audio:
                out[u.turn] = off
                break
    return out
