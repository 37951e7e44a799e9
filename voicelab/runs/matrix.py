"""The configuration matrices of `voicelab run --matrix`: the default side-by-side and the timing profiles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from voicelab.pipeline.config import PipelineConfig, PipelineConfigError

MATRIX_HELP = ("default (pinned and final diffusion, a revising sampler unpinned, AR + shaper), profiles (every "
               "engine timing profile x {pinned, final}) or profiles:NAME,NAME (those profiles only)")


def default_matrix(base: PipelineConfig | None = None, name: str = "default") -> list[PipelineConfig]:
    """The side-by-side of the issue: pinned diffusion, `final`, a revising sampler unpinned, AR + shaper;
    `name` "profiles[:NAME,NAME]" gives `profile_matrix` instead (MATRIX_HELP)."""
    b = base or PipelineConfig()
    kind, _, names = name.partition(":")
    if kind == "profiles":
        return profile_matrix(b, [n.strip() for n in names.split(",") if n.strip()] or None)
    if name != "default":
        raise PipelineConfigError(f"--matrix '{name}': unknown matrix (one of: {MATRIX_HELP})")
    return [
        replace(b, engine="diffusion", sampler="threshold", policy="pinned", label="diffusion-threshold-pinned"),
        replace(b, engine="diffusion", sampler="threshold", policy="final", label="diffusion-threshold-final"),
        replace(b, engine="diffusion", sampler="revising", policy="stable:2", label="diffusion-revising-stable2"),
        # the same with speculative synthesis: confident drafts synthesized early, held audio
        replace(b, engine="diffusion", sampler="revising", policy="stable:2", speculative_tts=0.9,
                label="diffusion-revising-stable2-spec0.9"),
        replace(b, engine="ar", sampler="autoregressive", policy="prefix", label="ar-autoregressive-prefix"),
    ]


def profile_matrix(base: PipelineConfig, names: Sequence[str] | None = None) -> list[PipelineConfig]:
    """Every timing profile (engines/simulated/profiles.py; or those named) under `pinned` and under `final`: what the
    gate is worth once the engine is slow (first_token_to_audio_ms separates the two).

    A diffusion profile's drafts are all visible and wrong in places until its block settles (a revising
    stream, engines/simulated/reveal.py), so `pinned` uses the block frontier there (`pinned:block`, docs/engines.md);
    plain `pinned` (prefix) would speak a first draft's wrong words.
    """
    from engines.simulated.profiles import PROFILES, get_profile

    chosen = [get_profile(n) for n in names] if names else list(PROFILES.values())
    return [replace(base, engine=f"profile:{p.name}", sampler=None, label=None,
                    policy=("pinned:block" if p.kind == "diffusion" else "pinned") if pinned else "final")
            for p in chosen for pinned in (True, False)]
