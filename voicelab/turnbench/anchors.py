"""Public anchors for the turn bench's plots: other detectors' dead air at 5 % false cut-offs, as published.

Source: LiveKit's eot-bench (github.com/livekit/eot-bench), English, real human-to-agent calls, compute
excluded. These figures come from eot-bench's own calls, not from the cases this bench replays: they orient a
reader on a plot, they are not a comparison on the same data.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = "LiveKit eot-bench (github.com/livekit/eot-bench), English, real human-to-agent calls"
CUTOFF_RATE = 0.05  # every anchor is read at this false cut-off rate


@dataclass(frozen=True)
class Anchor:
    name: str
    dead_air_ms: float  # median dead air after the true end of speech at `CUTOFF_RATE` false cut-offs


EOT_BENCH_AT_5 = (
    Anchor("LiveKit turn detector v1", 543),
    Anchor("Baton", 577),
    Anchor("Soniox", 647),
    Anchor("smart-turn v3.2", 1051),
    Anchor("Deepgram Flux", 1151),
    Anchor("silence-only", 1600),
)
