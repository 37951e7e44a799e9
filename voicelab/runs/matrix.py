"""Configuration matrices: each configuration runs into a run folder of its own, beside `matrix.json`.

Two kinds: the fixed matrices of `voicelab run --matrix` (`default_matrix`: the default side-by-side and the
timing profiles), and a sweep's (`SweepMatrix`: engines x samplers x policies x phrase-shaper settings x
fixtures, one `CellSpec` per cell, for `voicelab sweep`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from voicelab.gate import GateConfigError, GatePolicy, ShaperParams
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


# ---- a sweep's matrix --------------------------------------------------------------------------------------

class SweepError(ValueError):
    """A bad sweep matrix or an unusable sweep folder; one line naming the option or file."""


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


@dataclass(frozen=True)
class CellSpec:
    """One configuration on one set of fixtures."""

    engine: str
    sampler: str | None  # None: the engine's default sampler
    policy: str
    shaper: tuple[tuple[str, Any], ...] = ()  # ShaperParams overrides, sorted (key, value)
    fixtures: tuple[str, ...] = ("default",)
    seed: int = 0
    repeat: int = 1  # plays of the fixture list, pooled into the cell's one run folder

    @property
    def shaper_dict(self) -> dict[str, Any]:
        return dict(self.shaper)

    @property
    def shaper_label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.shaper) or "default"

    @property
    def config_label(self) -> str:
        """The configuration without the fixtures (cells of one configuration pool into one Pareto point)."""
        return " / ".join([self.engine, self.sampler or "default", self.policy, self.shaper_label])

    @property
    def cell_id(self) -> str:
        """Readable and unique: a slug of the settings plus a hash of the whole cell."""
        key = json.dumps(self.config(), sort_keys=True)
        digest = hashlib.sha256(key.encode()).hexdigest()[:8]
        fx = "+".join(self.fixtures) if len(self.fixtures) <= 2 else f"{len(self.fixtures)}fx"
        return _slug(f"{self.engine}-{self.sampler or 'default'}-{self.policy}-{fx}")[:60] + "-" + digest

    def config(self) -> dict[str, Any]:
        """The configuration given to the runner (`voicelab.runs.calls.run_config`'s first argument)."""
        out = {"engine": self.engine, "sampler": self.sampler, "policy": self.policy, "shaper": self.shaper_dict,
               "fixtures": list(self.fixtures), "seed": self.seed}
        if self.repeat > 1:  # only then: cells of sweeps run before repetitions keep their ids (resume)
            out["repeat"] = self.repeat
        return out


CellRunner = Callable[[CellSpec, Path], Path]

SHAPER_FIELDS = {f.name: f.type for f in fields(ShaperParams)}


def parse_shaper(text: str) -> tuple[tuple[str, Any], ...]:
    """'default' or 'key=value,key=value' (ShaperParams fields) -> sorted overrides; SweepError if bad."""
    text = text.strip()
    if text in ("", "default"):
        return ()
    out: dict[str, Any] = {}
    for part in text.split(","):
        if "=" not in part:
            raise SweepError(f"--shaper '{text}': expected key=value pairs, got '{part}'")
        k, v = (s.strip() for s in part.split("=", 1))
        if k not in SHAPER_FIELDS:
            raise SweepError(f"--shaper '{text}': unknown setting '{k}' (one of {', '.join(SHAPER_FIELDS)})")
        default = getattr(ShaperParams(), k)
        try:
            if isinstance(default, bool):
                if v.lower() not in ("true", "false", "1", "0"):
                    raise ValueError(v)
                out[k] = v.lower() in ("true", "1")
            elif isinstance(default, int):
                out[k] = int(v)
            else:
                out[k] = float(v)
        except ValueError:
            raise SweepError(f"--shaper '{text}': '{k}' needs a {type(default).__name__}, got '{v}'") from None
    try:
        ShaperParams(**out)
    except GateConfigError as exc:
        raise SweepError(f"--shaper '{text}': {exc}") from None
    return tuple(sorted(out.items()))


def compatible(engine: str, sampler: str | None) -> bool:
    """The shipped tiny models: 'ar' decodes only autoregressively, 'diffusion' never does."""
    if engine == "ar":
        return sampler in (None, "autoregressive")
    if engine == "diffusion":
        return sampler != "autoregressive"
    return True


@dataclass(frozen=True)
class SweepMatrix:
    engines: tuple[str, ...] = ("diffusion",)
    samplers: tuple[str | None, ...] = (None,)
    policies: tuple[str, ...] = ("prefix",)
    shapers: tuple[tuple[tuple[str, Any], ...], ...] = ((),)
    fixtures: tuple[str, ...] = ("default",)
    per_fixture: bool = True  # one cell per fixture; False: one cell runs all fixtures
    seed: int = 0
    repeat: int = 1

    def __post_init__(self) -> None:
        if self.repeat < 1:
            raise SweepError(f"--repeat {self.repeat}: needs at least 1")
        for name in ("engines", "samplers", "policies", "shapers", "fixtures"):
            if not getattr(self, name):
                raise SweepError(f"--{name[:-1]}: the grid needs at least one value")
        for p in self.policies:
            try:
                GatePolicy.parse(p)
            except GateConfigError as exc:
                raise SweepError(f"--policy '{p}': {exc}") from None

    def cells(self) -> list[CellSpec]:
        """Every compatible combination, in a stable order."""
        fixture_sets = [(f,) for f in self.fixtures] if self.per_fixture else [tuple(self.fixtures)]
        out = []
        for engine in self.engines:
            for sampler in self.samplers:
                if not compatible(engine, sampler):
                    continue
                for policy in self.policies:
                    for shaper in self.shapers:
                        for fx in fixture_sets:
                            out.append(CellSpec(engine, sampler, policy, shaper, fx, self.seed, self.repeat))
        if not out:
            raise SweepError("the grid has no compatible engine/sampler pair (engine 'ar' needs sampler "
                             "'autoregressive' or 'default')")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"engines": list(self.engines), "samplers": list(self.samplers), "policies": list(self.policies),
                "shapers": [dict(s) for s in self.shapers], "fixtures": list(self.fixtures),
                "per_fixture": self.per_fixture, "seed": self.seed, "repeat": self.repeat}
