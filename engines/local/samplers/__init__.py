"""Samplers, one file each; every one is a generator of Steps that honours pin() and cancel."""

from engines.local.samplers import autoregressive, low_confidence, revising, threshold
from engines.local.samplers.base import Control, SamplerConfig, Special, Step
from engines.local.samplers.tool_check import checked

SAMPLERS = {
    "low_confidence": low_confidence.sample,
    "threshold": threshold.sample,
    "revising": revising.sample,
    "autoregressive": autoregressive.sample,
}

__all__ = ["SAMPLERS", "Control", "SamplerConfig", "Special", "Step", "checked"]
