"""Listening through the silence: a turn-end score read every 100 ms of silence, and the three-knob policy that
acts on it. Plain Python (no pipecat, no torch).

The policy is LiveKit eot-bench's (github.com/livekit/eot-bench): inside one silence the model is scored on a
grid (every `STEP_MS` of silence: 100, 200, ... ms), and the turn ends at the first grid instant where

- the silence has reached `timeout_ms` (end anyway), or
- the silence has reached `action_delay_ms` (the least silence before acting on the score) and some score of
  this silence so far has reached `threshold` (P(end) >= threshold: once reached, it stays reached until the
  caller speaks again, as eot-bench reads a span's first threshold crossing).

Knobs on the grid: an action delay or a timeout between two instants acts at the next one. The one rule serves
the live pipeline (`voicelab.pipeline.turns.listen_through_strategy`, which scores smart-turn at each instant)
and the bench (`voicelab.turnbench.eot`, which sweeps the policy over scores read once per instant, and
`voicelab.turnbench.replay.ListenReplay`, which replays the live kind on the VAD's silences).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

STEP_MS = 100  # the scoring grid: one score per 100 ms of silence


class ListenPolicyError(ValueError):
    """A policy knob out of range; the message names it."""


@dataclass(frozen=True)
class ListenPolicy:
    """The three knobs: end when P(end) >= `threshold` once the silence is `action_delay_ms` long, and at
    `timeout_ms` of silence whatever the score."""

    threshold: float = 0.5
    action_delay_ms: int = 200
    timeout_ms: int = 3000

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0 or not math.isfinite(self.threshold):
            raise ListenPolicyError(f"threshold {self.threshold}: expected a probability in [0, 1]")
        if self.action_delay_ms < 0 or self.timeout_ms <= 0:
            raise ListenPolicyError("action delay and timeout: expected >= 0 ms and > 0 ms")
        if self.timeout_ms < self.action_delay_ms:
            raise ListenPolicyError(f"timeout {self.timeout_ms} ms is shorter than the action delay "
                                    f"{self.action_delay_ms} ms")

    def to_dict(self) -> dict[str, float]:
        return {"threshold": self.threshold, "action_delay_ms": self.action_delay_ms, "timeout_ms": self.timeout_ms}


def instant_ms(k: int, step_ms: int = STEP_MS) -> int:
    """The silence at grid instant k (1-based): k * step."""
    return k * step_ms


class ListenThrough:
    """One turn's listening, silence by silence: `silence_started()` when the caller falls silent, `scored(k, p)`
    with the score at grid instant k of that silence (in order), and it answers whether the turn ends there."""

    def __init__(self, policy: ListenPolicy, step_ms: int = STEP_MS) -> None:
        self.policy = policy
        self.step_ms = step_ms
        self._reached = False
        self._k = 0

    def silence_started(self) -> None:
        """A new silence: nothing reached yet."""
        self._reached = False
        self._k = 0

    def scored(self, k: int, p: float | None) -> bool:
        """The score at instant k (None: no score there, e.g. a pass still running); True: the turn ends now."""
        if k <= self._k:
            raise ValueError(f"instant {k} after instant {self._k}: scores come in order")
        self._k = k
        if p is not None and p >= self.policy.threshold:
            self._reached = True
        silence = instant_ms(k, self.step_ms)
        return silence >= self.policy.timeout_ms or (self._reached and silence >= self.policy.action_delay_ms)

    def last_instant(self) -> int:
        """The instant at which the timeout ends the turn whatever the scores."""
        return -(-self.policy.timeout_ms // self.step_ms)


def end_instant(scores: Sequence[float | None], policy: ListenPolicy, step_ms: int = STEP_MS) -> int | None:
    """The grid instant (1-based) at which the policy ends a silence scored `scores` (instant 1 first); None
    where the scores run out first (the caller spoke again, or no more was scored)."""
    rule = ListenThrough(policy, step_ms)
    rule.silence_started()
    for k, p in enumerate(scores, start=1):
        if rule.scored(k, p):
            return k
    return None


# the phone calls' setting at 5 % false cut-offs in the eot mode (benchmarks/results/turn_bench_eot): fitted on
# that group only (docs/turn-bench.md)
DEFAULT_POLICY = ListenPolicy(threshold=0.85, action_delay_ms=700, timeout_ms=1500)


def parse_policy(arg: str) -> ListenPolicy:
    """A policy from `THRESHOLD:ACTION_DELAY_MS:TIMEOUT_MS` ('' for `DEFAULT_POLICY`); the delays on the grid."""
    if not arg:
        return DEFAULT_POLICY
    parts = arg.split(":")
    if len(parts) != 3:
        raise ListenPolicyError(f"'{arg}': expected THRESHOLD:ACTION_DELAY_MS:TIMEOUT_MS, e.g. 0.85:700:1500")
    try:
        threshold, delay, timeout = float(parts[0]), int(parts[1]), int(parts[2])
    except ValueError:
        raise ListenPolicyError(f"'{arg}': expected a probability and two whole milliseconds") from None
    if delay % STEP_MS or timeout % STEP_MS:
        raise ListenPolicyError(f"'{arg}': the action delay and the timeout are multiples of {STEP_MS} ms "
                                "(the scoring grid)")
    return ListenPolicy(threshold, delay, timeout)
