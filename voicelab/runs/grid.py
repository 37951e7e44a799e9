"""The grid of a sweep: engines x samplers x policies x shaper settings x fixtures, one `CellSpec` per cell."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from voicelab.gate import GateConfigError, GatePolicy, ShaperParams


class SweepError(ValueError):
    """A bad grid or an unusable sweep folder; one line naming the option or file."""


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
        """The configuration given to the runner (`voicelab.runs.run.run_config`'s first argument)."""
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
class SweepGrid:
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


