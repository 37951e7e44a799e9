"""A fitted turn-end weighing: smart-turn's and the decision model's P(complete) fused by learned weights.

Plain Python (no numpy, no torch). The hand table of `voicelab.rules.turn_end.TurnThresholds` maps the two
P(complete) to a required silence by thresholds chosen on principles; this one is a discrete-time hazard
model fitted on labelled pauses and turn ends (`voicelab.turnbench.fusion_fit`):

    P(the turn is over | silence s so far, scores) = sigmoid(z),
    z = bias + w_audio * logit(audio_p) + w_text * logit(text_p) + w_no_text * [no words] + w_silence * ln(s)

where s is the silence since the caller's estimated end of speech, in seconds. The turn ends once P reaches the
operating point `theta`. With `w_silence` > 0 that is a closed form, the required silence

    s* = exp((logit(theta) - bias - w_audio * logit(audio_p) - ...) / w_silence),

clamped to [`floor_ms`, `cap_ms`], so the rule that runs the table (`DecideTurnEnd`) runs this too: the
pipeline's adapter and the bench's replay, unchanged. A missing audio verdict counts as logit 0 (no evidence
either way). The fit reads the silence up to the moment the VAD confirms that the caller went on, so the VAD's
start lag is inside the fitted waits (`adds_start_lag` is False).

The shipped weights live in `turn_fusion.json` beside this module, with what they were fitted on and the
command that fitted them.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

WEIGHTS_FILE = Path(__file__).with_name("turn_fusion.json")
P_CLIP = 0.01  # P(complete) is read within [P_CLIP, 1 - P_CLIP]: a model's 0.0 or 1.0 is not infinite evidence


def logit(p: float) -> float:
    q = min(1.0 - P_CLIP, max(P_CLIP, p))
    return math.log(q / (1.0 - q))


@dataclass(frozen=True)
class FusedWeighing:
    """The fitted weights and the operating point (`theta`), as a `voicelab.rules.turn_end.Weighing`."""

    bias: float
    w_audio: float
    w_text: float
    w_no_text: float
    w_silence: float  # per unit of ln(silence in s); must be > 0: P(end) grows with the silence
    theta: float = 0.5  # the P(end) at which the turn ends (the bench sweeps it)
    floor_ms: float = 200.0  # no evidence ends a turn inside a breath pause (as the table)
    cap_ms: float = 2500.0  # the longest wait (as the table)
    drop_unreliable_words: bool = False
    resumed_bound: bool = True
    fitted_on: dict[str, Any] = field(default_factory=dict, compare=False)  # provenance, from the weights file

    def __post_init__(self) -> None:
        if not self.w_silence > 0:
            raise ValueError(f"fused weighing: w_silence must be > 0, got {self.w_silence}")
        if not 0.0 < self.theta < 1.0:
            raise ValueError(f"fused weighing: theta must be in (0, 1), got {self.theta}")
        if not 0.0 <= self.floor_ms <= self.cap_ms:
            raise ValueError(f"fused weighing: need 0 <= floor_ms <= cap_ms, got {self.floor_ms}, {self.cap_ms}")

    @property
    def adds_start_lag(self) -> bool:
        return False

    def score(self, audio_p: float | None, text_p: float | None) -> float:
        """z without the silence term: the scores' evidence for an end."""
        z = self.bias + (self.w_audio * logit(audio_p) if audio_p is not None else 0.0)
        return z + (self.w_text * logit(text_p) if text_p is not None else self.w_no_text)

    def p_end(self, silence_ms: float, audio_p: float | None, text_p: float | None) -> float:
        z = self.score(audio_p, text_p) + self.w_silence * math.log(max(silence_ms, 1.0) / 1000.0)
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def evidence_silence_ms(self, audio_p: float | None, text_p: float | None) -> tuple[float, str]:
        target = math.log(self.theta / (1.0 - self.theta))
        ln_s = (target - self.score(audio_p, text_p)) / self.w_silence
        ms = 1000.0 * math.exp(min(ln_s, 50.0))
        need = min(self.cap_ms, max(self.floor_ms, ms))
        return need, f"fused: P(end) reaches {self.theta:g} after {need:.0f} ms"

    def at(self, theta: float) -> FusedWeighing:
        """The same weights at another operating point."""
        return replace(self, theta=theta)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class FusionWeightsError(ValueError):
    """The weights file is missing or malformed; the message names it."""


def load_weighing(path: Path = WEIGHTS_FILE) -> FusedWeighing:
    """The weighing in a weights file (default: the shipped one)."""
    try:
        doc = json.loads(path.read_text())
        return FusedWeighing(**doc)
    except FileNotFoundError:
        raise FusionWeightsError(f"{path}: no such weights file") from None
    except (json.JSONDecodeError, TypeError, ValueError) as e:
        raise FusionWeightsError(f"{path}: not a fused weighing ({e})") from None
