"""Text engines: LLaDA-layout diffusion and autoregressive models, their samplers, and replay.

Pure torch; nothing here knows about voice or pipecat. Exports load lazily, so importing
`engines.snapshot` (plain Python) does not pay for importing torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Checkpoint": "engines.local.checkpoint", "load": "engines.local.checkpoint",
    "Engine": "engines.local.engine", "Generation": "engines.local.engine", "open_engine": "engines.local.engine",
    "CheckpointError": "engines.errors",
    "SAMPLERS": "engines.local.samplers", "SamplerConfig": "engines.local.samplers",
    "Snapshot": "engines.snapshot",
    "ReplayEngine": "engines.trace", "record": "engines.trace",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'engines' has no attribute {name!r}")
