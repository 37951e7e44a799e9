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


@dataclass(frozen=True)
class Published:
    """A system's row of eot-bench's English table: its four operating points as published."""

    name: str
    strategy: str  # the lab's name for the same kind of strategy, where it has one ("" where not)
    false_cutoffs_at_300: float | None
    false_cutoffs_at_600: float | None
    latency_ms_at_5: float
    latency_ms_at_10: float


# eot-bench's README, English table (mean latency after the true end of turn, compute excluded)
EOT_BENCH_DATASET = "eot-bench English (livekit/eot-bench-data validation; another dataset)"
EOT_BENCH_EN = (
    Published("LiveKit Turn Detector v1", "", 0.099, 0.045, 543, 295),
    Published("smart-turn v3.2", "smart", 0.352, 0.148, 1051, 739),
    Published("silence only (VAD baseline)", "timeout", 0.556, 0.217, 1600, 1000),
)


def reference_rows() -> list[dict[str, object]]:
    """eot-bench's published English figures as `--json` rows of the eot mode, labelled as another dataset."""
    return [{"group": "eot-bench-en (published)", "strategy": p.strategy or p.name, "system": p.name, "mode": "eot",
             "dataset": EOT_BENCH_DATASET, "reference": True, "latency_stat": "mean",
             "latency_ms_at": {"5%": p.latency_ms_at_5, "10%": p.latency_ms_at_10},
             "false_cutoffs_at_ms": {"300": p.false_cutoffs_at_300, "600": p.false_cutoffs_at_600},
             "setting": None, "default": False} for p in EOT_BENCH_EN]
